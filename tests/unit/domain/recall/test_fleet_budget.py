"""The fleet's MemOS budget: environments sharing one backend's bucket (an in-process item with the
conditional writes DynamoDB has) on a clock the test moves. On moto: tests/integration/recall/
test_fleet_budget_dynamodb.py; the fleet simulated: bench/fleet_governor.py."""

from __future__ import annotations

from memmy_kb.domain.recall import fleet_budget
from memmy_kb.domain.recall.fleet_budget import Bucket, FleetBudget, MemoryFleetItems, decide
from memmy_kb.domain.recall.rate_governor import RateGovernor
from tests.support.clock import FakeClock

QPS = 40.0


def fleet(n: int, clock: FakeClock, items: MemoryFleetItems | None = None) -> list[FleetBudget]:
    shared = items or MemoryFleetItems()
    return [FleetBudget(shared, clock.now) for _ in range(n)]


def run(envs: list[FleetBudget], clock: FakeClock, seconds: float, step: float = 0.01, users=("u",)) -> list[int]:
    """Every environment asks for one search each ``step``; the searches granted in each whole second."""
    per_second = [0] * int(seconds)
    for tick in range(int(seconds / step)):
        for n, env in enumerate(envs):
            got = env.take("p1", 1, users[(tick + n) % len(users)], QPS).count
            per_second[min(int(tick * step), len(per_second) - 1)] += got
        clock.advance(step)
    return per_second


def test_the_environments_together_never_exceed_max_qps():
    clock = FakeClock()
    envs = fleet(50, clock)

    per_second = run(envs, clock, seconds=10)

    assert max(per_second) <= QPS
    # and the budget is used (its fill), not wasted in held blocks
    assert sum(per_second[1:]) / len(per_second[1:]) >= QPS * fleet_budget.FLEET_FILL * 0.9


def test_one_environment_alone_gets_the_whole_rate_in_blocks():
    clock = FakeClock()
    items = MemoryFleetItems()
    (env,) = fleet(1, clock, items)

    per_second = run([env], clock, seconds=5, step=0.05)  # 20 wanted a second, under its fill

    assert per_second[1:] == [20] * 4
    assert items.writes <= 100 / 2  # blocks: at most one write for two searches


def test_an_environment_that_goes_quiet_frees_its_share():
    clock = FakeClock()
    items = MemoryFleetItems()
    busy, quiet = fleet(2, clock, items)
    run([busy, quiet], clock, seconds=3)
    clock.advance(1.0)  # the bucket full again: the next takes are blocks
    assert quiet.take("p1", 1, "q", QPS).count == 1  # and it holds the rest of its block

    alone = run([busy], clock, seconds=3)
    writes = items.writes
    back = quiet.take("p1", 1, "q", QPS)

    # The busy one gets the whole fill (its 100 asks a second would take more); what the quiet one held
    # lapsed: coming back, it asks the table again instead of spending tokens of seconds ago.
    assert all(abs(n - QPS * fleet_budget.FLEET_FILL) <= 2 for n in alone[1:])
    assert back.count == 1
    assert items.writes > writes


def test_a_spent_budget_answers_at_once_with_when_to_come_back_and_writes_nothing():
    clock = FakeClock()
    items = MemoryFleetItems()
    (env,) = fleet(1, clock, items)
    while env.take("p1", 1, "u", QPS).count:
        pass
    writes = items.writes

    refusals = [env.take("p1", 1, "u", QPS) for _ in range(20)]

    assert all(r.count == 0 and 0 < r.retry_after <= 1 for r in refusals)
    assert items.writes == writes


def test_refusals_halve_the_fleets_rate_once_a_second_and_it_recovers():
    clock = FakeClock()
    envs = fleet(10, clock)
    run(envs, clock, seconds=2)

    for env in envs:  # every environment meets MemOS's refusal at the same moment
        env.refused("p1", QPS)
    halved = run(envs, clock, seconds=3)

    assert envs[0].share("p1") <= 0.75
    fill = QPS * fleet_budget.FLEET_FILL
    assert halved[1] <= fill * (0.5 + 2 * fleet_budget.RECOVERY_STEP)
    recovered = run(envs, clock, seconds=10)
    assert recovered[-1] >= fill * 0.95
    assert envs[0].share("p1") == 1.0


def test_a_light_user_is_answered_while_a_heavy_one_saturates_the_backend():
    clock = FakeClock()
    envs = fleet(20, clock)
    light_asked = light_got = waited = 0
    heavy_asked = heavy_got = 0
    for tick in range(1200):  # 12 s: the heavy user asks 2,000 a second over 20 environments
        for env in envs:
            heavy_asked += 1
            heavy_got += env.take("p1", 1, "heavy", QPS).count
        if tick >= 200 and tick % 50 == 0:  # once the heavy one has saturated it for 2 s  # the light user: twice a second, each time in another environment
            light_asked += 1
            env = envs[tick // 50 % len(envs)]
            grant = env.take("p1", 1, "light", QPS)
            if grant.count == 0 and grant.retry_after <= fleet_budget.SHORT_WAIT:  # recall waits once
                waited += 1
                clock.advance(grant.retry_after)
                grant = env.take("p1", 1, "light", QPS)
            light_got += grant.count
        clock.advance(0.01)

    assert light_got == light_asked == 20
    assert waited <= 2  # the bucket had her token at once nearly every time
    assert heavy_got <= QPS * 12
    assert heavy_got > heavy_asked * 0.01


def test_a_user_past_their_fair_share_must_leave_the_reserve():
    bucket = Bucket(1, tokens=fleet_budget.RESERVE * fleet_budget.capacity(QPS), at=100.0, window=int(100.0 // fleet_budget.WINDOW_SECONDS), users={"heavy": 200, "light": 1})

    _, heavy = decide(bucket, 100.0, QPS, "heavy", 1, 1)
    _, light = decide(bucket, 100.0, QPS, "light", 1, 1)

    assert (heavy.count, light.count) == (0, 1)
    assert heavy.retry_after > 0


def test_the_governor_sends_no_search_the_fleet_does_not_grant():
    clock = FakeClock()
    items = MemoryFleetItems()
    governors = [RateGovernor(clock.now, fleet=FleetBudget(items, clock.now)) for _ in range(50)]
    sent = 0
    for _ in range(100):  # one second: each environment asks for one search every 10 ms
        for governor in governors:
            sent += governor.grants({"p1": 1}, {"p1": QPS}, "u")["p1"].count
        clock.advance(0.01)

    # No floor of one search per backend: 50 environments send the fleet's budget, not 50 x their floor.
    assert sent <= QPS


def test_a_retry_needs_a_token_of_the_fleets():
    clock = FakeClock()
    governor = RateGovernor(clock.now, fleet=FleetBudget(MemoryFleetItems(), clock.now))
    while governor.grants({"p1": 1}, {"p1": QPS}, "u")["p1"].count:
        pass

    assert governor.retried("p1", "u") is False
