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
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.support.desktop_proof import proof_reply

HOOK_TOKEN = "mkh_standin-token-for-tests"
CLOUD_SECRET = "cloud-login-that-must-never-travel"
MEMMY_KB = str(Path(sys.executable).with_name("memmy-kb"))

SCOPE = [
    {"id": "kb_hand", "name": "Handbook", "owned": True, "owner": None},
    {
        "id": "kb_design",
        "name": "Design notes",
        "owned": False,
        "owner": {"name": "Bob Li", "contact": "b***@example.com"},
    },
    {"id": "kb_notes_1", "name": "Notes", "owned": True, "owner": None},
    {"id": "kb_notes_2", "name": "Notes", "owned": False, "owner": {"name": "Carol", "contact": None}},
]
EXCERPTS = {
    "kb_hand": {"title": "Expenses", "text": "报销需要发票原件。"},
    "kb_design": {"title": "Colours", "text": "The brand blue is #1d4ed8."},
    "kb_notes_1": {"title": "Monday", "text": "Standup at ten."},
    "kb_notes_2": {"title": "Tuesday", "text": "Retro at four."},
}


@dataclass
class StandInService:
    """Stands in for the desktop service's hook routes until they land (see the module's docstring)."""

    token: str = HOOK_TOKEN
    cloud: str = "ok"
    requests: list[dict[str, Any]] = field(default_factory=list)
    port: int = 0

    def answer(self, method: str, path: str, headers: Any, body: bytes) -> tuple[int, dict[str, Any]]:
        # The MCP server asks the service to prove itself first; the stand-in proves it holds the token
        # in the file, so that a bearer it then refuses (``token`` changed) shows the 401's sentence.
        proven = proof_reply(path, {"hook": HOOK_TOKEN}, self.port)
        if proven is not None:
            return 200, proven
        self.requests.append({"method": method, "path": path, "headers": dict(headers), "body": body})
        route = (method, path)
        if headers.get("Authorization") != f"Bearer {self.token}":
            return 401, {"error": {"code": "unauthorized", "message": "unknown token"}}
        if route == ("GET", "/hook/knowledge-bases"):
            return 200, {"knowledge_bases": SCOPE}
        if route != ("POST", "/hook/search"):
            return 403, {"error": {"code": "hook_token_not_allowed", "message": "not with the hook token"}}
        request = json.loads(body)
        if self.cloud != "ok":
            return 200, {"excerpts": [], "partial": False, "cloud": self.cloud}
        ids = request.get("knowledge_base_ids")
        in_scope = [kb["id"] for kb in SCOPE]
        if ids is not None and not set(ids) <= set(in_scope):
            return 422, {"error": {"code": "knowledge_base_not_in_scope", "message": "not in scope"}}
        chosen = [kb for kb in SCOPE if ids is None or kb["id"] in ids][: request.get("limit") or 25]
        excerpts = [
            {
                **EXCERPTS[kb["id"]],
                "knowledge_base": {"id": kb["id"], "name": kb["name"]},
                "owner": kb["owner"],
            }
            for kb in chosen
        ]
        return 200, {"excerpts": excerpts, "partial": False, "cloud": "ok"}


def serve(stand_in: StandInService) -> tuple[ThreadingHTTPServer, int]:
    class Handler(BaseHTTPRequestHandler):
        # Kept alive as the service's: the MCP server sends its request on the connection of the proof.
        protocol_version = "HTTP/1.1"

        def _reply(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            status, answer = stand_in.answer(self.command, self.path, self.headers, body)
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = _reply

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    stand_in.port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, server.server_address[1]


@pytest.fixture
def stand_in(tmp_path: Path) -> Iterator[tuple[StandInService, Path]]:
    service = StandInService()
    server, port = serve(service)
    state = tmp_path / "home" / "desktop"
    state.mkdir(parents=True)
    (state / "hook-token").write_text(HOOK_TOKEN + "\n")
    (state / "service.json").write_text(
        json.dumps({"port": port, "url": f"http://127.0.0.1:{port}", "pid": 1})
    )
    yield service, state.parent
    server.shutdown()
    server.server_close()


async def _session_calls(
    home: Path, calls: list[tuple[str, dict[str, Any]]], extra_env: dict[str, str]
) -> Any:
    params = StdioServerParameters(
        command=MEMMY_KB, args=["mcp"], env={"MEMMY_KB_HOME": str(home), **extra_env}
    )
    with open(os.devnull, "w") as errlog:  # the server's stderr is not under test here
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            tools = await session.list_tools()
            results = [await session.call_tool(name, arguments) for name, arguments in calls]
    return tools, results


def run_calls(home: Path, *calls: tuple[str, dict[str, Any]], extra_env: dict[str, str] | None = None) -> Any:
    return anyio.run(_session_calls, home, list(calls), extra_env or {})


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content)


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
    assert "not logged in: run `memmy-kb desktop login`" in text_of(logged_out)


def test_no_desktop_service_is_a_clear_error(stand_in, tmp_path):
    _, home = stand_in
    _, (no_record,) = run_calls(tmp_path / "elsewhere", ("list_knowledge_bases", {}))
    assert no_record.is_error
    assert "The Memmy desktop service is not running for" in text_of(no_record)
    assert "`memmy-kb desktop serve`" in text_of(no_record)

    # A service.json left behind by a service that is gone: nothing listens on its port.
    (home / "desktop" / "service.json").write_text(json.dumps({"port": 9}))
    _, (gone,) = run_calls(home, ("search_knowledge", {"query": "q"}))
    assert gone.is_error
    assert "is not answering: start it with `memmy-kb desktop serve`" in text_of(gone)


