"""SnapStart's cost per API function against the cold starts it saves and against provisioned concurrency.

For Python, SnapStart bills a cache charge (each published version's snapshot, by the function's memory,
for as long as the version is active: a retired version's snapshot stays cached until it has not been
invoked for 14 days) and a restore charge (by memory, per environment restored); restored environments
skip the INIT phase, which Lambda bills at the duration price. Provisioned concurrency, the other way
to take cold starts away (the two exclude each other), bills its environments all day.

Cold starts per day come from a modelled day (``HOURS``: the busiest hour carries ``cost_model``'s
``PEAK_HOUR_SHARE`` of the day's invocations, seven more busy hours most of the rest) and three
assumptions about Lambda, which does not publish them: an idle environment is reclaimed after
``IDLE_SECONDS``; a busy one is replaced every ``LIFETIME_HOURS``; the environments an hour needs are its
mean concurrency plus three standard deviations (Poisson). Per hour: each invocation after an idle gap
longer than ``IDLE_SECONDS`` (probability ``exp(-rate x idle)``), each environment added since the hour
before, and each replaced, is a cold start.

Figures at 1,000, 10,000 and 100,000 active users (``SCALES``), from the counted calls of
``bench.route_calls`` and the template's memory sizes; ``python -m bench --only route_calls``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from bench import cost_model

SCALES = (1_000, 10_000, 100_000)
# Functions behind the HTTP API (a person or an agent waits on their cold starts).
API_FUNCTIONS = (
    "RecallFunction", "ManageKbFunction", "ShareFunction", "UploadFunction", "CreateKbFunction", "DeleteFunction",
)  # fmt: skip

# us-east-1 list prices, arm64, taken with cost_model's (aws.amazon.com/lambda/pricing).
CACHE_PER_GB_SECOND = 0.0000015046  # SnapStart cache (Python, .NET), per GB of memory, per second
RESTORE_PER_GB = 0.0001397998  # SnapStart restore, per GB of memory restored
DURATION_PER_GB_SECOND = cost_model.PRICES["lambda_gbs"].dollars  # on-demand duration (and INIT), arm64
PROVISIONED_PER_GB_SECOND = 0.0000033334  # provisioned concurrency, arm64, per GB configured per second
PROVISIONED_DURATION_PER_GB_SECOND = 0.0000077778  # duration of invocations it serves, arm64

# Assumed (Lambda publishes none of these):
IDLE_SECONDS = 600  # an idle environment is reclaimed after about 10 minutes
LIFETIME_HOURS = 2.0  # a busy environment is replaced about every 2 hours
# A cold start's INIT on Lambda (the recall handler's import and its first request's clients: the bench's
# cold row, about 0.45-0.6 s of CPU here) and a restore (Lambda's resume of the snapshot plus the
# after-restore hooks and the first request's leftovers: the bench's restore row is 0.05 s of CPU).
COLD_START_SECONDS = 0.6
RESTORE_SECONDS = 0.2
HOOKS_SECONDS = 0.05  # the after-restore hooks, billed at the duration price
DEPLOYS_PER_MONTH = 4  # each leaves its version's snapshot cached until 14 days without an invocation
RETIRED_DAYS = 14


def _hours() -> list[float]:
    """Each hour's share of a day's invocations: the peak hour, seven busy ones, sixteen quiet ones."""
    peak = cost_model.PEAK_HOUR_SHARE
    busy = [peak] + [(0.85 - peak) / 7] * 7
    return busy + [0.15 / 16] * 16


HOURS = _hours()


@dataclass(frozen=True)
class FunctionDay:
    """One API function's day at one scale: its traffic, cold starts and what each option costs."""

    function: str
    users: int
    invocations: float
    memory_gb: float
    cold_starts: float
    peak_environments: int
    snapstart_dollars: float  # cache (live and retired versions) + restores + hooks - INIT no longer billed
    provisioned_dollars: float  # the peak's environments all day, less the duration discount they earn

    @property
    def dollars_per_cold_start(self) -> float:
        return self.snapstart_dollars / self.cold_starts if self.cold_starts else math.inf

    @property
    def seconds_saved(self) -> float:
        return self.cold_starts * (COLD_START_SECONDS - RESTORE_SECONDS)


