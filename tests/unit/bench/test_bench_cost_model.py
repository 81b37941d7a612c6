"""The bench's arithmetic: DynamoDB request units from a call, and the cost model from counted calls."""

from __future__ import annotations

from collections import Counter

import pytest

from bench import cost_model
from bench.dynamodb_units import item_bytes, request_units
from bench.route_calls import ROUTES, Calls


def _item(size: int) -> dict[str, dict[str, str]]:
    return {"PK": {"S": "x" * (size - 2)}}  # "PK" is 2 bytes


def test_an_item_s_size_is_its_names_and_values() -> None:
    assert (
        item_bytes({"PK": {"S": "KB#1"}, "n": {"N": "12345"}, "ok": {"BOOL": True}})
        == 2 + 4 + 1 + 4 + 2 + 1  # 5 digits: 3 bytes + 1
    )
    assert item_bytes(None) == 0


@pytest.mark.parametrize(
    ("operation", "params", "response", "expected"),
    [
        ("GetItem", {"ConsistentRead": True}, {"Item": _item(100)}, (1, 0)),
        ("GetItem", {}, {"Item": _item(100)}, (0.5, 0)),
        ("GetItem", {"ConsistentRead": True}, {}, (1, 0)),  # a miss is still a read
        ("GetItem", {"ConsistentRead": True}, {"Item": _item(5000)}, (2, 0)),  # 4 KB units
        ("Query", {"ConsistentRead": True}, {"Items": [_item(1000)] * 10, "ScannedCount": 10}, (3, 0)),
        ("PutItem", {"Item": _item(1500)}, {}, (0, 2)),  # 1 KB units
        ("UpdateItem", {}, {}, (0, 1)),
        ("TransactWriteItems", {"TransactItems": [{"Put": {"Item": _item(10)}}, {"Update": {}}, {"ConditionCheck": {}}]}, {}, (0, 6)),
        ("BatchGetItem", {"RequestItems": {"t": {"Keys": [{}, {}, {}]}}}, {"Responses": {"t": [_item(10)]}}, (1.5, 0)),
    ],
)  # fmt: skip
def test_request_units_follow_dynamodb_s_rules(operation, params, response, expected) -> None:
    assert request_units(operation, params, response) == expected


def test_the_profile_names_only_counted_routes() -> None:
    assert set(cost_model.PROFILE) | set(cost_model.PER_DAY_FIXED) <= set(ROUTES)


def test_the_model_multiplies_the_profile_by_the_counted_calls() -> None:
    # Given the calls counted per route, recall's and a cleanup's among them, on a template's memory sizes
    template = {
        "Globals": {"Function": {"MemorySize": 256}},
        "Resources": {"F": {"Properties": {}}, "Big": {"Properties": {"MemorySize": 1024}}},
    }
    routes = {name: Calls(function="F") for name in ROUTES}
    routes["recall"] = Calls(
        function="Big",
        operations=Counter({("dynamodb", "Query"): 2}),
        memos=Counter({"/search/memory": 1}),
        rru=2,
    )
    routes["cleanup (file)"] = Calls(
        function="F", invocations=2, transitions=5, operations=Counter({("s3", "DeleteObject"): 2})
    )
    # When a day of the usage profile is modelled
    day = cost_model.model(routes, template)

    # Then each quantity is the profile times the counted calls, and each price applies to its quantity
    users = cost_model.USERS
    per_user = cost_model.PROFILE
    # The desktop answers trivial prompts itself: only the others reach recall; each also reads what file
    # attribution needs at the model's scope, and each ingest writes the file's fingerprints.
    reaching = 1 - cost_model.TRIVIAL_PROMPT_SHARE
    attribution = day.attribution
    assert attribution is not None
    assert day.quantities["rru"] == pytest.approx(per_user["recall"] * reaching * users * (2 + attribution.recall_rru))
    assert day.quantities["wru"] == pytest.approx(per_user["ingest (S3 trigger)"] * users * attribution.ingest_wru)
    assert day.quantities["transitions"] == per_user["cleanup (file)"] * users * 5
    assert day.quantities["s3_put"] == per_user["request upload"] * users  # the client's POST; DELETE is free
    # Every run is an invocation (a cleanup of two rounds, two); only the routes are API requests.
    runs = {
        **{
            k: v * users * (reaching if k in cost_model.SKIPPED_WHEN_TRIVIAL else 1)
            for k, v in per_user.items()
        },
        **cost_model.PER_DAY_FIXED,
    }
    assert day.quantities["lambda_requests"] == pytest.approx(sum(runs.values()) + runs["cleanup (file)"])
    assert day.quantities["http_api"] == pytest.approx(
        sum(n for name, n in runs.items() if name not in cost_model.NOT_HTTP)
    )
    # recall: 20 ms + 2 AWS calls x 8 ms + 1 MemOS call x 250 ms, at 1 GB
    recall_ms = cost_model.BASE_MS + 2 * cost_model.AWS_CALL_MS + cost_model.MEMOS_CALL_MS
    assert recall_ms * per_user["recall"] * reaching * users / 1000 <= day.quantities["lambda_gbs"]
    assert day.dollars["rru"] == pytest.approx(day.quantities["rru"] / 1e6 * 0.125)
    assert day.total == pytest.approx(sum(day.dollars.values()))


