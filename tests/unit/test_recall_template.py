"""The recall function in template.yaml: its own small settings, read-only table access, one route."""

from __future__ import annotations

from typing import Any

import pytest

from memmy_local.template import http_routes, load_template

# The grants' Query, and the KBs' names with the sharers' profiles in one BatchGetItem (attribution).
READ_ONLY_DYNAMODB = {"dynamodb:Query", "dynamodb:BatchGetItem"}


@pytest.fixture(scope="module")
def recall_function() -> dict[str, Any]:
    return load_template()["Resources"]["RecallFunction"]["Properties"]


def statements(function: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for policy in function["Policies"] for s in policy["Statement"]]


def actions(statement: dict[str, Any]) -> set[str]:
    action = statement["Action"]
    return set(action if isinstance(action, list) else [action])


def test_recall_has_its_own_small_memory_and_a_short_timeout(recall_function):
    assert recall_function["MemorySize"] <= 512
    assert recall_function["Timeout"] <= 6
    variables = recall_function["Environment"]["Variables"]
    # The MemOS budget leaves the function time for the two table reads and the answer.
    assert float(variables["RECALL_MEMOS_TIMEOUT_SECONDS"]) <= recall_function["Timeout"] / 2
    assert int(variables["RECALL_CONTEXT_MAX_CHARS"]) > 0
    assert variables["RECALL_ATTRIBUTION"] in {"per_kb", "combined"}
    assert int(variables["RECALL_MAX_SEARCHES"]) >= 1
    assert int(variables["RECALL_MAX_PER_KB"]) >= 1


def test_recall_may_only_read_the_table_and_the_memos_key(recall_function):
    granted = [(actions(s), s["Resource"]) for s in statements(recall_function)]
    dynamodb = [(a, r) for a, r in granted if any(x.startswith("dynamodb:") for x in a)]
    # Queries on the table itself: never an index (GSIs are never used to authorize), never a write.
    assert dynamodb == [(READ_ONLY_DYNAMODB, {"Fn::GetAtt": ["Table", "Arn"]})]
    others = [(a, r) for a, r in granted if not any(x.startswith("dynamodb:") for x in a)]
    assert others == [({"secretsmanager:GetSecretValue"}, {"Ref": "MemosApiKeySecret"})]


def test_recall_serves_exactly_post_recall_and_logs_to_its_own_group(recall_function):
    routes = [(r.method, r.path) for r in http_routes(load_template()) if r.function == "RecallFunction"]
    assert routes == [("POST", "/recall")]
    assert recall_function["LoggingConfig"]["LogGroup"] == {"Ref": "RecallLogGroup"}
