"""The per-user recall limit (docs/limits.md, "Recall per user"): how often one account may recall, so
that one looping script cannot spend the MemOS rate everyone's agent turns share.

Two layers, both per user. Each Lambda environment keeps a token bucket (``burst`` at once, refilled at
``per_second``): what it refuses costs nothing. What it admits is then counted in a fixed window of
``window_seconds`` in DynamoDB (``RateCounters.count_in_window``, the sharing limits' counter item: one
conditional UpdateItem, no read), which holds the user to ``burst + per_second * window_seconds`` recalls
a window however many environments they reach. A refused recall is not counted, so a user who stops is
served again at the next window. Past either: 429 ``recall_rate_limited`` with ``Retry-After``. Only the
standard library and the errors: recall imports it on its first request.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memmy_kb.errors import TooManyRequests

if TYPE_CHECKING:
    from memmy_kb.domain.ports.activity import RateCounters
    from memmy_kb.settings import Settings

# Users whose buckets one environment remembers; the least recently seen go first (a full bucket is the
# same as none, and one that went has refilled by the time its user is seen again, at worst a burst early).
MAX_USERS = 10_000


@dataclass(frozen=True)
class RecallLimits:
    """The settings' ``recall_burst``, ``recall_rate_per_second`` and ``recall_limit_window_seconds``."""

    burst: int = 10
    per_second: float = 2.0
    window_seconds: int = 10

    @classmethod
    def from_settings(cls, settings: Settings) -> RecallLimits:
        return cls(settings.recall_burst, settings.recall_rate_per_second, settings.recall_limit_window_seconds)

    @property
    def per_window(self) -> int:
        """Recalls one user may make in any ``window_seconds``, across every environment."""
        return self.burst + math.floor(self.per_second * self.window_seconds)


class RecallLimiter:
    """This environment's per-user buckets, and the shared window they are counted in after."""

    def __init__(
        self, limits: RecallLimits, *, clock: Callable[[], float] = time.monotonic, max_users: int = MAX_USERS
    ) -> None:
        self.limits = limits
        self._clock = clock
        self._max_users = max_users
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # user -> (tokens, at)
        self._lock = threading.Lock()

    def admit(self, user_id: str, counters: RateCounters, now: float) -> None:
        """Let one recall of ``user_id`` through at ``now`` (epoch seconds), or raise TooManyRequests
        (``recall_rate_limited``) with the seconds to wait."""
        wait = self._take(user_id)
        if wait is None:
            wait = self._count(user_id, counters, now)
        if wait is not None:
            raise recall_refused(self.limits, wait)

    def _count(self, user_id: str, counters: RateCounters, now: float) -> float | None:
        """Count the recall in ``user_id``'s window of the table: None when it fits, else the seconds until
        the window ends."""
        seconds = self.limits.window_seconds
        window = int(now // seconds)
        # Kept two windows (count_in_window drops older ones itself); the TTL removes an idle user's item.
        expires_at = (window + 2) * seconds
        if counters.count_in_window(f"recall#{user_id}", window, cap=self.limits.per_window, expires_at=expires_at):
            return None
        return (window + 1) * seconds - now

    def _take(self, user_id: str) -> float | None:
        """A token from ``user_id``'s bucket: None when there was one, else the seconds until there is."""
        limits = self.limits
        with self._lock:
            now = self._clock()
            tokens, at = self._buckets.pop(user_id, (float(limits.burst), now))
            tokens = min(float(limits.burst), tokens + (now - at) * limits.per_second)
            if tokens >= 1:
                self._buckets[user_id] = (tokens - 1, now)
                wait = None
            else:
                self._buckets[user_id] = (tokens, now)
                wait = (1 - tokens) / limits.per_second
            while len(self._buckets) > self._max_users:
                self._buckets.popitem(last=False)
            return wait


def recall_refused(limits: RecallLimits, wait: float) -> TooManyRequests:
    seconds = max(1, math.ceil(wait))
    return TooManyRequests(
        f"Too many recalls for this account just now (at most {limits.burst} at once, then"
        f" {_rate(limits.per_second)}). Try again in {seconds} s.",
        retry_after=seconds,
        code="recall_rate_limited",
    )


def _rate(per_second: float) -> str:
    if per_second >= 1:
        return f"{per_second:g} a second"
    return f"one every {1 / per_second:.3g} seconds"