@pytest.mark.parametrize(("kbs", "searches"), [(0, 0), (1, 1), (3, 3), (4, 4), (5, 4), (8, 4)])
def test_the_per_kb_plan_searches_each_kb_up_to_the_cap_and_the_default_once(kbs: int, searches: int) -> None:
    assert cost_model.searches_per_recall(kbs, attribution="per_kb") == searches
    assert cost_model.searches_per_recall(kbs) == min(kbs, 1)  # by_file: one per backend
    assert cost_model.searches_per_recall(kbs, attribution="combined") == min(kbs, 1)


@pytest.mark.parametrize("backends", [1, 2, 6])
@pytest.mark.parametrize("kbs", range(1, 10))
def test_the_model_counts_the_searches_recall_plans(kbs: int, backends: int) -> None:
    from datetime import UTC, datetime

    from memmy_kb.domain.recall.config import BY_FILE, COMBINED, DEFAULT_MAX_SEARCHES, PER_KB, RecallConfig
    from memmy_kb.domain.recall.search import plan, plan_by_backend
    from memmy_kb.records import GrantRecord

    grants = [
        GrantRecord(
            user_id="u", kb_id=f"kb{n}", role="owner", recall=True, memos_kb_id=f"m{n}", owner_id="u",
            granted_at=datetime.now(UTC), memos_backend=f"b{n % backends}",
        )
        for n in range(kbs)
    ]  # fmt: skip
    assert cost_model.MAX_SEARCHES == DEFAULT_MAX_SEARCHES  # RECALL_MAX_SEARCHES's default
    assert (cost_model.BY_FILE, cost_model.PER_KB, cost_model.COMBINED) == (BY_FILE, PER_KB, COMBINED)
    assert RecallConfig().attribution == cost_model.BY_FILE  # recall's default plan is the model's
    on = min(kbs, backends)
    assert cost_model.searches_per_recall(kbs, backends=on) == len(plan_by_backend(grants))
    assert cost_model.searches_per_recall(kbs, attribution=PER_KB, backends=on) == len(
        plan(grants, DEFAULT_MAX_SEARCHES)
    )


