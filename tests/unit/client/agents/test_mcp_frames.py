"""``mcp_frames``: each line the SDK's stdio transport would drop unanswered gets its JSON-RPC error here,
and what passes is a frame the SDK's own parser reads (``accept`` is that parser, as the server wires it).
The server's answers over stdio are tests/integration/agents/test_mcp_server.py's."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from mcp.types import JSONRPCNotification, jsonrpc_message_adapter

from memmy_kb_client.agents.mcp_frames import (
    INVALID_REQUEST,
    MAX_DEPTH,
    MAX_FRAME_BYTES,
    MAX_ID,
    PARSE_ERROR,
    FrameRefused,
    check_frame,
    read_frames,
)


def sdk_accepts(frame: str) -> bool:
    try:
        jsonrpc_message_adapter.validate_json(frame, by_name=False)
    except ValueError:
        return False
    return True


def refusal(line: bytes) -> dict[str, Any]:
    with pytest.raises(FrameRefused) as refused:
        check_frame(line, sdk_accepts)
    return refused.value.response()


def nested(depth: int) -> bytes:
    return (
        b'{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"a":'
        + b"[" * (depth - 2)
        + b"]" * (depth - 2)
        + b"}}"
    )


# Lines the SDK's transport alone leaves unanswered: its parser refuses them (and the server drops the
# error), or it takes them for a notification (an unusable id is ignored).
DROPPED_BY_THE_SDK = [
    (b"hello", PARSE_ERROR, None),
    (b'{"jsonrpc":"2.0","id":1,"method":"tools/list"', PARSE_ERROR, None),
    (b'[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]', INVALID_REQUEST, None),  # a batch
    (b"[]", INVALID_REQUEST, None),
    (b"42", INVALID_REQUEST, None),
    (b'{"jsonrpc":"2.0","id":' + b"9" * 5000 + b',"method":"tools/list"}', INVALID_REQUEST, None),
    (b'{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}', INVALID_REQUEST, None),
    (b'{"jsonrpc":"2.0","id":1.0,"method":"tools/list"}', INVALID_REQUEST, None),
    (b'{"jsonrpc":"2.0","id":null,"method":"tools/list"}', INVALID_REQUEST, None),
    (b'{"jsonrpc":"2.0","id":true,"method":"tools/list"}', INVALID_REQUEST, None),
    (b'{"jsonrpc":"2.0","id":"\\ud800","method":"tools/list"}', INVALID_REQUEST, None),
    (nested(5000), INVALID_REQUEST, None),  # past the parsers' own recursion limits
    (b'{"id":4,"method":"tools/list"}', INVALID_REQUEST, 4),
    (b'{"jsonrpc":"1.0","id":"a","method":"tools/list"}', INVALID_REQUEST, "a"),
    (b'{"jsonrpc":"2.0","id":5,"method":"tools/list","params":[]}', INVALID_REQUEST, 5),
    (b'{"jsonrpc":"2.0","method":5}', INVALID_REQUEST, None),
    (b"{}", INVALID_REQUEST, None),
]
# What the SDK would take, but the filter's documented limits refuse.
BEYOND_THE_LIMITS = [
    (b'{"jsonrpc":"2.0","id":9007199254740992,"method":"tools/list"}', INVALID_REQUEST, None),
    (b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"a":NaN}}', PARSE_ERROR, None),
    (nested(MAX_DEPTH + 1), INVALID_REQUEST, 7),
    (b'{"jsonrpc":"2.0","id":3,"method":"x","params":{"n":' + b"1" * 101 + b"}}", INVALID_REQUEST, 3),
    (b'{"jsonrpc":"2.0","id":3,"method":"x","params":{"n":1e999}}', INVALID_REQUEST, 3),
]


@pytest.mark.parametrize(("line", "code", "request_id"), DROPPED_BY_THE_SDK + BEYOND_THE_LIMITS)
def test_a_line_that_is_no_usable_frame_gets_one_json_rpc_error(line, code, request_id):
    answer = refusal(line)
    assert answer["jsonrpc"] == "2.0"
    assert answer["error"]["code"] == code
    assert answer["id"] == request_id
    assert answer["error"]["message"].endswith(".")


@pytest.mark.parametrize(("line", "code", "request_id"), DROPPED_BY_THE_SDK)
def test_the_sdk_alone_would_leave_each_of_them_unanswered(line, code, request_id):
    try:
        parsed = jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValueError:
        return  # handed to the session as an exception, which the server drops
    assert isinstance(parsed, JSONRPCNotification)


def test_the_limits_are_inclusive():
    at_depth = check_frame(nested(MAX_DEPTH), sdk_accepts)
    assert at_depth is not None
    assert json.loads(at_depth)["id"] == 7
    for request_id in (MAX_ID, -MAX_ID, "x" * 1000):
        frame = check_frame(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "ping"}).encode())
        assert frame is not None
        assert json.loads(frame)["id"] == request_id


def test_what_passes_is_the_checked_frame_on_one_line_with_lone_surrogates_replaced():
    line = b'{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"s","arguments":{"query":"a\\ud800b \\ud83d\\ude00","\\udc00":1}}}\r\n'
    frame = check_frame(line, sdk_accepts)
    assert frame is not None
    assert "\n" not in frame
    assert json.loads(frame)["params"]["arguments"] == {"query": "a\ufffdb \U0001f600", "\ufffd": 1}
    assert sdk_accepts(frame)
    # A limit too large to take is still the tool's to refuse, in its own words.
    huge = (
        b'{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"arguments":{"limit":' + b"9" * 100 + b"}}}"
    )
    assert json.loads(check_frame(huge) or "")["params"]["arguments"]["limit"] == int("9" * 100)


def test_blank_lines_are_no_frames_and_bytes_that_are_not_utf8_are_replaced():
    assert check_frame(b"  \r\n") is None
    assert check_frame(b"\n") is None
    frame = check_frame(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"\xff"}}\n', sdk_accepts)
    assert json.loads(frame or "")["params"]["x"] == "\ufffd"


class Lines:
    """``BufferedReader.readline(size)`` over fixed bytes, counting the bytes each call returns."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.biggest = 0

    async def readline(self, size: int) -> bytes:
        end = self.data.find(b"\n")
        end = len(self.data) if end < 0 else end + 1
        line, self.data = self.data[: min(end, size)], self.data[min(end, size) :]
        self.biggest = max(self.biggest, len(line))
        return line


