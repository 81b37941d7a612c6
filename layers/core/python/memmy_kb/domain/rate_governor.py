"""How many MemOS searches one recall may send to a backend, so that recall stays under MemOS's rate.

MemOS asks for at most about 40 requests a second per account (a backend's ``max_qps`` in the MemOS
secret, 40 when it names none) and answers "rate limited" (40309) past it. Attributed recall sends up to
``max_searches`` searches per recall (one per KB); near the limit the governor gives each backend fewer,
and recall groups more KBs per search (``recall_attributed.cap_plan``), down to one combined search per
backend: a slightly less attributed answer instead of refused searches and no answer.

Per backend and per Lambda environment, in memory (no table write per recall; docs/memos.md, "Rate"):

- **share of the rate**: recall may use ``HEADROOM`` of ``max_qps`` (``share`` of it: see below);
- **the recall rate** of this environment to the backend, from the recalls of the last ``WINDOW``
  seconds: each recall's allowance is the searches that keep ``allowance x recall rate`` within that
  budget; the fraction left over accumulates, so 1.6 searches per recall is 1, 2, 2, 1, 2, ...;
- **the search count** of the last ``WINDOW`` seconds: past the budget, one search per recall;
- **rate-limit answers**: other environments share the account and this one cannot see their searches,
  so a refusal halves ``share`` (at least ``MIN_SHARE``) and every ``RECOVERY_SECONDS`` without one gives
  back ``RECOVERY_STEP``: the environments settle where MemOS stops refusing, and recover as it does.

Never fewer than one search per backend a recall needs: the governor trades attribution, never answers.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

DEFAULT_MAX_QPS = 40.0
HEADROOM = 0.8
WINDOW = 1.0
MIN_SHARE = 1 / 16
RECOVERY_SECONDS = 1.0
RECOVERY_STEP = 0.125


@dataclass
class _Backend:
    searches: deque[float] = field(default_factory=deque)
    recalls: deque[float] = field(default_factory=deque)
    share: float = 1.0
    last_change: float = 0.0
    credit: float = 0.0

    def trim(self, now: float) -> None:
        for times in (self.searches, self.recalls):
            while times and times[0] <= now - WINDOW:
                times.popleft()

    def recover(self, now: float) -> None:
        if self.share < 1.0 and now - self.last_change >= RECOVERY_SECONDS:
            steps = math.floor((now - self.last_change) / RECOVERY_SECONDS)
            self.share = min(1.0, self.share + steps * RECOVERY_STEP)
            self.last_change = now


class RateGovernor:
    """The searches each recall may send to each MemOS backend (thread-safe; one per environment)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._backends: dict[str, _Backend] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"RateGovernor(backends={sorted(self._backends)})"

    def allowances(self, wanted: Mapping[str, int], max_qps: Mapping[str, float | None]) -> dict[str, int]:
        """Per backend, the searches this recall may send: at most ``wanted``, at least one."""
        now = self._clock()
        allowed = {}
        with self._lock:
            for backend, count in wanted.items():
                state = self._backends.setdefault(backend, _Backend(last_change=now))
                state.trim(now)
                state.recover(now)
                allowed[backend] = self._allowance(state, count, max_qps.get(backend), now)
                state.recalls.append(now)
        return allowed

    @staticmethod
    def _allowance(state: _Backend, wanted: int, qps: float | None, now: float) -> int:
        budget = HEADROOM * state.share * (qps if qps else DEFAULT_MAX_QPS) * WINDOW
        if wanted <= 1 or len(state.searches) >= budget:
            return 1
        if state.recalls:
            # This environment's recall rate to the backend, over the span the window has seen.
            span = max(now - state.recalls[0], WINDOW / 20)
            rate = len(state.recalls) / span * WINDOW
            state.credit = min(state.credit + budget / rate, float(wanted))
        else:
            state.credit = float(wanted)
        allowance = max(1, min(wanted, math.floor(state.credit)))
        state.credit -= allowance
        return allowance

    def sent(self, backend: str) -> None:
        """A search (or its retry) went to ``backend``."""
        now = self._clock()
        with self._lock:
            self._backends.setdefault(backend, _Backend(last_change=now)).searches.append(now)

    def refused(self, backend: str) -> None:
        """``backend`` answered "rate limited": this environment takes half the share it had."""
        now = self._clock()
        with self._lock:
            state = self._backends.setdefault(backend, _Backend(last_change=now))
            state.share = max(MIN_SHARE, state.share / 2)
            state.last_change = now

    def share(self, backend: str) -> float:
        """The fraction of the backend's budget this environment uses now (1.0: no refusal lately)."""
        with self._lock:
            state = self._backends.get(backend)
            return 1.0 if state is None else state.share