def environments(invocations: float, duration_s: float) -> int:
    """Environments an hour of ``invocations`` keeps busy: mean concurrency plus three deviations."""
    if invocations <= 0:
        return 0
    mean = invocations / 3600 * duration_s
    return max(1, math.ceil(mean + 3 * math.sqrt(mean)))


def cold_starts(per_day: float, duration_s: float) -> tuple[float, int]:
    """Cold starts a day of ``per_day`` invocations makes over ``HOURS`` (a ring: the day before ended as
    this one does), and the environments of its busiest hour."""
    needed = [environments(per_day * share, duration_s) for share in HOURS]
    total = 0.0
    for hour, share in enumerate(HOURS):
        invocations = per_day * share
        after_idle = invocations * math.exp(-invocations / 3600 * IDLE_SECONDS)
        total += after_idle + max(0, needed[hour] - needed[hour - 1]) + needed[hour] / LIFETIME_HOURS
    return total, max(needed)


def function_day(
    function: str, users: int, invocations: float, duration_s: float, memory_gb: float
) -> FunctionDay:
    starts, peak = cold_starts(invocations, duration_s)
    versions = 1 + DEPLOYS_PER_MONTH / 30 * RETIRED_DAYS
    cache = versions * memory_gb * 86_400 * CACHE_PER_GB_SECOND
    restores = starts * memory_gb * (RESTORE_PER_GB + HOOKS_SECONDS * DURATION_PER_GB_SECOND)
    init_saved = starts * COLD_START_SECONDS * memory_gb * DURATION_PER_GB_SECOND
    served_gbs = invocations * duration_s * memory_gb
    provisioned = peak * memory_gb * 86_400 * PROVISIONED_PER_GB_SECOND - served_gbs * (
        DURATION_PER_GB_SECOND - PROVISIONED_DURATION_PER_GB_SECOND
    )
    return FunctionDay(
        function, users, invocations, memory_gb, starts, peak, cache + restores - init_saved, provisioned
    )


def model(routes: dict[str, Any], template: dict[str, Any], users: int) -> list[FunctionDay]:
    """Every API function's day at ``users`` active users (``routes``: bench.route_calls.run())."""
    runs = {name: count * users / cost_model.USERS for name, count in cost_model.runs_per_day().items()}
    invocations: dict[str, float] = dict.fromkeys(API_FUNCTIONS, 0.0)
    busy_ms: dict[str, float] = dict.fromkeys(API_FUNCTIONS, 0.0)
    for name, count in runs.items():
        calls = routes[name]
        if calls.function in invocations:
            invocations[calls.function] += count * calls.invocations
            busy_ms[calls.function] += count * cost_model.duration_ms(calls)
    return [
        function_day(
            function,
            users,
            invocations[function],
            busy_ms[function] / invocations[function] / 1000 if invocations[function] else 0.0,
            cost_model.memory_mb(template, function) / 1024,
        )
        for function in API_FUNCTIONS
    ]


def rows(routes: dict[str, Any], template: dict[str, Any]) -> list[tuple[str, str]]:
    """(item, figure) rows: per scale and API function, cold starts, SnapStart's and provisioned concurrency's dollars."""
    out = []
    for users in SCALES:
        for day in model(routes, template, users):
            per = "n/a" if math.isinf(day.dollars_per_cold_start) else f"${day.dollars_per_cold_start:.5f}"
            out.append(
                (
                    f"{users:,} users: {day.function}",
                    f"{day.invocations:,.0f} invocations, {day.cold_starts:,.0f} cold starts/day"
                    f" ({day.seconds_saved:,.0f} s of waiting SnapStart saves); SnapStart"
                    f" ${day.snapstart_dollars:.3f}/day ({per} per cold start avoided); provisioned"
                    f" concurrency for the peak's {day.peak_environments}: ${day.provisioned_dollars:.2f}/day",
                )
            )
    return out
