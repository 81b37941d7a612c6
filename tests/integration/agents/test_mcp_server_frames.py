"""``memmy-kb mcp`` driven with raw bytes on its stdin, in front of the stand-in for the desktop service
(tests/support/mcp_stand_in.py): every bad frame gets exactly one JSON-RPC error and the server
keeps serving; the tools' arguments are checked strictly (``mcp_frames``, ``mcp_arguments``)."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.mcp_stand_in import MEMMY_KB, StandInService, standing_in


@pytest.fixture
def stand_in(tmp_path: Path) -> Iterator[tuple[StandInService, Path]]:
    yield from standing_in(tmp_path)


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
