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
    day = cost_model.model(routes, template)

    users = cost_model.USERS
    per_user = cost_model.PROFILE
    assert day.quantities["rru"] == per_user["recall"] * users * 2
    assert day.quantities["transitions"] == per_user["cleanup (file)"] * users * 5
    assert day.quantities["s3_put"] == per_user["request upload"] * users  # the client's POST; DELETE is free
    # Every run is an invocation (a cleanup of two rounds, two); only the routes are API requests.
    runs = {**{k: v * users for k, v in per_user.items()}, **cost_model.PER_DAY_FIXED}
    assert day.quantities["lambda_requests"] == pytest.approx(sum(runs.values()) + runs["cleanup (file)"])
    assert day.quantities["http_api"] == pytest.approx(
        sum(n for name, n in runs.items() if name not in cost_model.NOT_HTTP)
    )
    # recall: 20 ms + 2 AWS calls x 8 ms + 1 MemOS call x 250 ms, at 1 GB
    recall_ms = cost_model.BASE_MS + 2 * cost_model.AWS_CALL_MS + cost_model.MEMOS_CALL_MS
    assert recall_ms * per_user["recall"] * users / 1000 <= day.quantities["lambda_gbs"]
    assert day.dollars["rru"] == pytest.approx(day.quantities["rru"] / 1e6 * 0.125)
    assert day.total == pytest.approx(sum(day.dollars.values()))
