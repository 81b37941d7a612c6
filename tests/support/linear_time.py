"""A time budget for code that must run in linear time: its largest input against a small one.

The one kind of timed test the project has (performance is otherwise measured by ``make bench``), so it
must never flake on a shared, noisy 2-core machine, yet fail on quadratic code:

- each input is timed as the minimum of several runs (noise only ever adds time), with the garbage
  collector held off while they run;
- the large input may take ``FACTOR`` times its share, ``FACTOR × size ratio × the small input's time``,
  plus ``SLACK_SECONDS``. Linear code stays near its share (measured: the request guards took 0.7 to
  1.1 times it on 64 KB bodies, at most 3.5 ms against budgets of 22 to 46 ms); quadratic code takes
  the size ratio times it (64 for 64 KB against 1 KB), the old guards' 12 s against 1.6 s;
- each run of the large input is cut off at the budget by an interval timer (on the main thread, where
  pytest and its xdist workers run tests), so quadratic code fails within seconds instead of running for
  minutes: CPython's loop and its regex engine both stop for a signal. The timer's exception is a
  ``BaseException``, which no ``except Exception`` of the code under test swallows.

``assert_linear_time(run, small, large, size_ratio=...)`` raises ``AssertionError`` with both times when
no run of ``large`` kept to the budget; ``run``'s result is ignored (refusing is as good as accepting).
"""

from __future__ import annotations

import gc
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")

FACTOR = 8
SLACK_SECONDS = 0.02
SMALL_RUNS = 15
LARGE_RUNS = 3


class _OverBudget(BaseException):
    pass


def assert_linear_time(
    run: Callable[[T], object],
    small: T,
    large: T,
    *,
    size_ratio: float,
    factor: float = FACTOR,
    slack: float = SLACK_SECONDS,
) -> None:
    """``run(large)`` takes at most ``factor × size_ratio × run(small) + slack`` seconds (minimum of runs)."""
    with _collector_held():
        run(small)  # warm: imports, caches, specialised bytecode
        small_seconds = min(_timed(run, small) for _ in range(SMALL_RUNS))
        budget = factor * size_ratio * small_seconds + slack
        times = []
        for _ in range(LARGE_RUNS):
            try:
                with _deadline(budget):
                    times.append(_timed(run, large))
            except _OverBudget:
                times.append(float("inf"))
            if times[-1] <= budget:
                return
    raise AssertionError(
        f"the large input took {min(times) * 1000:.1f} ms (best of {LARGE_RUNS}; inf: cut off at the budget), "
        f"over its budget of {budget * 1000:.1f} ms = {factor:g} × size ratio {size_ratio:g} × "
        f"{small_seconds * 1e6:.1f} µs for the small input + {slack * 1000:.0f} ms: not linear"
    )


def _timed(run: Callable[[T], object], value: T) -> float:
    started = time.perf_counter()
    run(value)
    return time.perf_counter() - started


@contextmanager
def _collector_held() -> Iterator[None]:
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield  # no timer off the main thread (or on Windows): the run is timed, not cut off
        return

    def expire(_signal: int, _frame: object) -> None:
        raise _OverBudget

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
