"""``memmy_kb.api.mcp``: the transport's rules before any protocol generation is chosen: POST only, JSON
accepted and sent, one JSON-RPC message per body, notifications acknowledged, foreign origins refused."""

from __future__ import annotations

import json
from http import HTTPStatus

import pytest

from memmy_kb.api.mcp import origin_refusal
from memmy_kb.api.mcp.wire import MAX_BODY_BYTES
from tests.support.mcp_protocol import JSON_ACCEPT, MODERN, modern_headers, send

HEADERS = {"accept": JSON_ACCEPT, "content-type": "application/json"}
PING = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()


@pytest.mark.parametrize("method", ["GET", "DELETE", "PUT", "PATCH", "OPTIONS", "HEAD"])
def test_only_post_is_served_anything_else_is_405_allowing_post(method):
    answer = send(b"", HEADERS, method=method)
    assert (answer.status, answer.headers.get("Allow"), answer.body) == (
        HTTPStatus.METHOD_NOT_ALLOWED,
        "POST",
        None,
    )


@pytest.mark.parametrize(
    "accept",
    [
        "application/json",
        "application/json, text/event-stream",
        "text/event-stream, application/*",
        "*/*",
        "APPLICATION/JSON; q=0.5",
        "text/html, application/json;q=0.1",
    ],
)
def test_an_accept_that_allows_json_is_served(accept):
    assert send(PING, {**HEADERS, "accept": accept}).status == HTTPStatus.OK


@pytest.mark.parametrize(
    "accept",
    [None, "", "text/event-stream", "text/html, text/*", "application/json;q=0", "application/jsonx"],
)
def test_an_accept_without_json_is_406(accept):
    headers = {"content-type": "application/json"} | ({} if accept is None else {"accept": accept})
    answer = send(PING, headers)
    assert answer.status == HTTPStatus.NOT_ACCEPTABLE
    assert answer.error["message"] == "The Accept header must allow application/json."


@pytest.mark.parametrize("content_type", ["application/json", "Application/JSON; charset=utf-8"])
def test_a_json_content_type_in_any_spelling_is_served(content_type):
    assert send(PING, {**HEADERS, "content-type": content_type}).status == HTTPStatus.OK


@pytest.mark.parametrize(
    "content_type",
    [None, "", "text/plain", "application/x-www-form-urlencoded", "application/json, text/plain"],
)
def test_a_body_not_sent_as_json_is_415(content_type):
    headers = {"accept": JSON_ACCEPT} | ({} if content_type is None else {"content-type": content_type})
    answer = send(PING, headers)
    assert answer.status == HTTPStatus.UNSUPPORTED_MEDIA_TYPE
    assert answer.error["message"] == "The body must be sent as application/json."


def test_a_body_over_the_cap_is_413_and_one_at_the_cap_is_read():
    padded = {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": ""}}
    room = MAX_BODY_BYTES - len(json.dumps(padded).encode())
    padded["params"]["pad"] = "x" * room
    at_cap = json.dumps(padded).encode()
    assert len(at_cap) == MAX_BODY_BYTES
    assert send(at_cap, HEADERS).status == HTTPStatus.OK
    assert send(at_cap + b" ", HEADERS).status == HTTPStatus.REQUEST_ENTITY_TOO_LARGE


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"{",
        b"not json",
        b'{"jsonrpc": "2.0", "id": 1,}',
        b"\xff\xfe\x00garbage",
        b"[" * 50_000,
        b'{"id": 1, "n": 1' + b"1" * 5000 + b"}",
    ],
)
def test_a_body_that_is_not_json_is_a_parse_error_without_an_id(body):
    answer = send(body, HEADERS)
    assert answer.status == HTTPStatus.BAD_REQUEST
    assert answer.body == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32700, "message": "The body is not JSON."},
    }


