"""The fleet simulation (bench/fleet_governor.py) counts what recall would answer: each recall once, as
answered, partial or 503, and MemOS's view per backend."""

from __future__ import annotations

from bench import fleet_governor


def test_with_the_fleet_budget_no_backend_sees_more_than_its_rate_and_partial_recalls_are_counted():
    result = fleet_governor.simulate(10, fleet=True, rates=(40.0, 20.0, 10.0))

    assert all(busiest <= limit for busiest, limit in result["busiest"])
    assert result["refused"] == 0
    assert result["answered"] + result["partial"] + result["unavailable"] + result["limited"] == result["recalls"]
    assert result["partial"] > 0  # the 10-a-second backend cannot serve every recall's search


def test_without_it_the_environments_overrun_the_smallest_backend():
    result = fleet_governor.simulate(10, fleet=False, rates=(40.0, 20.0, 10.0))

    assert result["busiest"][2][0] > 10
    assert result["refused"] > 0


def test_one_backend_answers_or_refuses_never_partial():
    result = fleet_governor.simulate(10, fleet=True)

    assert result["partial"] == 0
    assert result["answered"] + result["unavailable"] + result["limited"] == result["recalls"]
    assert result["limited"] > result["unavailable"]  # the heavy script is told it is the reason