def test_stdout_carries_protocol_frames_only(stand_in):
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
    # stdin stays open until every answer is in (at end of input the server stops, dropping calls in
    # flight); a watchdog kills a server that hangs.
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


class RawServer:
    """``memmy-kb mcp`` driven with raw bytes on stdin; each stdout line read with a timeout, so a frame
    left unanswered fails the test instead of hanging it."""

    def __init__(self, home: Path) -> None:
        self.process = subprocess.Popen(  # noqa: S603 - our own console script
            [MEMMY_KB, "mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={"MEMMY_KB_HOME": str(home), "PATH": os.defpath},
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)

    def send(self, raw: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(raw + b"\n")
        self.process.stdin.flush()

    def reply(self, timeout: float = 30) -> dict[str, Any]:
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no answer within {timeout} s") from None
        answer: dict[str, Any] = json.loads(line)
        return answer

    def call(self, request_id: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        frame: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            frame["params"] = params
        self.send(json.dumps(frame).encode())
        answer = self.reply()
        assert answer["id"] == request_id, answer
        return answer

    def close(self) -> int:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            return self.process.wait(timeout=30)
        finally:
            self.process.kill()


@pytest.fixture
def raw_server(stand_in: tuple[StandInService, Path]) -> Iterator[RawServer]:
    server = RawServer(stand_in[1])
    try:
        server.call(
            1,
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        )
        server.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        yield server
    finally:
        server.process.kill()


def _deep(levels: int) -> bytes:
    return (
        b'{"jsonrpc":"2.0","id":40,"method":"tools/list","params":{"a":'
        + b"[" * levels
        + b"]" * levels
        + b"}}"
    )


BAD_FRAMES = {
    "not JSON": (b"this is not json", -32700, None),
    "a batch": (
        b'[{"jsonrpc":"2.0","id":30,"method":"ping"},{"jsonrpc":"2.0","id":31,"method":"ping"}]',
        -32600,
        None,
    ),
    "a 5,000-digit id": (b'{"jsonrpc":"2.0","id":' + b"7" * 5000 + b',"method":"ping"}', -32600, None),
    "a float id": (b'{"jsonrpc":"2.0","id":2.5,"method":"ping"}', -32600, None),
    "a null id": (b'{"jsonrpc":"2.0","id":null,"method":"ping"}', -32600, None),
    "a frame 5,000 levels deep": (_deep(5000), -32600, None),
    "a frame 100 levels deep": (_deep(100), -32600, 40),
    "a frame of 2 MiB": (
        b'{"jsonrpc":"2.0","id":41,"method":"ping","params":{"x":"' + b"x" * (2 << 20) + b'"}}',
        -32600,
        None,
    ),
    "no jsonrpc member": (b'{"id":42,"method":"ping"}', -32600, 42),
    "params that are a list": (b'{"jsonrpc":"2.0","id":43,"method":"ping","params":[1]}', -32600, 43),
}


def test_every_bad_frame_gets_exactly_one_error_and_the_server_keeps_serving(raw_server):
    """Before the frame filter, each of these went unanswered and the agent waited for ever."""
    for number, (name, (raw, code, request_id)) in enumerate(BAD_FRAMES.items(), 100):
        raw_server.send(raw)
        error = raw_server.reply()
        assert error["jsonrpc"] == "2.0", name
        assert error["id"] == request_id, name
        assert error["error"]["code"] == code, name
        assert "result" not in error, name
        # The next line is the next request's answer: exactly one error per bad frame, nothing stuck.
        assert raw_server.call(number, "ping")["result"] == {}, name
    tools = raw_server.call(200, "tools/list")["result"]["tools"]
    assert {tool["name"] for tool in tools} == {"search_knowledge", "list_knowledge_bases"}
    assert raw_server.close() == 0


def _search(raw_server: RawServer, request_id: int, raw_arguments: bytes) -> dict[str, Any]:
    raw_server.send(
        b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"search_knowledge","arguments":%s}}'
        % (request_id, raw_arguments)
    )
    answer = raw_server.reply()
    assert answer["id"] == request_id, answer
    result: dict[str, Any] = answer["result"]
    return result


def test_tool_arguments_are_checked_strictly_and_refused_in_plain_words(stand_in, raw_server):
    service, _ = stand_in
    # A lone surrogate (no UTF-8 can carry it) is searched as U+FFFD, and the answer comes.
    surrogate = _search(raw_server, 10, b'{"query":"a\\ud800b"}')
    assert surrogate["isError"] is False
    assert "for 'a\ufffdb'" in surrogate["content"][0]["text"]
    refusals = {
        b'{"query":"q","limit":true}': "limit must be a whole number from 1 to 25, not true.",
        b'{"query":"q","limit":26}': "limit must be a whole number from 1 to 25, not 26.",
        b'{"query":"q","limit":"2"}': 'limit must be a whole number from 1 to 25, not "2".',
        b"{}": "search_knowledge needs a query: the words to search for, as a string.",
        b'{"query":7}': "The query must be a string of words to search for, not 7.",
        b'{"query":"q","knowledge_base":"Handbook"}': 'search_knowledge takes query, knowledge_bases, limit; not "knowledge_base".',
    }
    for number, (arguments, sentence) in enumerate(refusals.items(), 11):
        refused = _search(raw_server, number, arguments)
        assert refused["isError"] is True, arguments
        assert refused["content"][0]["text"] == sentence
    assert raw_server.close() == 0
    searched = [json.loads(r["body"])["query"] for r in service.requests if r["path"] == "/hook/search"]
    assert searched == ["a\ufffdb"]
