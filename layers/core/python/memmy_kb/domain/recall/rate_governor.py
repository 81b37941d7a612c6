"""How many MemOS searches one recall may send to a backend, so that recall stays under MemOS's rate.

MemOS asks for at most about 40 requests a second per account (a backend's ``max_qps`` in the MemOS
secret, 40 when it names none) and answers "rate limited" (40309) past it. Attributed recall sends up to
``max_searches`` searches per recall (one per KB); near the limit the governor gives each backend fewer,
and recall groups more KBs per search (``governed.cap_plan``), down to one combined search per
backend: a slightly less attributed answer instead of refused searches and no answer.

Per backend and per Lambda environment, in memory (no table write per recall; docs/memos.md, "Rate"),
a token bucket: it holds at most ``BURST`` x ``max_qps`` searches and fills at ``SUSTAINED`` x
``max_qps`` a second. A recall may send as many searches to a backend as the bucket holds, at most what
its plan wants and at least one, and takes their tokens when it is allowed them (``allowances``), so
recalls served at once by one process (the local stack's threads) share the bucket; a retry takes one
more (``retried``). The floor of one search and the retries may put the bucket into debt, which later
recalls repay; but for them, no second sees more than ``BURST + SUSTAINED`` (85%) of ``max_qps`` from this
environment. A few recalls in a row take what the bucket holds and degrade nothing; a sustained rate
above the bucket's fill gets its fill's share, 1.2 searches per recall at ten recalls a second against a
``max_qps`` of 20 (the fraction carried over as the bucket's level).

Other environments share the account and this one cannot see their searches, so a "rate limited" answer
halves ``share`` (the bucket's size and fill; at least ``MIN_SHARE``) and every ``RECOVERY_SECONDS``
without one gives back ``RECOVERY_STEP``: the environments settle where MemOS stops refusing, and recover
as it does.

Across environments (``fleet``, ``memmy_kb.domain.recall.fleet_budget``): the searches this bucket allows are
then taken from the backend's shared bucket, which holds ``max_qps`` for the whole fleet and shares it
fairly among users. What it grants is what the recall sends: one search per backend at least only while
the fleet's budget has it; a backend granted none is not searched (the recall is partial, or a 503 with
``Retry-After`` when no backend of it was granted any), and a retry needs a token of its own.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memmy_kb.domain.recall.fleet_budget import Grant

if TYPE_CHECKING:
    from memmy_kb.domain.recall.fleet_budget import FleetBudget

DEFAULT_MAX_QPS = 40.0
BURST = 0.25
SUSTAINED = 0.6
MIN_SHARE = 1 / 16
RECOVERY_SECONDS = 1.0
RECOVERY_STEP = 0.125


@dataclass
class _Backend:
    tokens: float
    filled_at: float
    qps: float = DEFAULT_MAX_QPS
    share: float = 1.0
    last_change: float = 0.0

    def fill(self, now: float) -> None:
        if self.share < 1.0 and now - self.last_change >= RECOVERY_SECONDS:
            steps = math.floor((now - self.last_change) / RECOVERY_SECONDS)
            self.share = min(1.0, self.share + steps * RECOVERY_STEP)
            self.last_change = now
        capacity = BURST * self.qps * self.share
        self.tokens = min(capacity, self.tokens + (now - self.filled_at) * SUSTAINED * self.qps * self.share)
        self.filled_at = now


class RateGovernor:
    """The searches each recall may send to each MemOS backend (thread-safe; one per environment)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, fleet: FleetBudget | None = None) -> None:
        self._clock = clock
        self._fleet = fleet
        self._backends: dict[str, _Backend] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"RateGovernor(backends={sorted(self._backends)})"

    def _state(self, backend: str, now: float, qps: float | None = None) -> _Backend:
        # Only a positive, finite rate counts (the secret's parser allows no other): NaN or infinity would
        # break the arithmetic, zero or less degrade every recall.
        rate = qps if qps is not None and 0 < qps < math.inf else None
        state = self._backends.get(backend)
        if state is None:
            rate = rate or DEFAULT_MAX_QPS
            state = self._backends[backend] = _Backend(BURST * rate, now, rate, last_change=now)
        elif rate:
            state.qps = rate
        return state

    def allowances(self, wanted: Mapping[str, int], max_qps: Mapping[str, float | None]) -> dict[str, int]:
        """Per backend, the searches this recall may send (at most ``wanted``, at least one without a fleet
        budget), their tokens taken: the recall is expected to send them."""
        return {backend: grant.count for backend, grant in self.grants(wanted, max_qps).items()}

    def grants(
        self, wanted: Mapping[str, int], max_qps: Mapping[str, float | None], user: str = ""
    ) -> dict[str, Grant]:
        """``allowances`` for ``user``, each with the seconds until a search is due when the fleet's budget
        granted fewer than this environment's bucket allowed (0 without a fleet budget)."""
        now = self._clock()
        granted = {}
        with self._lock:
            for backend, count in wanted.items():
                state = self._state(backend, now, max_qps.get(backend))
                state.fill(now)
                allowed = max(1, min(count, math.floor(state.tokens)))
                grant = Grant(allowed) if self._fleet is None else self._fleet.take(backend, allowed, user, state.qps)
                state.tokens -= grant.count
                granted[backend] = grant
        return granted

    def retried(self, backend: str, user: str = "") -> bool:
        """A search may go to ``backend`` again (beyond its allowance): it takes a token; with a fleet
        budget, only when the budget grants one (False: no retry)."""
        now = self._clock()
        with self._lock:
            state = self._state(backend, now)
            state.fill(now)
            if self._fleet is not None and self._fleet.take(backend, 1, user, state.qps).count == 0:
                return False
            state.tokens -= 1
            return True

    def refused(self, backend: str) -> None:
        """``backend`` answered "rate limited": this environment takes half the share it had (and the
        fleet's budget halves, once a second at most)."""
        now = self._clock()
        with self._lock:
            state = self._state(backend, now)
            state.share = max(MIN_SHARE, state.share / 2)
            state.last_change = now
            state.tokens = min(state.tokens, BURST * state.qps * state.share)
            if self._fleet is not None:
                self._fleet.refused(backend, state.qps)

    def share(self, backend: str) -> float:
        """The fraction of the backend's budget this environment uses now (1.0: no refusal lately)."""
        with self._lock:
            state = self._backends.get(backend)
            return 1.0 if state is None else state.share
