"""``memmy_kb.api.mcp``: MCP 2026-07-28 served statelessly: the envelope, the request-metadata headers
against the body (plain and base64), the version, the methods, and what every result carries."""

from __future__ import annotations

import json
from http import HTTPStatus

import pytest

from memmy_kb.api.mcp.headers import decode_header_value
from tests.support.mcp_protocol import (
    JSON_ACCEPT,
    MODERN,
    SERVER,
    b64,
    modern,
    modern_headers,
    modern_meta,
    send,
)

SUPPORTED = [MODERN, "2025-11-25", "2025-06-18", "2025-03-26"]
SERVER_INFO = {
    "io.modelcontextprotocol/serverInfo": {
        "name": "memmy-kb",
        "version": "1.2.3",
        "title": "Memmy knowledge bases",
    }
}


def test_server_discover_names_the_versions_the_capabilities_and_the_server():
    answer = modern("server/discover")
    assert answer.status == HTTPStatus.OK
    assert answer.result == {
        "supportedVersions": SUPPORTED,
        "capabilities": {"tools": {"listChanged": False}},
        "instructions": SERVER.instructions,
        "ttlMs": 300_000,
        "cacheScope": "private",
        "resultType": "complete",
        "_meta": SERVER_INFO,
    }


def test_tools_list_is_sorted_by_name_and_cacheable_only_by_its_caller():
    result = modern("tools/list").result
    assert [tool["name"] for tool in result["tools"]] == [
        "crash",
        "rate_limited",
        "refuse",
        "search",
        "名前 tool",
    ]
    assert (result["ttlMs"], result["cacheScope"], result["resultType"], result["_meta"]) == (
        300_000,
        "private",
        "complete",
        SERVER_INFO,
    )
    assert "nextCursor" not in result


def test_a_tool_is_listed_with_its_texts_schemas_and_read_only_annotations():
    search = modern("tools/list").result["tools"][3]
    assert search == {
        "name": "search",
        "title": "Search",
        "description": "The search tool.",
        "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}}},
        "outputSchema": {"type": "object", "properties": {"echo": {"type": "object"}}},
        "annotations": {"readOnlyHint": True, "destructiveHint": False, "openWorldHint": False},
    }
    assert "outputSchema" not in modern("tools/list").result["tools"][0]


def test_a_cursor_is_refused_as_the_list_has_one_page():
    answer = modern("tools/list", {"cursor": "abc"})
    assert (answer.status, answer.error["code"]) == (HTTPStatus.BAD_REQUEST, -32602)


def test_a_tool_call_result_is_complete_and_names_the_server():
    result = modern("tools/call", {"name": "search", "arguments": {"query": "refunds"}}).result
    assert result == {
        "content": [{"type": "text", "text": json.dumps({"echo": {"query": "refunds"}})}],
        "structuredContent": {"echo": {"query": "refunds"}},
        "isError": False,
        "resultType": "complete",
        "_meta": SERVER_INFO,
    }


@pytest.mark.parametrize(
    "method", ["ping", "initialize", "resources/list", "prompts/get", "subscriptions/listen", "nope"]
)
def test_a_method_we_do_not_serve_is_404_method_not_found(method):
    answer = modern(method, {"protocolVersion": MODERN} if method == "initialize" else {})
    assert answer.status == HTTPStatus.NOT_FOUND
    assert answer.body is not None
    assert answer.body["id"] == 1
    assert answer.error == {"code": -32601, "message": f"Method not found: {method}."}


@pytest.mark.parametrize("request_id", [0, -5, "a-string", 2**53])
def test_the_answer_carries_the_requests_id(request_id):
    assert modern("tools/list", request_id=request_id).body["id"] == request_id  # type: ignore[index]


@pytest.mark.parametrize("version", ["2099-01-01", "2025-11-25", "2024-11-05", "garbage"])
def test_an_unsupported_version_in_the_envelope_is_400_naming_ours(version):
    params = {"_meta": modern_meta(version)}
    headers = {**modern_headers("tools/list", params), "mcp-protocol-version": version}
    answer = send(
        json.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": params}).encode(), headers
    )
    assert answer.status == HTTPStatus.BAD_REQUEST
    assert answer.error["code"] == -32022
    assert answer.error["data"] == {"supported": SUPPORTED, "requested": version}


def test_a_modern_header_on_a_request_without_an_envelope_is_invalid_params():
    headers = modern_headers("tools/list", {})
    answer = send(b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}', headers)
    assert (answer.status, answer.error["code"]) == (HTTPStatus.BAD_REQUEST, -32602)
    assert "io.modelcontextprotocol/protocolVersion" in answer.error["message"]


def test_an_unknown_version_header_on_a_request_without_an_envelope_is_told_ours():
    headers = {
        "accept": JSON_ACCEPT,
        "content-type": "application/json",
        "mcp-protocol-version": "2099-01-01",
    }
    answer = send(
        b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2099-01-01"}}',
        headers,
    )
    assert (answer.status, answer.error["code"], answer.error["data"]["requested"]) == (
        HTTPStatus.BAD_REQUEST,
        -32022,
        "2099-01-01",
    )


