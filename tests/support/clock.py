"""A clock the test moves: pass ``clock.now`` where code takes a ``clock`` and ``advance`` instead of sleeping;
or, where a server runs on real time, ``Clock``: real time plus what the test skips ahead."""

from __future__ import annotations

import time


class FakeClock:
    """Seconds since an arbitrary epoch (``start``), moved only by ``advance`` and ``sleep``."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.current = start
        self.sleeps: list[float] = []

    def now(self) -> float:
        """The current time, as ``time.time`` or ``time.monotonic`` would give it."""
        return self.current

    def advance(self, seconds: float) -> None:
        """Move the clock ``seconds`` on (never back)."""
        if seconds < 0:
            raise ValueError(f"a clock does not go back ({seconds} s)")
        self.current += seconds

    def sleep(self, seconds: float) -> None:
        """A ``time.sleep`` that records the request and returns at once, the clock moved on."""
        self.sleeps.append(seconds)
        self.advance(seconds)


class Clock:
    """Real time plus what a test skips ahead (codes and device codes expire by it)."""

    def __init__(self) -> None:
        self.skipped = 0.0

    def __call__(self) -> float:
        return time.time() + self.skipped
