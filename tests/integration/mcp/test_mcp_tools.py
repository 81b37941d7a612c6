"""The three tools through the real ``mcp`` handler with a signed MCP token, on moto and the MemOS emulator:
``search`` is ``/recall`` (the caller's scope only, its limit), ``fetch`` re-checks access, a team's KB is
attributed with its team, and ``list_knowledge_bases`` splits the caller's KBs by recall."""

from __future__ import annotations

import json
from http import HTTPStatus

import pytest

from tests.support.mcp_world import QUERY, McpCaller, create_kb, markers_in, register
from tests.support.teams import share_with_team
from tests.support.teams_api import create_team, join


@pytest.fixture
def world(mcp):
    """alice owns A; bob owns B, shared with alice; carol owns C, shared with nobody."""
    register(mcp, "alice", "bob", "carol")
    kbs = {owner: create_kb(mcp, owner) for owner in ("alice", "bob", "carol")}
    reply = mcp.call("POST", f"/knowledge-bases/{kbs['bob']}/members", "bob", body={"identifier": "alice"})
    assert reply.status == HTTPStatus.CREATED, reply.body
    return kbs


def test_search_finds_the_callers_own_and_shared_kbs_and_nothing_else(mcp, world, mcp_key):
    result = McpCaller(mcp, mcp_key, "alice").result("search", {"query": QUERY})

    assert result["isError"] is False
    found = result["structuredContent"]["results"]
    assert markers_in(found) == {"alice", "bob"}
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
    by_kb = {r["knowledge_base"]["id"]: r for r in found}
    assert set(by_kb) == {world["alice"], world["bob"]}
    shared = by_kb[world["bob"]]
    assert shared["sharer"] == {"name": "Bob", "contact": shared["sharer"]["contact"]}
    assert by_kb[world["alice"]]["sharer"] is None
    for r in found:
        assert (r["url"], r["team"]) == (None, None)
        assert r["title"] == r["knowledge_base"]["name"]  # no file named without fingerprints


def test_fetch_returns_a_result_by_its_id_with_its_source(mcp, world, mcp_key):
    alice = McpCaller(mcp, mcp_key, "alice")
    first = alice.result("search", {"query": QUERY})["structuredContent"]["results"][0]

    fetched = alice.result("fetch", {"id": first["id"]})["structuredContent"]

    assert fetched == {
        "id": first["id"],
        "title": first["title"],
        "text": first["text"],
        "url": None,
        "metadata": {k: first[k] for k in ("knowledge_base", "sharer", "team", "file")},
    }


def test_a_kb_unshared_between_search_and_fetch_is_not_returned(mcp, world, mcp_key):
    alice = McpCaller(mcp, mcp_key, "alice")
    found = alice.result("search", {"query": QUERY})["structuredContent"]["results"]
    shared = next(r for r in found if r["knowledge_base"]["id"] == world["bob"])
    own = next(r for r in found if r["knowledge_base"]["id"] == world["alice"])

    reply = mcp.call("DELETE", f"/knowledge-bases/{world['bob']}/members/alice", "bob")
    assert reply.status == HTTPStatus.NO_CONTENT, reply.body

    refused = alice.result("fetch", {"id": shared["id"]})
    assert refused["isError"] is True
    assert refused["content"][0]["text"] == "No result with this id: search again."
    assert "BRAVO2" not in json.dumps(refused, ensure_ascii=False)
    assert alice.result("fetch", {"id": own["id"]})["isError"] is False


def test_another_users_result_ids_resolve_to_nothing(mcp, world, mcp_key):
    found = McpCaller(mcp, mcp_key, "alice").result("search", {"query": QUERY})["structuredContent"][
        "results"
    ]

    refused = McpCaller(mcp, mcp_key, "carol").result("fetch", {"id": found[0]["id"]})

    assert refused["isError"] is True


def test_a_kb_read_through_a_team_is_attributed_with_the_team(mcp, mcp_key):
    register(mcp, "alice", "dave")
    kb = create_kb(mcp, "alice")
    team = create_team(mcp, "alice", "销售部")
    join(mcp, team, "dave")
    assert share_with_team(mcp, kb, team).status in (HTTPStatus.OK, HTTPStatus.CREATED)

    found = McpCaller(mcp, mcp_key, "dave").result("search", {"query": QUERY})["structuredContent"]["results"]

    assert found
    assert all(r["team"] == {"id": team, "name": "销售部"} for r in found)
    listed = McpCaller(mcp, mcp_key, "dave").result("list_knowledge_bases")["structuredContent"]
    assert [(k["id"], k["team"]) for k in listed["in_recall"]] == [(kb, {"id": team, "name": "销售部"})]


def test_an_id_outside_the_scope_is_a_tool_error_and_memos_is_not_asked(mcp, world, mcp_key):
    searches = mcp.memos.calls("/search/memory")

    result = McpCaller(mcp, mcp_key, "alice").result(
        "search", {"query": QUERY, "knowledge_base_ids": [world["carol"]]}
    )

    assert result["isError"] is True
    assert "not in your recall scope" in result["content"][0]["text"]
    assert mcp.memos.calls("/search/memory") == searches


def test_bad_arguments_are_a_tool_error_the_model_can_correct(mcp, world, mcp_key):
    alice = McpCaller(mcp, mcp_key, "alice")
    for arguments in (
        {},
        {"query": ""},
        {"query": "x" * 4001},
        {"query": "q", "extra": 1},
        {"query": "q", "knowledge_base_ids": ["a", "a"]},
    ):
        reply = alice.call("search", arguments)
        assert reply.body["result"]["isError"] is True, arguments


def test_list_knowledge_bases_splits_the_callers_kbs_by_recall(mcp, world, mcp_key):
    reply = mcp.call("PUT", f"/knowledge-bases/{world['bob']}/recall", "alice", body={"enabled": False})
    assert reply.status == HTTPStatus.OK, reply.body

    listed = McpCaller(mcp, mcp_key, "alice").result("list_knowledge_bases")["structuredContent"]

    assert listed["in_recall"] == [
        {"id": world["alice"], "name": "alice 的资料", "owner": None, "team": None}
    ]
    (shared,) = listed["not_in_recall"]
    assert (shared["id"], shared["owner"]["name"], shared["team"]) == (world["bob"], "Bob", None)


def test_past_the_recall_limit_search_is_a_tool_error(mcp, world, mcp_key, monkeypatch):
    from memmy_kb.composition import reset_composition

    monkeypatch.setenv("RECALL_BURST", "2")
    monkeypatch.setenv("RECALL_RATE_PER_SECOND", "0.01")
    monkeypatch.setenv("RECALL_LIMIT_WINDOW_SECONDS", "3600")
    reset_composition()
    alice = McpCaller(mcp, mcp_key, "alice")
    assert [alice.result("search", {"query": QUERY})["isError"] for _ in range(2)] == [False, False]
    searches = mcp.memos.calls("/search/memory")

    limited = alice.result("search", {"query": QUERY})

    assert limited["isError"] is True
    assert limited["content"][0]["text"].startswith("Too many recalls for this account just now")
    assert mcp.memos.calls("/search/memory") == searches