@pytest.mark.parametrize(
    ("body", "request_id"),
    [
        ([{"jsonrpc": "2.0", "id": 1, "method": "ping"}], None),
        ([], None),
        ("ping", None),
        (42, None),
        ({"jsonrpc": "2.0", "id": None, "method": "ping"}, None),
        ({"jsonrpc": "2.0", "id": True, "method": "ping"}, None),
        ({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}, None),
        ({"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}, None),
        ({"jsonrpc": "1.0", "id": 3, "method": "ping"}, 3),
        ({"id": 3, "method": "ping"}, 3),
        ({"jsonrpc": "2.0", "id": "r", "method": 7}, "r"),
        ({"jsonrpc": "2.0", "id": "r", "method": "tools/list", "params": [1]}, "r"),
        ({"jsonrpc": "2.0", "id": 4, "result": {}}, 4),
        ({"jsonrpc": "2.0", "id": 4, "error": {"code": 1, "message": "x"}}, 4),
        ({"jsonrpc": "2.0", "method": 5}, None),
        ({"jsonrpc": "2.0", "result": {}}, None),
    ],
)
def test_anything_but_one_request_or_notification_is_an_invalid_request(body, request_id):
    answer = send(json.dumps(body).encode(), HEADERS)
    assert answer.status == HTTPStatus.BAD_REQUEST
    assert answer.body is not None
    assert answer.body["id"] == request_id
    assert answer.error["code"] == -32600


def test_a_batch_is_refused_in_a_sentence():
    answer = send(b'[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]', HEADERS)
    assert answer.error["message"] == "Batches are not accepted: send one JSON-RPC request per POST."


@pytest.mark.parametrize(
    "headers",
    [
        HEADERS,
        {**HEADERS, "mcp-protocol-version": "2025-06-18", "mcp-session-id": "abc"},
        modern_headers("notifications/cancelled", {}),
    ],
)
@pytest.mark.parametrize(
    "method", ["notifications/initialized", "notifications/cancelled", "notifications/whatever"]
)
def test_a_notification_is_accepted_with_202_and_no_body(headers, method):
    answer = send(json.dumps({"jsonrpc": "2.0", "method": method, "params": {}}).encode(), headers)
    assert (answer.status, answer.body) == (HTTPStatus.ACCEPTED, None)


def test_a_notification_naming_a_version_we_do_not_speak_is_told_which_we_do():
    headers = {**HEADERS, "mcp-protocol-version": "2099-01-01"}
    answer = send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}', headers)
    assert answer.status == HTTPStatus.BAD_REQUEST
    assert answer.body is not None
    assert answer.body["id"] is None
    assert answer.error["code"] == -32022
    assert answer.error["data"] == {
        "supported": [MODERN, "2025-11-25", "2025-06-18", "2025-03-26"],
        "requested": "2099-01-01",
    }


def test_every_json_answer_says_so_and_is_not_cached():
    answer = send(PING, HEADERS)
    assert answer.headers == {"Content-Type": "application/json", "Cache-Control": "no-store"}


ALLOWED = frozenset({"https://claude.ai", "http://127.0.0.1:8080"})


@pytest.mark.parametrize(
    "headers", [{}, {"origin": "https://claude.ai"}, {"origin": "http://127.0.0.1:8080"}]
)
def test_a_request_without_origin_or_from_a_listed_one_passes(headers):
    assert origin_refusal(headers, ALLOWED) is None


@pytest.mark.parametrize(
    "origin",
    [
        "https://evil.example",
        "null",
        "",
        "https://claude.ai.evil.example",
        "http://claude.ai",
        "http://127.0.0.1:8081",
    ],
)
def test_a_request_from_any_other_origin_is_403(origin):
    refusal = origin_refusal({"origin": origin}, ALLOWED)
    assert refusal is not None
    assert refusal.status == HTTPStatus.FORBIDDEN
    body = json.loads(refusal.body)
    assert body["id"] is None
    assert body["error"]["message"] == "Requests from this origin may not call the MCP endpoint."
