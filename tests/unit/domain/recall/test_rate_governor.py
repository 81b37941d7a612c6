"""The MemOS rate governor: fewer searches per recall near a backend's max_qps, grouped KBs, recovery.

The governor on a clock the test moves (``FakeClock``); attributed recall with it on the fakes of
tests/support/recall.py. Against the MemOS emulator's enforced rate: tests/integration/recall/
test_recall_governor.py.
"""

from __future__ import annotations

from collections import deque

import pytest

from memmy_kb.adapters.memos.backends import MemosBackends
from memmy_kb.domain.engine import MemosApiKeyError
from memmy_kb.domain.recall import rate_governor as governor_module
from memmy_kb.domain.recall import search as recall_search
from memmy_kb.domain.recall.governed import Search, cap_plan
from memmy_kb.domain.recall.rate_governor import RateGovernor
from memmy_kb.domain.recall.search import plan
from memmy_kb.errors import RecallUnavailable
from tests.support.clock import FakeClock
from tests.support.recall import (
    Repository,
    engine,
    engines,
    grant,
    kb_of,
    own,
    placed_grant,
    rate_limited,
    run,
)

KBS = [f"kb{n}" for n in range(8)]


def drive(
    governor: RateGovernor, clock: FakeClock, *, recalls_per_second: float, seconds: float, qps: float | None
):
    """Recalls of 4 wanted searches at a steady rate, each sending what it is allowed; the searches sent
    per recall, and the most sent in any one-second window."""
    sent: list[int] = []
    times: deque[float] = deque()
    busiest = 0
    for _ in range(int(recalls_per_second * seconds)):
        allowed = governor.allowances({"p1": 4}, {"p1": qps})["p1"]
        times.extend([clock.now()] * allowed)
        while times and times[0] <= clock.now() - 1.0:
            times.popleft()
        busiest = max(busiest, len(times))
        sent.append(allowed)
        clock.advance(1 / recalls_per_second)
    return sent, busiest


def test_far_from_the_limit_every_recall_gets_all_its_searches():
    clock = FakeClock()
    governor = RateGovernor(clock.now)

    sent, _ = drive(governor, clock, recalls_per_second=2, seconds=10, qps=40)

    assert sent == [4] * 20


def test_at_twice_the_limit_recalls_stay_under_it_and_never_go_without_a_search():
    # 10 recalls a second wanting 4 searches each (40/s) against a backend allowing 20/s
    clock = FakeClock()
    governor = RateGovernor(clock.now)

    sent, busiest = drive(governor, clock, recalls_per_second=10, seconds=10, qps=20)

    assert min(sent) >= 1
    assert busiest <= 20
    # It uses the room it has: more than one search per recall on average once settled
    assert 1.2 <= sum(sent[10:]) / len(sent[10:]) <= 2.0


def test_the_allowance_recovers_as_the_pressure_drops():
    clock = FakeClock()
    governor = RateGovernor(clock.now)
    drive(governor, clock, recalls_per_second=10, seconds=3, qps=20)

    clock.advance(2.0)
    sent, _ = drive(governor, clock, recalls_per_second=1, seconds=3, qps=20)

    assert sent == [4, 4, 4]


def test_a_rate_limit_answer_halves_the_share_and_quiet_seconds_give_it_back():
    clock = FakeClock()
    governor = RateGovernor(clock.now)

    governor.refused("p1")
    governor.refused("p1")
    assert governor.share("p1") == 0.25
    # Another environment's traffic is invisible here: a lower share means fewer searches at the same rate
    sent, _ = drive(governor, clock, recalls_per_second=10, seconds=1, qps=20)
    assert sum(sent) <= 10 + 4

    clock.advance(10 * governor_module.RECOVERY_SECONDS)
    governor.allowances({"p1": 1}, {"p1": 20})
    assert governor.share("p1") == 1.0


def test_a_backend_without_max_qps_gets_the_default():
    clock = FakeClock()
    governor = RateGovernor(clock.now)

    _, busiest = drive(governor, clock, recalls_per_second=20, seconds=5, qps=None)

    # 20 recalls a second at one search each would be 20: it uses the default's room, and keeps within it
    assert 25 <= busiest <= governor_module.DEFAULT_MAX_QPS


@pytest.mark.parametrize("max_qps", [0.0, -5.0, float("nan"), float("inf")])
def test_a_max_qps_that_is_no_positive_rate_gets_the_default(max_qps: float):
    # The secret's parser refuses these; a backend from elsewhere must not take recall down (NaN would
    # fail math.floor, infinity overflow it, a negative rate degrade every recall for good)
    clock = FakeClock()
    governor = RateGovernor(clock.now)

    assert governor.allowances({"p1": 4}, {"p1": max_qps}) == {"p1": 4}
    clock.advance(1.0)
    assert governor.allowances({"p1": 4}, {"p1": max_qps}) == {"p1": 4}


