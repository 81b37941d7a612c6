"""The per-user recall limit: each environment's bucket (burst, refill), and the shared window in the
table that holds a user across environments; the refusal a caller reads.

The limiter on a clock the test moves (``FakeClock``), counting in the in-memory ``RateCounters`` (the
store contract checks it against DynamoDB). Through the API on moto: tests/integration/recall/test_recall_limit_api.py.
"""

from __future__ import annotations

from http import HTTPStatus

import pytest

from memmy_kb.domain.recall.user_limit import RecallLimiter, RecallLimits
from memmy_kb.errors import TooManyRequests
from memmy_kb.settings import Settings
from tests.support.clock import FakeClock
from tests.support.fakes.activity import FakeRateCounters

LIMITS = RecallLimits(burst=10, per_second=2.0, window_seconds=10)


def admitted(limiter: RecallLimiter, counters: FakeRateCounters, clock: FakeClock, user: str, count: int) -> int:
    """How many of ``count`` recalls of ``user`` at the clock's present are let through."""
    passed = 0
    for _ in range(count):
        try:
            limiter.admit(user, counters, clock.now())
        except TooManyRequests:
            continue
        passed += 1
    return passed


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(start=1_800_000_003.0)


def test_a_user_gets_the_burst_at_once_then_a_refusal_that_says_when(clock: FakeClock) -> None:
    limiter, counters = RecallLimiter(LIMITS, clock=clock.now), FakeRateCounters()
    assert admitted(limiter, counters, clock, "alice", 10) == 10

    with pytest.raises(TooManyRequests) as refused:
        limiter.admit("alice", counters, clock.now())

    error = refused.value
    assert error.status == HTTPStatus.TOO_MANY_REQUESTS
    assert error.code == "recall_rate_limited"
    assert error.retry_after == 1  # half a second to the next token at 2 a second, rounded up
    assert error.message == (
        "Too many recalls for this account just now (at most 10 at once, then 2 a second). Try again in 1 s."
    )


def test_the_bucket_refills_at_the_sustained_rate_and_no_higher_than_the_burst(clock: FakeClock) -> None:
    limiter, counters = RecallLimiter(LIMITS, clock=clock.now), FakeRateCounters()
    assert admitted(limiter, counters, clock, "alice", 10) == 10

    clock.advance(1.0)
    assert admitted(limiter, counters, clock, "alice", 5) == 2  # 2 a second

    # An hour idle refills the burst, not an hour's worth (the shared window has long moved on too).
    clock.advance(3600)
    assert admitted(limiter, counters, clock, "alice", 15) == 10


def test_one_users_burst_spends_nothing_of_anothers(clock: FakeClock) -> None:
    limiter, counters = RecallLimiter(LIMITS, clock=clock.now), FakeRateCounters()
    assert admitted(limiter, counters, clock, "heavy", 50) == 10

    assert admitted(limiter, counters, clock, "light", 3) == 3


def test_the_shared_window_holds_a_user_who_reaches_many_environments(clock: FakeClock) -> None:
    # Given one table and two environments, each with a full bucket for alice
    counters = FakeRateCounters()
    first, second = RecallLimiter(LIMITS, clock=clock.now), RecallLimiter(LIMITS, clock=clock.now)
    assert LIMITS.per_window == 30

    # When she spends both bursts and a third environment's too
    third = RecallLimiter(LIMITS, clock=clock.now)
    passed = sum(admitted(env, counters, clock, "alice", 10) for env in (first, second, third))
    assert passed == 30

    # Then a fourth environment's full bucket lets her through no further: the window is full
    with pytest.raises(TooManyRequests) as refused:
        RecallLimiter(LIMITS, clock=clock.now).admit("alice", counters, clock.now())
    # 3 s into a 10 s window that holds 30: the next window starts 7 s on
    assert refused.value.retry_after == 7
    assert refused.value.code == "recall_rate_limited"
    # Bob, on the same environments and table, is not held by her window
    assert admitted(first, counters, clock, "bob", 1) == 1


def test_the_shared_window_serves_each_window_its_share_to_a_user_who_never_stops(clock: FakeClock) -> None:
    # Twenty environments each take one recall of alice a second: 20/s across the fleet
    counters = FakeRateCounters()
    fleet = [RecallLimiter(LIMITS, clock=clock.now) for _ in range(20)]
    passed = []
    for _ in range(60):
        passed.append(sum(admitted(env, counters, clock, "alice", 1) for env in fleet))
        clock.advance(1.0)
    # Seconds 3 to 62 of the clock: six whole windows' worth and two partial ones, 30 each (burst + rate x
    # window), of the 1,200 she asked for. A refused recall counts for nothing: each window serves its 30.
    assert sum(passed) == 7 * LIMITS.per_window
    assert passed[:9] == [20, 10, 0, 0, 0, 0, 0, 20, 10]


def test_an_environment_forgets_the_least_recently_seen_users_beyond_its_bound(clock: FakeClock) -> None:
    limiter, counters = RecallLimiter(LIMITS, clock=clock.now, max_users=2), FakeRateCounters()
    for user in ("a", "b", "c"):
        admitted(limiter, counters, clock, user, 1)
    assert list(limiter._buckets) == ["b", "c"]


def test_the_limits_come_from_the_settings() -> None:
    settings = Settings(
        table_name="t", memos_base_url="", memos_api_key_secret="",
        recall_burst=4, recall_rate_per_second=0.5, recall_limit_window_seconds=60,
    )
    limits = RecallLimits.from_settings(settings)
    assert (limits.burst, limits.per_second, limits.window_seconds, limits.per_window) == (4, 0.5, 60, 34)


def test_a_slow_rate_is_said_as_one_every_so_many_seconds(clock: FakeClock) -> None:
    limiter, counters = RecallLimiter(RecallLimits(1, 0.25, 60), clock=clock.now), FakeRateCounters()
    limiter.admit("alice", counters, clock.now())
    with pytest.raises(TooManyRequests) as refused:
        limiter.admit("alice", counters, clock.now())
    assert "at most 1 at once, then one every 4 seconds" in refused.value.message
    assert refused.value.retry_after == 4