@pytest.mark.parametrize(
    ("meta", "missing"),
    [
        ({"io.modelcontextprotocol/clientCapabilities": {}}, "io.modelcontextprotocol/protocolVersion"),
        ({"io.modelcontextprotocol/protocolVersion": MODERN}, "io.modelcontextprotocol/clientCapabilities"),
    ],
)
def test_an_envelope_without_its_required_keys_is_invalid_params(meta, missing):
    params = {"_meta": meta}
    answer = send(
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params}).encode(),
        modern_headers("tools/list", params),
    )
    assert (answer.status, answer.error["code"]) == (HTTPStatus.BAD_REQUEST, -32602)
    assert answer.error["message"] == f"params._meta lacks {missing}."


@pytest.mark.parametrize(
    ("key", "value"),
    [("io.modelcontextprotocol/clientCapabilities", []), ("io.modelcontextprotocol/protocolVersion", 2026)],
)
def test_an_envelope_of_the_wrong_shape_is_invalid_params(key, value):
    params = {"_meta": {**modern_meta(), key: value}}
    headers = modern_headers("tools/list", params)
    if key.endswith("protocolVersion"):
        headers["mcp-protocol-version"] = "2026"  # a header never equals a number: the mismatch comes first
    answer = send(
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params}).encode(), headers
    )
    assert answer.status == HTTPStatus.BAD_REQUEST
    assert answer.error["code"] == (-32602 if key.endswith("Capabilities") else -32020)


CALL = {"name": "search", "arguments": {"query": "q"}}


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"mcp_protocol_version": None}, "The MCP-Protocol-Version header is missing."),
        (
            {"mcp_protocol_version": "2025-06-18"},
            "The MCP-Protocol-Version header does not match the protocol version in the request's _meta.",
        ),
        (
            {"mcp_protocol_version": "2099-01-01"},
            "The MCP-Protocol-Version header does not match the protocol version in the request's _meta.",
        ),
        ({"mcp_method": None}, "The Mcp-Method header is missing."),
        ({"mcp_method": "tools/list"}, "The Mcp-Method header does not match the request's method."),
        ({"mcp_method": "TOOLS/CALL"}, "The Mcp-Method header does not match the request's method."),
        ({"mcp_name": None}, "The Mcp-Name header is missing (it mirrors params.name)."),
        ({"mcp_name": "fetch"}, "The Mcp-Name header does not match params.name."),
        ({"mcp_name": "Search"}, "The Mcp-Name header does not match params.name."),
        ({"mcp_name": b64("fetch")}, "The Mcp-Name header does not match params.name."),
        ({"mcp_name": "=?base64?c2VhcmNo?"}, "The Mcp-Name header does not match params.name."),
        ({"mcp_name": "=?BASE64?c2VhcmNo?="}, "The Mcp-Name header does not match params.name."),
        ({"mcp_name": "=?base64?c2VhcmNo===?="}, "The Mcp-Name header does not match params.name."),
        ({"mcp_name": "=?base64?c2VhcmNp?="}, "The Mcp-Name header does not match params.name."),
    ],
)
def test_headers_missing_or_disagreeing_with_the_body_are_a_header_mismatch(changes, message):
    answer = modern("tools/call", CALL, **changes)
    assert answer.status == HTTPStatus.BAD_REQUEST
    assert answer.body is not None
    assert answer.body["id"] == 1
    assert answer.error == {"code": -32020, "message": message}


def test_the_header_mismatch_is_found_before_an_unsupported_version():
    # A client that disagrees with itself is told so, not that its body's version is unsupported.
    params = {"_meta": modern_meta("2099-01-01")}
    answer = send(
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params}).encode(),
        modern_headers("tools/list", params, MODERN),
    )
    assert answer.error["code"] == -32020


@pytest.mark.parametrize("name", ["search", "名前 tool"])
def test_a_tools_name_in_base64_is_decoded_before_the_comparison(name):
    answer = modern("tools/call", {"name": name, "arguments": {}}, mcp_name=b64(name))
    assert answer.status == HTTPStatus.OK
    assert answer.result["isError"] is False


def test_a_name_outside_ascii_is_refused_in_plain_form():
    answer = modern("tools/call", {"name": "名前 tool"}, mcp_name="åäö")
    assert answer.error["code"] == -32020


@pytest.mark.parametrize(
    ("value", "decoded"),
    [
        ("search", "search"),
        ("", ""),
        (b64("Hello, 世界"), "Hello, 世界"),
        (b64(" padded "), " padded "),
        ("=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=", "=?base64?literal?="),
        ("=?base64??=", ""),
        ("=?base64?not base64?=", None),
        ("=?base64?SGk?=", None),
        ("=?base64?SGl=?=", None),
        ("=?base64?/w==?=", None),
        ("line\nbreak", None),
        ("caf\u00e9", None),
    ],
)
def test_a_header_value_decodes_only_from_canonical_base64_of_utf8(value, decoded):
    assert decode_header_value(value) == decoded


def test_a_session_id_and_last_event_id_are_ignored_and_none_is_minted():
    answer = modern("tools/list", mcp_session_id="stale-session", last_event_id="42")
    assert answer.status == HTTPStatus.OK
    assert not any(name.lower() == "mcp-session-id" for name in answer.headers)


@pytest.mark.parametrize(
    "changes",
    [
        {"mcp_name": "  search\t"},
        {"mcp_method": " tools/call "},
        {"mcp_protocol_version": f"\t{MODERN} "},
        {"mcp_name": f" {b64('search')} "},
    ],
)
def test_whitespace_around_a_header_value_is_not_part_of_it(changes):
    # RFC 9110, 5.5: a field's value excludes the optional whitespace before and after it.
    answer = modern("tools/call", CALL, **changes)
    assert answer.status == HTTPStatus.OK, answer.error
