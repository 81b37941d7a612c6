"""The mcp function in template.yaml: recall's settings and size, writes only to its own partitions, its
routes without the authorizer, and an authorizer whose audience can never be the MCP endpoint's."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memmy_local.template import http_routes, load_template

OWN_PARTITIONS = {"MCPCONN#*", "MCPLOG#*", "MCPHITS#*"}


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return load_template()


def properties(template: dict[str, Any], name: str) -> dict[str, Any]:
    return template["Resources"][name]["Properties"]


def statements(function: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for policy in function["Policies"] for s in policy["Statement"]]


def as_set(value: Any) -> set[str]:
    return set(value if isinstance(value, list) else [value])


def test_search_runs_as_recall_does_with_recalls_size_and_settings(template: dict[str, Any]) -> None:
    mcp, recall = properties(template, "McpFunction"), properties(template, "RecallFunction")

    assert (mcp["MemorySize"], mcp["Timeout"]) == (512, 6)
    recall_settings = {k: v for k, v in recall["Environment"]["Variables"].items() if k.startswith("RECALL_")}
    assert {k: v for k, v in mcp["Environment"]["Variables"].items() if k.startswith("RECALL_")} == recall_settings
    assert mcp["LoggingConfig"]["LogGroup"] == {"Ref": "McpLogGroup"}


def test_the_function_writes_only_its_own_partitions_and_the_recall_counters(template: dict[str, Any]) -> None:
    writes = {"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem"}
    written: set[str] = set()
    for statement in statements(properties(template, "McpFunction")):
        if as_set(statement["Action"]) & writes:
            assert "dynamodb:DeleteItem" not in as_set(statement["Action"])
            leading = statement["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"]
            written |= set(leading)
    assert written == OWN_PARTITIONS | {"FLEET#*", "LIMIT#recall#*"}


def test_the_routes_are_the_functions_and_open(template: dict[str, Any]) -> None:
    routes = {(r.method, r.path) for r in http_routes(template) if r.function == "McpFunction"}

    assert routes == {
        ("POST", "/mcp"),
        ("GET", "/mcp"),
        ("DELETE", "/mcp"),
        ("GET", "/.well-known/oauth-protected-resource/mcp"),
        ("GET", "/.well-known/oauth-protected-resource"),
    }
    for event in properties(template, "McpFunction")["Events"].values():
        assert event["Properties"]["Auth"] == {"Authorizer": "NONE"}


def test_the_apis_authorizer_never_accepts_the_mcp_endpoints_audience(template: dict[str, Any]) -> None:
    authorizer = properties(template, "HttpApi")["Auth"]["Authorizers"]["MemmyJwt"]["JwtConfiguration"]

    assert "Mcp" not in json.dumps(authorizer["audience"])
    variables = properties(template, "McpFunction")["Environment"]["Variables"]
    assert variables["MCP_RESOURCE_URL"] == {"Ref": "McpResourceUrl"}