def run_filter(data: bytes) -> tuple[list[str], list[dict[str, Any]], Lines]:
    source, answers = Lines(data), []

    async def answer(response: dict[str, Any]) -> None:
        answers.append(response)

    async def collect() -> list[str]:
        return [frame async for frame in read_frames(source.readline, answer, sdk_accepts)]

    return anyio.run(collect), answers, source


def frames(*ids: int) -> Iterator[bytes]:
    for request_id in ids:
        yield json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "ping"}).encode() + b"\n"


def test_an_oversized_line_is_skipped_whole_with_one_error_and_the_next_one_read():
    oversized = (
        b'{"jsonrpc":"2.0","id":2,"method":"ping","params":{"x":"' + b"a" * (3 * MAX_FRAME_BYTES) + b'"}}\n'
    )
    passed, answers, source = run_filter(b"".join([next(frames(1)), oversized, b"\n", *frames(3, 4)]))
    assert [json.loads(frame)["id"] for frame in passed] == [1, 3, 4]
    assert answers == [
        {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": INVALID_REQUEST, "message": "The frame is longer than 1,048,576 bytes."},
        }
    ]
    assert source.biggest == MAX_FRAME_BYTES + 1


def test_a_line_of_exactly_the_limit_passes_and_a_last_line_without_newline_too():
    head = b'{"jsonrpc":"2.0","id":2,"method":"ping","params":{"x":"'
    exact = head + b"a" * (MAX_FRAME_BYTES - len(head) - 3) + b'"}}'
    assert len(exact) == MAX_FRAME_BYTES
    passed, answers, _ = run_filter(exact + b"\n" + b'{"jsonrpc":"2.0","id":3,"method":"ping"}')
    assert answers == []
    assert [json.loads(frame)["id"] for frame in passed] == [2, 3]
    passed, answers, _ = run_filter(exact[:-3] + b'a"}}\n')
    assert passed == []
    assert answers[0]["error"]["message"] == "The frame is longer than 1,048,576 bytes."


def test_each_bad_line_gets_exactly_one_answer_between_good_ones():
    bad = [b"hello\n", b"[1]\n", b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}\n', nested(200) + b"\n"]
    data = b"".join(frame for pair in zip(frames(1, 2, 3, 4), bad, strict=True) for frame in pair)
    passed, answers, _ = run_filter(data + next(frames(5)))
    assert [json.loads(frame)["id"] for frame in passed] == [1, 2, 3, 4, 5]
    assert [(a["id"], a["error"]["code"]) for a in answers] == [
        (None, PARSE_ERROR),
        (None, INVALID_REQUEST),
        (None, INVALID_REQUEST),
        (7, INVALID_REQUEST),
    ]


def test_a_response_is_never_answered_even_one_that_is_refused():
    """A response (``result`` or ``error``, no ``method``) is not a request: answering one that cannot be
    read with an error would have two peers that both do so answer each other for ever. The agent's own
    error with id null (for a line of ours it could not read) is what JSON-RPC has it send."""
    responses = [
        b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}\n',
        b'{"jsonrpc":"2.0","id":2.5,"result":{}}\n',
        b'{"jsonrpc":"2.0","id":true,"error":{"code":-32600,"message":"x"}}\n',
        b'{"jsonrpc":"2.0","id":3,"result":{"n":1e999}}\n',
        b'{"jsonrpc":"2.0","id":3,"result":' + b"[" * 100 + b"]" * 100 + b"}\n",
        b'{"jsonrpc":"2.0","id":4,"result":"not an object"}\n',
    ]
    data = b"".join(frame for pair in zip(frames(1, 2, 3, 4, 5, 6), responses, strict=True) for frame in pair)
    passed, answers, _ = run_filter(data + next(frames(7)))
    assert [json.loads(frame)["id"] for frame in passed] == [1, 2, 3, 4, 5, 6, 7]
    assert answers == []
    # A request or a notification that is refused is still answered, whatever else it carries.
    _, answers, _ = run_filter(b'{"jsonrpc":"2.0","id":8,"method":"ping","result":{"n":1e999}}\n')
    assert [(a["id"], a["error"]["code"]) for a in answers] == [(8, INVALID_REQUEST)]