def test_cap_plan_keeps_the_first_searches_and_groups_the_rest_per_backend():
    searches = plan([own(kb) for kb in KBS[:3]] + [grant(kb) for kb in KBS[3:]], max_searches=4)
    assert len(searches) == 4

    two = cap_plan(searches, {"default": 2})
    one = cap_plan(searches, {"default": 1})

    assert [len(s.grants) for s in two] == [1, 7]
    assert two[0] is searches[0]
    assert [len(s.grants) for s in one] == [8]
    assert {g.kb_id for g in one[0].grants} == set(KBS)
    assert cap_plan(searches, {"default": 4}) == searches


def test_cap_plan_caps_each_backend_on_its_own():
    grants = [grant(kb).model_copy(update={"memos_backend": "p1" if kb < "kb4" else "p2"}) for kb in KBS]
    searches = [Search((g,)) for g in grants]

    capped = cap_plan(searches, {"p1": 1, "p2": 4})

    assert sorted((s.backend, len(s.grants)) for s in capped) == [("p1", 4), ("p2", 1), ("p2", 1), ("p2", 1), ("p2", 1)]


def test_a_degraded_recall_answers_from_grouped_searches_whose_excerpts_name_their_group():
    repo = Repository([[grant(kb) for kb in KBS]])
    memos = engine(*KBS)
    clock = FakeClock()
    governor = RateGovernor(clock.now)
    for _ in range(10):  # this environment just served ten recalls of four searches
        governor.allowances({"default": 4}, {})

    result = run(repo, memos, governor=governor)

    assert [len(s.kb_ids) for s in memos.searches] == [8]  # one search of the whole scope
    assert result.items
    for item in result.items:
        assert item.knowledge_base is None
        assert {kb.id for kb in item.knowledge_bases or []} == set(KBS)


def test_recalls_asking_at_the_same_moment_share_the_bucket_instead_of_each_taking_all_of_it():
    # Two recalls of one process (the local stack serves recalls on threads) are allowed their searches
    # before either has sent one: the second must not be given the tokens the first was given
    clock = FakeClock()
    governor = RateGovernor(clock.now)

    first = governor.allowances({"p1": 4}, {"p1": 20})["p1"]
    second = governor.allowances({"p1": 4}, {"p1": 20})["p1"]

    assert first == 4
    assert first + second <= governor_module.BURST * 20  # the bucket's 5, not 8


def test_a_few_recalls_in_quick_succession_degrade_nothing():
    # Three recalls within 50 ms, far from the limit over any second: each gets the searches it wants
    clock = FakeClock()
    governor = RateGovernor(clock.now)
    sent = []
    for wanted in (2, 1, 4):
        allowed = governor.allowances({"p1": wanted}, {"p1": 40})["p1"]
        sent.append(allowed)
        clock.advance(0.025)

    assert sent == [2, 1, 4]


def test_an_unusable_memos_secret_is_still_recall_unavailable_with_the_governor():
    # Given the recall pool over a MemOS secret that lists no usable backend (the governor reads the
    # backends' max_qps from it before any search)
    def unusable(refresh: bool) -> list:
        raise MemosApiKeyError("secret memmy-test lists no MemOS backend")

    pool = MemosBackends(unusable, lambda url, key: engine())
    repo = Repository([[grant(kb) for kb in KBS[:2]]])

    # Then the recall fails closed as without the governor: the 503 of a failed recall, not a 500
    with pytest.raises(RecallUnavailable) as raised:
        run(repo, pool, governor=RateGovernor())  # type: ignore[arg-type]
    assert (raised.value.status, raised.value.code) == (503, "recall_unavailable")


def test_a_rate_limited_search_is_retried_once_and_the_retry_takes_a_token_of_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(recall_search, "RATE_LIMIT_PAUSE", (0.0, 0.01))
    repo = Repository([[placed_grant("kb1", "a")]])
    pool = engines({"kb1": "a"})
    pool["a"].fail("search_memory", rate_limited(), times=1)
    clock = FakeClock()  # stands still: the bucket fills by nothing during the recall
    governor = RateGovernor(clock.now)

    result = run(repo, pool, governor=governor)

    # The retry answered
    assert [kb_of(i) for i in result.items] == ["kb1"]
    assert pool["a"].calls["search_memory"] == 2
    # The refusal halved the share, capping the bucket at 5 tokens (the default max_qps's 10); the
    # allowance had taken one (10 -> 9 -> 5 at the refusal) and the retry took one more: 4 left
    assert governor.share("a") == 0.5
    assert governor.allowances({"a": 8}, {})["a"] == 4