def test_the_memos_load_at_the_profile_s_scope_peak_and_trivial_share() -> None:
    routes = {name: Calls(function="F") for name in ROUTES}
    routes["recall"] = Calls(function="F", memos=Counter({"/search/memory": 1}))  # the counted 1-KB scope
    routes["ingest (S3 trigger)"] = Calls(function="F", memos=Counter({"/add/knowledgebase-file": 1}))
    load = cost_model.memos_load(routes, trivial_share=0.2)

    users, per_recall = cost_model.USERS, cost_model.searches_per_recall(cost_model.KBS_IN_SCOPE)
    per_kb = cost_model.searches_per_recall(cost_model.KBS_IN_SCOPE, attribution="per_kb")
    recalls = cost_model.PROFILE["recall"] * users * 0.8
    assert (per_recall, per_kb) == (1, cost_model.KBS_IN_SCOPE)
    assert load.recalls == pytest.approx(recalls)
    assert load.searches == pytest.approx(recalls)
    assert load.saved_searches == pytest.approx(recalls * (per_kb - 1))
    assert load.other_calls == pytest.approx(cost_model.PROFILE["ingest (S3 trigger)"] * users)
    skipped_prompts = (cost_model.PROFILE["recall"] + cost_model.PROFILE["empty-scope recall"]) * users * 0.2
    assert load.trivial_invocations == pytest.approx(skipped_prompts)
    assert load.trivial_searches == pytest.approx(cost_model.PROFILE["recall"] * users * 0.2 * per_recall)
    peak = (load.searches + load.other_calls) * cost_model.PEAK_HOUR_SHARE / 3600
    assert load.peak_per_second == pytest.approx(peak)
    assert load.users_at_guideline == pytest.approx(users * cost_model.MEMOS_GUIDELINE_PER_SECOND / peak)
    per_kb_peak = (load.per_kb_searches + load.other_calls) * cost_model.PEAK_HOUR_SHARE / 3600
    assert load.per_kb_peak_per_second == pytest.approx(per_kb_peak)


def test_skipping_trivial_prompts_lowers_the_day_s_searches() -> None:
    routes = {name: Calls(function="F") for name in ROUTES}
    routes["recall"] = Calls(function="F", memos=Counter({"/search/memory": 1}))
    none_skipped = cost_model.memos_load(routes, trivial_share=0)
    assert none_skipped.trivial_searches == 0
    assert cost_model.memos_load(routes).searches == pytest.approx(
        none_skipped.searches * (1 - cost_model.TRIVIAL_PROMPT_SHARE)
    )


# ------------------------------------------------------------------------------------------ SnapStart


def _api_routes() -> dict[str, Calls]:
    functions = {
        "recall": "RecallFunction", "empty-scope recall": "RecallFunction", "list KBs": "ManageKbFunction",
        "toggle recall": "ManageKbFunction", "request upload": "UploadFunction", "share": "ShareFunction",
        "revoke": "ShareFunction", "create KB": "CreateKbFunction", "delete file": "DeleteFunction",
        "delete KB": "DeleteFunction",
    }  # fmt: skip
    routes = {name: Calls(function=functions.get(name, "IngestFunction")) for name in ROUTES}
    routes["recall"] = Calls(function="RecallFunction", memos=Counter({"/search/memory": 1}))
    return routes


def test_a_steady_stream_makes_few_cold_starts_and_a_sparse_one_makes_one_per_invocation() -> None:
    from bench import snapstart_cost

    steady, peak = snapstart_cost.cold_starts(1_000_000, 0.3)
    sparse, _ = snapstart_cost.cold_starts(24, 0.3)

    assert steady < 1_000_000 / 1000
    assert peak >= 4
    assert sparse > 24 * 0.8  # an invocation an hour finds no environment left


def test_snapstart_pays_for_recall_at_every_scale_and_for_the_others_only_at_the_largest() -> None:
    # Pays: cheaper than provisioned concurrency, the other way to take the same cold starts away. The
    # template follows the model at the scales it is sized for (docs/benchmarks.md, "SnapStart").
    from bench import snapstart_cost
    from memmy_local.template import load_template

    template = load_template()
    on_snapstart = {name for name, r in template["Resources"].items() if "SnapStart" in r.get("Properties", {})}
    pays = {}
    for users in snapstart_cost.SCALES:
        days = snapstart_cost.model(_api_routes(), template, users)
        pays[users] = {day.function for day in days if day.snapstart_dollars < day.provisioned_dollars}
    assert pays[1_000] == pays[10_000] == on_snapstart == {"RecallFunction"}
    assert "RecallFunction" in pays[100_000]
    # And its rows say so at each scale
    rows = snapstart_cost.rows(_api_routes(), template)
    assert len(rows) == len(snapstart_cost.SCALES) * len(snapstart_cost.API_FUNCTIONS)
