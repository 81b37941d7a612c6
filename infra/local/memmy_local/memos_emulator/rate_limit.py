"""MemOS's rate limit, on the emulator's search path: past ``qps`` searches in any one second, a project's
next search is answered with MemOS's "rate limited" (code 40309, inside HTTP 200 like MemOS's other
business errors) until the oldest of them is a second old. Only answered searches count; a refused one
does not. ``memmy-local up --memos-qps N`` turns it on (docs/memos.md, "Rate"), so that recall's rate
governor is tested against a MemOS that refuses (tests/integration/recall/test_recall_governor.py).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

RATE_LIMITED = 40309
WINDOW_SECONDS = 1.0


class SearchRateLimit:
    """A sliding one-second window of answered searches per project."""

    def __init__(self, qps: float, clock: Callable[[], float] = time.monotonic) -> None:
        if not qps > 0:
            raise ValueError("the search rate limit must be a positive number of searches a second")
        self.qps = qps
        self._clock = clock
        self._answered: dict[str, deque[float]] = {}
        self._refused: dict[str, int] = {}
        self._lock = threading.Lock()

    def admit(self, project: str) -> bool:
        """Whether ``project`` may have one more search now (counted when it may)."""
        now = self._clock()
        with self._lock:
            window = self._answered.setdefault(project, deque())
            while window and window[0] <= now - WINDOW_SECONDS:
                window.popleft()
            if len(window) >= self.qps:
                self._refused[project] = self._refused.get(project, 0) + 1
                return False
            window.append(now)
            return True

    def refused(self) -> dict[str, int]:
        """Searches refused so far, by project."""
        with self._lock:
            return dict(self._refused)
