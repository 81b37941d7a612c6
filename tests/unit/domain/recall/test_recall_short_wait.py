"""Recall's one short wait for the fleet's MemOS budget (``governed.sendable``): a backend whose
bucket has a token due within ``SHORT_WAIT`` is asked again after that wait, instead of being skipped
(the answer partial) or the recall refused; a longer wait is not waited for. On a clock the test moves."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memmy_kb.domain.engine import EngineBackend
from memmy_kb.domain.recall.fleet_budget import SHORT_WAIT, FleetBudget, MemoryFleetItems
from memmy_kb.domain.recall.governed import Search, sendable
from memmy_kb.domain.recall.rate_governor import RateGovernor
from memmy_kb.errors import RecallUnavailable, TooManyRequests
from memmy_kb.records import GrantRecord
from tests.support.clock import FakeClock


class Pool:
    def __init__(self, **rates: float) -> None:
        self._backends = [EngineBackend(backend, max_kbs=100, max_qps=qps) for backend, qps in rates.items()]

    def backends(self) -> list[EngineBackend]:
        return self._backends


def search(user: str, backend: str) -> Search:
    at = datetime(2026, 12, 7, tzinfo=UTC)
    return Search((GrantRecord(user_id=user, kb_id=f"kb-{backend}", role="owner", recall=True,
                               memos_kb_id=f"m-{backend}", memos_backend=backend, owner_id=user, granted_at=at),))


def drained(clock: FakeClock, backend: str, qps: float) -> RateGovernor:
    """A governor of one environment whose fleet bucket for ``backend`` another user has just emptied."""
    items = MemoryFleetItems()
    heavy = RateGovernor(clock.now, fleet=FleetBudget(items, clock.now))
    while heavy.grants({backend: 1}, {backend: qps}, "heavy")[backend].count:
        pass
    return RateGovernor(clock.now, fleet=FleetBudget(items, clock.now))


def test_a_token_due_within_the_short_wait_is_waited_for_once_and_the_recall_is_whole():
    clock = FakeClock()
    governor = drained(clock, "small", 10.0)
    pool = Pool(big=40.0, small=10.0)

    sent = sendable(pool, governor, [search("light", "big"), search("light", "small")], "light", clock.sleep)  # type: ignore[arg-type]

    assert sorted(s.backend for s in sent.searches) == ["big", "small"]
    assert sent.skipped == []
    assert len(clock.sleeps) == 1
    assert 0 < clock.sleeps[0] <= SHORT_WAIT


def test_without_the_wait_the_same_recall_would_be_partial():
    # The same state, asked without waiting: the small backend is skipped (so the wait above is what
    # made the recall whole).
    clock = FakeClock()
    governor = drained(clock, "small", 10.0)

    grants = governor.grants({"big": 1, "small": 1}, {"big": 40.0, "small": 10.0}, "light")

    assert (grants["big"].count, grants["small"].count) == (1, 0)
    assert 0 < grants["small"].retry_after <= SHORT_WAIT


def test_a_longer_wait_is_not_waited_for_the_recall_is_refused_at_once_with_retry_after():
    # Given a backend whose fleet share MemOS's refusals have halved four times: its next token is due
    # later than the short wait
    clock = FakeClock()
    governor = drained(clock, "tiny", 2.0)
    for _ in range(4):
        governor.refused("tiny")
        clock.advance(1.0)
        while governor.grants({"tiny": 1}, {"tiny": 2.0}, "heavy")["tiny"].count:
            pass

    with pytest.raises(RecallUnavailable) as raised:
        sendable(Pool(tiny=2.0), governor, [search("light", "tiny")], "light", clock.sleep)  # type: ignore[arg-type]

    assert clock.sleeps == []
    assert raised.value.status == 503
    assert raised.value.retry_after >= 1


def test_a_user_refused_for_their_own_use_is_told_429_recall_rate_limited_not_503():
    # Given the heavy user's script has taken every token of a small backend's bucket and it stays spent
    clock = FakeClock()
    items = MemoryFleetItems()
    governor = RateGovernor(clock.now, fleet=FleetBudget(items, clock.now))
    while governor.grants({"tiny": 1}, {"tiny": 2.0}, "heavy")["tiny"].count:
        pass

    # When he recalls again, the budget refuses him for his own use: 429, the per-user limit's code
    with pytest.raises(TooManyRequests) as raised:
        sendable(Pool(tiny=2.0), governor, [search("heavy", "tiny")], "heavy", clock.sleep)  # type: ignore[arg-type]

    assert (raised.value.status, raised.value.code) == (429, "recall_rate_limited")
    assert raised.value.retry_after >= 1
