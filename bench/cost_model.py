"""What 1,000 active users cost per day on AWS, from the calls ``bench.route_calls`` counted.

A usage profile (per active user per day) times the counted calls of each route gives the day's Lambda
invocations and GB-seconds, HTTP API requests, DynamoDB request units, S3 requests, Step Functions
state transitions and MemOS calls; published us-east-1 prices turn them into dollars. What recall and
the ingest read and write to name each excerpt's file is scaled from the counted run's one small file to
a typical recall and KB (``bench.attribution_cost``). The profile, the duration model and the prices are
stated below; change them here and the figures follow.

``python -m bench.cost_model`` (runs ``bench.route_calls`` first)
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bench import attribution_cost
from bench.attribution_cost import AttributionCost

if TYPE_CHECKING:
    from bench.route_calls import Calls

USERS = 1_000

# Per active user per day. A recall runs before every agent turn (the hook); 200 turns a day, of which a
# tenth by users with no KB in recall (empty scope). Scheduled: the reconciler every 5 minutes. The two
# recall rows count prompts: the desktop service skips the cloud for a trivial one (TRIVIAL_PROMPT_SHARE).
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
# Assumed: the share of prompts that are trivial (a slash command, "ok", "继续"), for which the desktop
# service answers at once without calling the cloud: no Lambda invocation, no HTTP API request, no search.
TRIVIAL_PROMPT_SHARE = 0.15
SKIPPED_WHEN_TRIVIAL = ("recall", "empty-scope recall")
# Assumed: KBs in a typical recall scope (the user's own one or two and a team's share), all on one MemOS
# backend. Recall's default plan (RECALL_ATTRIBUTION=by_file) searches each backend once for the whole
# scope; the per-KB plan (per_kb, for comparison) searches each KB on its own, at most RECALL_MAX_SEARCHES
# (4) searches; the counted recall route has a one-KB scope, so its one search is replaced by this scope's.
KBS_IN_SCOPE = 3
MAX_SEARCHES = 4
BY_FILE, PER_KB, COMBINED = "by_file", "per_kb", "combined"
# Assumed: the busiest hour carries this share of a day's prompts (users at work, about eight busy
# hours: 3.6 times a flat day's hourly rate), spread evenly over that hour.
PEAK_HOUR_SHARE = 0.15
# MemOS's guideline: about 40 requests a second per account (docs/memos.md, "Plans and rates").
MEMOS_GUIDELINE_PER_SECOND = 40
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


def searches_per_recall(
    kbs: int, max_searches: int = MAX_SEARCHES, attribution: str = BY_FILE, backends: int = 1
) -> int:
    """MemOS searches of one recall over ``kbs`` KBs on ``backends`` MemOS backends: one per backend
    ("by_file", recall's default, and "combined"), or with "per_kb" one per KB up to ``max_searches``
    (the rest searched together as one); none for no KB."""
    if kbs <= 0:
        return 0
    if attribution == PER_KB:
        return max(min(kbs, max_searches), min(kbs, backends))
    return min(kbs, backends)


@dataclass(frozen=True)
class MemosLoad:
    """The day's MemOS requests from recall and the rest, at the profile's scope, peak and trivial share."""

    recalls: float  # recalls of a non-empty scope that reach the cloud, per day
    searches: float  # their searches, recall's default plan (one per backend)
    per_kb_searches: float  # the same recalls with RECALL_ATTRIBUTION=per_kb
    other_calls: float  # every other MemOS request of the day (uploads, cleanups)
    trivial_invocations: float  # recall invocations (and HTTP API requests) the desktop's skip saves
    trivial_searches: float  # MemOS searches it saves

    @property
    def saved_searches(self) -> float:
        """What one search per backend saves over the per-KB plan."""
        return self.per_kb_searches - self.searches

    @property
    def per_kb_peak_per_second(self) -> float:
        """The busiest hour's MemOS requests a second had recall kept the per-KB plan."""
        return (self.per_kb_searches + self.other_calls) * PEAK_HOUR_SHARE / 3600

    @property
    def peak_per_second(self) -> float:
        """MemOS requests a second in the busiest hour."""
        return (self.searches + self.other_calls) * PEAK_HOUR_SHARE / 3600

    @property
    def users_at_guideline(self) -> float:
        """Active users at which the busiest hour reaches MemOS's guideline (one account)."""
        return (
            USERS * MEMOS_GUIDELINE_PER_SECOND / self.peak_per_second
            if self.peak_per_second
            else float("inf")
        )


def runs_per_day(trivial_share: float = TRIVIAL_PROMPT_SHARE) -> dict[str, float]:
    """Runs of each route a day for ``USERS`` users; the recall rows less the prompts the desktop skips."""
    runs = {
        name: per_user * USERS * ((1 - trivial_share) if name in SKIPPED_WHEN_TRIVIAL else 1)
        for name, per_user in PROFILE.items()
    }
    runs.update(PER_DAY_FIXED)
    return runs


def memos_load(routes: dict[str, Calls], trivial_share: float = TRIVIAL_PROMPT_SHARE) -> MemosLoad:
    """The day's MemOS requests (``routes``: bench.route_calls.run()); recall's at a ``KBS_IN_SCOPE`` scope."""
    runs = runs_per_day(trivial_share)
    recalls = runs["recall"]
    other = sum(
        count
        * sum(n for path, n in routes[name].memos.items() if name != "recall" or path != "/search/memory")
        for name, count in runs.items()
    )
    skipped = PROFILE["recall"] * USERS * trivial_share
    per_recall = searches_per_recall(KBS_IN_SCOPE)
    return MemosLoad(
        recalls=recalls,
        searches=recalls * per_recall,
        per_kb_searches=recalls * searches_per_recall(KBS_IN_SCOPE, attribution=PER_KB),
        other_calls=other,
        trivial_invocations=sum(PROFILE[name] * USERS * trivial_share for name in SKIPPED_WHEN_TRIVIAL),
        trivial_searches=skipped * per_recall,
    )


@dataclass
class Day:
    """One day of ``USERS`` active users: quantities and dollars per priced item."""

    quantities: dict[str, float] = field(default_factory=dict)
    dollars: dict[str, float] = field(default_factory=dict)
    memos_calls: float = 0.0
    memos: MemosLoad | None = None
    attribution: AttributionCost | None = None

    @property
    def total(self) -> float:
        return sum(self.dollars.values())


def memory_mb(template: dict[str, Any], function: str) -> int:
    """A function's MemorySize in template.yaml (Globals' when it sets none)."""
    default = template.get("Globals", {}).get("Function", {}).get("MemorySize", 128)
    return int(template["Resources"][function]["Properties"].get("MemorySize", default))


def duration_ms(calls: Calls) -> float:
    """Modelled billed milliseconds of one run of a route (all its invocations)."""
    aws_calls = sum(n for (service, op), n in calls.operations.items() if "state machine" not in op)
    return calls.invocations * BASE_MS + aws_calls * AWS_CALL_MS + sum(calls.memos.values()) * MEMOS_CALL_MS


def attributed_units(name: str, calls: Calls, cost: AttributionCost) -> tuple[float, float]:
    """(RRU, WRU) of one run of route ``name``, what it counted for file attribution (one small file in a
    one-KB scope) replaced by the modelled recall or ingest (``bench.attribution_cost``)."""
    if name == "recall":
        return calls.rru - attribution_cost.counted_recall_rru(calls) + cost.recall_rru, calls.wru
    if name == "ingest (S3 trigger)":
        return calls.rru, calls.wru - attribution_cost.counted_ingest_wru(calls) + cost.ingest_wru
    return calls.rru, calls.wru


def model(routes: dict[str, Calls], template: dict[str, Any]) -> Day:
    """The day's quantities and dollars for ``USERS`` active users (``routes``: bench.route_calls.run())."""
    day = Day()
    q = dict.fromkeys(PRICES, 0.0)
    runs = runs_per_day()
    day.attribution = attribution_cost.attribution_cost(routes, KBS_IN_SCOPE, runs["recall"] / USERS)
    for name, count in runs.items():
        calls = routes[name]
        q["lambda_requests"] += count * calls.invocations
        q["lambda_gbs"] += count * duration_ms(calls) / 1000 * memory_mb(template, calls.function) / 1024
        q["http_api"] += 0 if name in NOT_HTTP else count
        rru, wru = attributed_units(name, calls, day.attribution)
        q["rru"] += count * rru
        q["wru"] += count * wru
        put_class, get_class = calls.s3_requests()
        q["s3_put"] += count * (put_class + CLIENT_S3_PUTS.get(name, 0))
        q["s3_get"] += count * get_class
        q["transitions"] += count * calls.transitions
    day.memos = memos_load(routes)
    day.memos_calls = day.memos.searches + day.memos.other_calls
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
    if day.memos is not None:
        out += memos_rows(day.memos)
    if day.attribution is not None:
        runs = runs_per_day()
        out += attribution_cost.rows(day.attribution, runs["recall"], runs["ingest (S3 trigger)"])
    out.append(
        (
            "AWS total",
            f"${day.total:.2f}/day, ${day.total * 30:.0f}/month; ${day.total * 30 / USERS:.3f} per active user per month",
        )
    )
    return out


def memos_rows(load: MemosLoad) -> list[tuple[str, str]]:
    """The MemOS load's rows: recall's searches against the per-KB plan's, the peak rate, the trivial
    prompts' saving."""
    per_recall = searches_per_recall(KBS_IN_SCOPE)
    peak = load.peak_per_second
    return [
        (
            "MemOS searches per day (recall)",
            f"{load.searches:,.0f} = {load.recalls:,.0f} recalls × {per_recall} (one per backend, assumed"
            f" {KBS_IN_SCOPE} KBs in a scope on one backend); per-KB plan: {load.per_kb_searches:,.0f}, so"
            f" {load.saved_searches:,.0f} fewer",
        ),
        (
            "MemOS peak rate",
            f"{peak:.1f} requests/s in the busiest hour (assumed {PEAK_HOUR_SHARE:.0%} of the day's prompts)"
            f" = {peak / MEMOS_GUIDELINE_PER_SECOND:.0%} of MemOS's ~{MEMOS_GUIDELINE_PER_SECOND}/s per account;"
            f" reached at ~{load.users_at_guideline:,.0f} active users (per-KB plan: {load.per_kb_peak_per_second:.1f}/s)",
        ),
        (
            "trivial prompts skipped by the desktop",
            f"assumed {TRIVIAL_PROMPT_SHARE:.0%} of prompts: {load.trivial_invocations:,.0f} Lambda invocations"
            f" (and HTTP API requests) and {load.trivial_searches:,.0f} MemOS searches saved per day",
        ),
    ]


def run(routes: dict[str, Calls] | None = None) -> Day:
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
