"""``memmy-kb mcp`` spawned as an agent spawns it (the SDK's stdio client, only ``MEMMY_KB_HOME`` set), in
front of a STAND-IN for the desktop service.

``StandInService`` stands in for ``memmy-kb desktop serve`` until the service has the two hook-token routes
the MCP server uses (``GET /hook/knowledge-bases``, ``POST /hook/search``, as ``mcp_service`` describes
them). It serves just those, on 127.0.0.1, checks the hook token as the service does (401 for another
token, 403 ``hook_token_not_allowed`` elsewhere) and refuses ids outside the recall scope (422), so a
request that would widen the scope shows up. When the routes land, these tests should run against the
real service too.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.mcp_stand_in import (
    CLOUD_SECRET,
    HOOK_TOKEN,
    MEMMY_KB,
    SCOPE,
    StandInService,
    run_calls,
    standing_in,
    text_of,
)

# ``memmy-kb`` with the server's ``MEMMY_KB_HOME=…``, by name or by path (``home.advice``).
RUNNABLE = r"MEMMY_KB_HOME=\S+ \S*memmy-kb "


@pytest.fixture
def stand_in(tmp_path: Path) -> Iterator[tuple[StandInService, Path]]:
    yield from standing_in(tmp_path)


def test_the_server_lists_its_two_tools_with_their_arguments(stand_in):
    _, home = stand_in
    tools, _ = run_calls(home)
    by_name = {tool.name: tool for tool in tools.tools}
    assert set(by_name) == {"search_knowledge", "list_knowledge_bases"}
    schema = by_name["search_knowledge"].input_schema
    assert schema["required"] == ["query"]
    assert set(schema["properties"]) == {"query", "knowledge_bases", "limit"}
    limit = schema["properties"]["limit"]
    assert (limit["type"], limit["minimum"], limit["maximum"]) == ("integer", 1, 25)
    assert schema["properties"]["query"]["type"] == "string"
    assert by_name["search_knowledge"].annotations.read_only_hint is True


def test_search_lists_and_narrowing_by_name_with_the_hook_token_only(stand_in):
    service, home = stand_in
    _, (everything, narrowed, by_id, listed) = run_calls(
        home,
        ("search_knowledge", {"query": "报销", "limit": 2}),
        ("search_knowledge", {"query": "colours", "knowledge_bases": ["design notes"]}),
        ("search_knowledge", {"query": "notes", "knowledge_bases": ["kb_notes_2"]}),
        ("list_knowledge_bases", {}),
        # Cloud credentials in the environment the agent passes must never be read or sent.
        extra_env={"MEMMY_KB_TOKEN": CLOUD_SECRET, "MEMMY_KB_ENDPOINT": "http://127.0.0.1:9"},
    )

    assert not everything.is_error
    assert [e["title"] for e in everything.structured_content["excerpts"]] == ["Expenses", "Colours"]
    assert "报销需要发票原件。" in text_of(everything)
    assert "Knowledge base: 'Design notes', shared by Bob Li, b***@example.com\n" in text_of(everything)
    design = everything.structured_content["excerpts"][1]
    assert design["knowledge_base"] == {"id": "kb_design", "name": "Design notes"}
    assert design["owner"]["name"] == "Bob Li"

    assert [e["title"] for e in narrowed.structured_content["excerpts"]] == ["Colours"]
    assert [e["title"] for e in by_id.structured_content["excerpts"]] == ["Tuesday"]

    assert not listed.is_error
    assert listed.structured_content["knowledge_bases"] == SCOPE
    assert "Design notes (id kb_design, shared by Bob Li, b***@example.com)" in text_of(listed)

    searches = [json.loads(r["body"]) for r in service.requests if r["path"] == "/hook/search"]
    assert searches == [
        {"query": "报销", "limit": 2},
        {"query": "colours", "knowledge_base_ids": ["kb_design"]},
        {"query": "notes", "knowledge_base_ids": ["kb_notes_2"]},
    ]
    assert {r["path"] for r in service.requests} == {"/hook/search", "/hook/knowledge-bases"}
    assert all(r["headers"]["Authorization"] == f"Bearer {HOOK_TOKEN}" for r in service.requests)
    assert not any(CLOUD_SECRET in json.dumps(r, default=str) for r in service.requests)


def test_a_knowledge_base_outside_the_scope_is_a_tool_error_naming_it(stand_in):
    service, home = stand_in
    _, (outside, ambiguous, empty) = run_calls(
        home,
        ("search_knowledge", {"query": "q", "knowledge_bases": ["Handbook", "Someone else's KB"]}),
        ("search_knowledge", {"query": "q", "knowledge_bases": ["Notes"]}),
        ("search_knowledge", {"query": "   "}),
    )
    assert outside.is_error
    assert 'Not a knowledge base in your recall: "Someone else\'s KB"' in text_of(outside)
    assert "Handbook (id kb_hand, yours)" in text_of(outside)
    assert ambiguous.is_error
    assert "'Notes' names 2 knowledge bases: give the id" in text_of(ambiguous)
    assert "kb_notes_1" in text_of(ambiguous)
    assert "kb_notes_2" in text_of(ambiguous)
    assert empty.is_error
    assert "The query is empty" in text_of(empty)
    # None of them reached the search route: the scope was never widened, not even asked to be.
    assert not [r for r in service.requests if r["path"] == "/hook/search"]


def test_a_refused_hook_token_and_a_logged_out_service_are_clear_errors(stand_in):
    service, home = stand_in
    service.token = "mkh_another-token"
    _, (refused,) = run_calls(home, ("search_knowledge", {"query": "q"}))
    assert refused.is_error
    assert "refused the hook token in" in text_of(refused)
    assert "(401 unauthorized)" in text_of(refused)

    service.token, service.cloud = HOOK_TOKEN, "logged_out"
    _, (logged_out,) = run_calls(home, ("search_knowledge", {"query": "q"}))
    assert logged_out.is_error
    # The command as the person can run it: with the server's home, by its path when not on PATH.
    assert re.search(rf"not logged in: run `{RUNNABLE}desktop login`", text_of(logged_out))


def test_a_search_past_the_accounts_recall_limit_says_so_and_when_to_ask_again(stand_in):
    service, home = stand_in
    service.cloud, service.retry_after = "rate_limited", 4
    _, (limited,) = run_calls(home, ("search_knowledge", {"query": "q"}))
    assert limited.is_error
    assert text_of(limited) == (
        "No excerpts this time: Memmy limits how often one account may search, and yours has searched more "
        "than its limit allows just now (your agents' turns and searches together). This is not an error in "
        "your setup; try again in 4 s."
    )


def test_no_desktop_service_is_a_clear_error(stand_in, tmp_path):
    _, home = stand_in
    _, (no_record,) = run_calls(tmp_path / "elsewhere", ("list_knowledge_bases", {}))
    assert no_record.is_error
    assert "The Memmy desktop service is not running for" in text_of(no_record)
    assert re.search(rf"start it with `{RUNNABLE}desktop serve`", text_of(no_record))

    # A service.json left behind by a service that is gone: nothing listens on its port.
    (home / "desktop" / "service.json").write_text(json.dumps({"port": 9}))
    _, (gone,) = run_calls(home, ("search_knowledge", {"query": "q"}))
    assert gone.is_error
    assert re.search(rf"is not answering: start it with `{RUNNABLE}desktop serve`", text_of(gone))


def test_stdout_carries_protocol_frames_only(stand_in):
    # Given an agent's session: initialize, list the tools, call both
    _, home = stand_in
    frames = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "search_knowledge", "arguments": {"query": "报销"}},
        },
        {
            "jsonrpc": "2.0",
            "id": 4,
            "method": "tools/call",
            "params": {"name": "list_knowledge_bases", "arguments": {}},
        },
    ]
    # When the frames are written to `memmy-kb mcp` and its stdout read: stdin stays open until every answer
    # is in (at end of input the server stops, dropping calls in flight); a watchdog kills a server that hangs.
    server = subprocess.Popen(  # noqa: S603 - our own console script
        [MEMMY_KB, "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={"MEMMY_KB_HOME": str(home), "PATH": os.defpath},
    )
    watchdog = threading.Timer(60, server.kill)
    watchdog.start()
    try:
        assert server.stdin is not None
        assert server.stdout is not None
        server.stdin.write("".join(json.dumps(frame) + "\n" for frame in frames).encode())
        server.stdin.flush()
        replies = []
        while len([reply for reply in replies if "id" in reply]) < 4:
            line = server.stdout.readline()
            assert line, "the server closed stdout early"
            replies.append(json.loads(line))  # every line on stdout is one JSON-RPC frame
        server.stdin.close()
        rest = server.stdout.read()
        stderr = server.stderr.read() if server.stderr else b""
        assert server.wait(timeout=30) == 0
    finally:
        watchdog.cancel()
        server.kill()
    # Then stdout held JSON-RPC frames only, one answer to each call
    assert rest == b""
    assert all(reply["jsonrpc"] == "2.0" for reply in replies)
    by_id = {reply["id"]: reply for reply in replies if "id" in reply}
    assert sorted(by_id) == [1, 2, 3, 4]
    assert by_id[3]["result"]["isError"] is False
    assert by_id[3]["result"]["structuredContent"]["excerpts"][0]["title"] == "Expenses"
    assert by_id[4]["result"]["isError"] is False
    # The log went to stderr: one line per call to the service, without the query.
    assert b"POST /hook/search 200" in stderr
    assert "报销".encode() not in stderr
