"""A time budget for code that must run in linear time: inputs up to the largest against one of 1 KB.

Performance is measured by ``make bench``, not by timed tests, except for the guarantee that no input
costs more than linear time; these timed tests must never flake on a shared, noisy 2-core machine, yet
fail on quadratic code, and fail quickly:

- ``make(size)`` builds the input of ``size`` (bytes or characters); it is timed at ``SMALL`` (1 KB),
  then at sizes eight times larger each, then at ``large``: a ladder, so that quadratic code fails on a
  rung of some 64 KB within seconds instead of running for hours on 100 MB;
- each size is timed as the minimum of several runs (noise only ever adds time), with the garbage
  collector held off while they run;
- a size may take ``FACTOR`` times its share, ``FACTOR × (size / 1 KB) × the 1 KB time``, plus
  ``SLACK_SECONDS``. Linear code stays near its share while the input stays in the processor's caches
  (measured: the request guards took 0.7 to 1.1 times it on 64 KB bodies, at most 3.5 ms against
  budgets of 22 to 46 ms); past them a byte costs up to 3.6 times as much as in 1 KB (the desktop's
  block cut 24 ns a byte up to 64 KB, 70 from 1 MB; the ingest's JSON check of 100 MB streams 0.6 to
  3.6 times its share), so sizes past 64 KB get ``FACTOR_PAST_CACHES``. Quadratic code takes the size
  ratio times its share, 64 times on 64 KB (the old guards: 12 s against a budget of 1.6 s);
- each timed run is cut off at its budget by an interval timer (on the main thread, where pytest and its
  xdist workers run tests): CPython's loop and its regex engine both stop for a signal. The timer's
  exception is a ``BaseException``, which no ``except Exception`` of the code under test swallows.

``assert_linear_time(run, make, large=...)`` raises ``AssertionError`` naming the size and both times
when no run of a size kept to its budget; ``run``'s result is ignored (refusing is as good as accepting).
Its first run, at 1 KB, is not cut off: where exponential code could take hours on that already (a
backtracking regular expression), ``assert_within(run, value, seconds)`` first times one small input
under a generous cut-off, so that such code fails in seconds instead of hanging the run.
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

SMALL = 1024
STEP = 8
FACTOR = 8
FACTOR_PAST_CACHES = 16
SLACK_SECONDS = 0.02
SMALL_RUNS = 15
LARGE_RUNS = 3


class _OverBudget(BaseException):
    pass


def assert_linear_time(run: Callable[[T], object], make: Callable[[int], T], *, large: int) -> None:
    """``run(make(size))`` takes at most its budget (module docstring) at each size up to ``large``."""
    with _collector_held():
        small_input = make(SMALL)
        run(small_input)  # warm: imports, caches, specialised bytecode
        small_seconds = min(_timed(run, small_input) for _ in range(SMALL_RUNS))
        del small_input
        for size in _ladder(large):
            ratio = size / SMALL
            factor = FACTOR if size <= 64 * SMALL else FACTOR_PAST_CACHES
            budget = factor * ratio * small_seconds + SLACK_SECONDS
            best = _best_within(run, make(size), budget)
            if best > budget:
                raise AssertionError(
                    f"{size:,} took {best * 1000:.1f} ms (best of {LARGE_RUNS}; inf: cut off at the budget), over "
                    f"its budget of {budget * 1000:.1f} ms = {factor:g} × size ratio {ratio:g} × "
                    f"{small_seconds * 1e6:.1f} µs for {SMALL:,} + {SLACK_SECONDS * 1000:.0f} ms: not linear"
                )


def assert_within(run: Callable[[T], object], value: T, seconds: float) -> None:
    """``run(value)`` ends within ``seconds`` (cut off there by the interval timer, on the main thread)."""
    try:
        with _deadline(seconds):
            taken = _timed(run, value)
    except _OverBudget:
        raise AssertionError(f"cut off after {seconds:g} s: far from linear") from None
    assert taken <= seconds, f"took {taken:.1f} s, over {seconds:g} s"


def _ladder(large: int) -> list[int]:
    """``SMALL`` times 8, 64, ... while a rung is at most an eighth of ``large``, then ``large``: the rungs
    below cost a seventh of its time at most."""
    sizes = []
    size = SMALL * STEP
    while size * STEP <= large:
        sizes.append(size)
        size *= STEP
    return [*sizes, large]


def _best_within(run: Callable[[T], object], value: T, budget: float) -> float:
    best = float("inf")
    for _ in range(LARGE_RUNS):
        try:
            with _deadline(budget):
                best = min(best, _timed(run, value))
        except _OverBudget:
            pass
        if best <= budget:
            break
    return best


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
