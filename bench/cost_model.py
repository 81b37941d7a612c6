"""What 1,000 active users cost per day on AWS, from the calls ``bench.route_calls`` counted.

A usage profile (per active user per day) times the counted calls of each route gives the day's Lambda
invocations and GB-seconds, HTTP API requests, DynamoDB request units, S3 requests, Step Functions
state transitions and MemOS calls; published us-east-1 prices turn them into dollars. The profile, the
duration model and the prices are stated below; change them here and the figures follow.

``python -m bench.cost_model`` (runs ``bench.route_calls`` first)
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

USERS = 1_000

# Per active user per day. A recall runs before every agent turn (the hook); 200 turns a day, of which a
# tenth by users with no KB in recall (empty scope). Scheduled: the reconciler every 5 minutes.
PROFILE: dict[str, float] = {
    "recall": 180,
    "empty-scope recall": 20,
    "list KBs": 5,
    "toggle recall": 0.5,
    "request upload": 2,
    "ingest (S3 trigger)": 2,
    "share": 0.2,
    "revoke": 0.05,
    "create KB": 0.05,
    "delete file": 0.2,
    "cleanup (file)": 0.2,
    "delete KB": 0.01,
    "cleanup (KB)": 0.01,
}
PER_DAY_FIXED: dict[str, float] = {"reconcile run": 24 * 60 / 5}
# Not an API route: triggered by S3 through SQS, by Step Functions, or by the schedule.
NOT_HTTP = {"ingest (S3 trigger)", "cleanup (file)", "cleanup (KB)", "reconcile run"}
# Each upload's bytes go to S3 by the client's presigned POST (a PUT-class request, not a botocore call).
CLIENT_S3_PUTS = {"request upload": 1}

# Billed duration per invocation, modelled (local timings on moto say nothing about AWS): a base for the
# runtime and the handler's own work, plus each AWS call (same-region SDK round trip) and each MemOS call
# (an HTTPS round trip to MemOS; its search dominates recall).
BASE_MS = 20
AWS_CALL_MS = 8
MEMOS_CALL_MS = 250


@dataclass(frozen=True)
class Price:
    what: str
    unit: str
    dollars: float  # per unit
    source: str


PRICES_DATE = "as published in 2026 (us-east-1 list prices, taken 2 Dec 2026)"
PRICES = {
    "lambda_requests": Price("Lambda requests", "1M requests", 0.20, "aws.amazon.com/lambda/pricing"),
    "lambda_gbs": Price("Lambda duration, arm64", "GB-second", 0.0000133334, "aws.amazon.com/lambda/pricing"),
    "http_api": Price("API Gateway HTTP API", "1M requests", 1.00, "aws.amazon.com/api-gateway/pricing"),
    "wru": Price(
        "DynamoDB on-demand writes",
        "1M WRU",
        0.625,
        "aws.amazon.com/dynamodb/pricing (after the Nov 2024 cut)",
    ),
    "rru": Price(
        "DynamoDB on-demand reads",
        "1M RRU",
        0.125,
        "aws.amazon.com/dynamodb/pricing (after the Nov 2024 cut)",
    ),
    "s3_put": Price("S3 PUT, COPY, POST, LIST", "1,000 requests", 0.005, "aws.amazon.com/s3/pricing"),
    "s3_get": Price("S3 GET, HEAD", "1,000 requests", 0.0004, "aws.amazon.com/s3/pricing"),
    "transitions": Price(
        "Step Functions Standard", "1,000 transitions", 0.025, "aws.amazon.com/step-functions/pricing"
    ),
}
_PER = {
    "1M requests": 1e6,
    "GB-second": 1,
    "1M WRU": 1e6,
    "1M RRU": 1e6,
    "1,000 requests": 1e3,
    "1,000 transitions": 1e3,
}


@dataclass
class Day:
    """One day of ``USERS`` active users: quantities and dollars per priced item."""

    quantities: dict[str, float] = field(default_factory=dict)
    dollars: dict[str, float] = field(default_factory=dict)
    memos_calls: float = 0.0

    @property
    def total(self) -> float:
        return sum(self.dollars.values())


def memory_mb(template: dict[str, Any], function: str) -> int:
    """A function's MemorySize in template.yaml (Globals' when it sets none)."""
    default = template.get("Globals", {}).get("Function", {}).get("MemorySize", 128)
    return int(template["Resources"][function]["Properties"].get("MemorySize", default))


def duration_ms(calls: Any) -> float:
    """Modelled billed milliseconds of one run of a route (all its invocations)."""
    aws_calls = sum(n for (service, op), n in calls.operations.items() if "state machine" not in op)
    return calls.invocations * BASE_MS + aws_calls * AWS_CALL_MS + sum(calls.memos.values()) * MEMOS_CALL_MS


def model(routes: dict[str, Any], template: dict[str, Any]) -> Day:
    """The day's quantities and dollars for ``USERS`` active users (``routes``: bench.route_calls.run())."""
    day = Day()
    q = dict.fromkeys(PRICES, 0.0)
    runs = {name: per_user * USERS for name, per_user in PROFILE.items()}
    runs.update(PER_DAY_FIXED)
    for name, count in runs.items():
        calls = routes[name]
        q["lambda_requests"] += count * calls.invocations
        q["lambda_gbs"] += count * duration_ms(calls) / 1000 * memory_mb(template, calls.function) / 1024
        q["http_api"] += 0 if name in NOT_HTTP else count
        q["rru"] += count * calls.rru
        q["wru"] += count * calls.wru
        put_class, get_class = calls.s3_requests()
        q["s3_put"] += count * (put_class + CLIENT_S3_PUTS.get(name, 0))
        q["s3_get"] += count * get_class
        q["transitions"] += count * calls.transitions
        day.memos_calls += count * sum(calls.memos.values())
    day.quantities = q
    day.dollars = {key: q[key] / _PER[PRICES[key].unit] * PRICES[key].dollars for key in PRICES}
    return day


def _price(dollars: float) -> str:
    return (
        f"{dollars:.10f}".rstrip("0").rstrip(".")
        if dollars < 0.01
        else f"{dollars:.3f}".rstrip("0").rstrip(".")
    )


def rows(day: Day) -> list[tuple[str, str]]:
    """(item, figure) rows for the bench's table."""
    out = []
    for key, price in PRICES.items():
        quantity = day.quantities[key]
        shown = f"{quantity:,.0f}" if quantity >= 100 else f"{quantity:,.1f}"
        out.append(
            (
                f"{price.what} per day",
                f"{shown} × ${_price(price.dollars)}/{price.unit} = ${day.dollars[key]:.3f}/day",
            )
        )
    out.append(("MemOS calls per day", f"{day.memos_calls:,.0f} (MemOS's plan, not AWS: see docs/memos.md)"))
    out.append(
        (
            "AWS total",
            f"${day.total:.2f}/day, ${day.total * 30:.0f}/month; ${day.total * 30 / USERS:.3f} per active user per month",
        )
    )
    return out


def run(routes: dict[str, Any] | None = None) -> Day:
    from memmy_local.template import load_template

    if routes is None:
        from bench import route_calls

        routes = route_calls.run(verbose=False)
    day = model(routes, load_template())
    print(f"cost per day of {USERS:,} active users, prices {PRICES_DATE}:")
    for item, figure in rows(day):
        print(f"  {item}: {figure}")
    return day


if __name__ == "__main__":
    run()
    sys.exit(0)
