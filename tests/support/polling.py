"""Waiting for something another thread or process will do: one polling loop for every test.

``wait_until(probe, timeout=..., message=...)`` calls ``probe`` until it returns a truthy value and returns
that value. When ``timeout`` seconds pass first, it raises an ``AssertionError`` naming what was awaited
and the last value the probe returned, so a failure reads like the assertion it stands for. The last
sleep is cut to end at the deadline, and the probe is asked once more there, so a wait never overruns.
``message`` may be a function, called only on failure, to show the state at the deadline (a log, a list).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

DEFAULT_INTERVAL_SECONDS = 0.05


def wait_until(
    probe: Callable[[], T | None],
    *,
    timeout: float,
    interval: float = DEFAULT_INTERVAL_SECONDS,
    message: str | Callable[[], str] = "the condition",
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """``probe()``'s first truthy value, polled every ``interval`` s; ``AssertionError`` after ``timeout`` s.

    Exceptions the probe raises are not caught: a probe that asserts fails the wait at once. ``clock``
    and ``sleep`` are for testing this function.
    """
    if timeout < 0 or interval <= 0:
        raise ValueError(f"timeout must be >= 0 and interval > 0, not {timeout} and {interval}")
    deadline = clock() + timeout
    while True:
        value = probe()
        if value:
            return value
        remaining = deadline - clock()
        if remaining <= 0:
            what = message if isinstance(message, str) else message()
            raise AssertionError(f"waited {timeout:g} s for {what}; last seen: {value!r}")
        sleep(min(interval, remaining))
