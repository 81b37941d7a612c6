"""``memmy_kb.api.mcp``: clients of the ``initialize`` revisions (2025-03-26, 2025-06-18, 2025-11-25),
served without a session: the handshake negotiates a version and mints no session id; every other request
is answered on its own."""

from __future__ import annotations

from http import HTTPStatus

import pytest

from tests.support.mcp_protocol import SERVER, legacy

INITIALIZE = {"capabilities": {}, "clientInfo": {"name": "codex", "version": "0.171.0"}}


@pytest.mark.parametrize(
    ("requested", "answered"),
    [
        ("2025-11-25", "2025-11-25"),
        ("2025-06-18", "2025-06-18"),
        ("2025-03-26", "2025-03-26"),
        ("2026-07-28", "2025-11-25"),
        ("2099-01-01", "2025-11-25"),
        ("2024-11-05", "2025-11-25"),
        ("not a date", "2025-11-25"),
    ],
)
def test_initialize_answers_the_clients_version_or_the_newest_handshake_one_we_speak(requested, answered):
    answer = legacy("initialize", {**INITIALIZE, "protocolVersion": requested}, version=None)
    assert answer.status == HTTPStatus.OK
    assert answer.result["protocolVersion"] == answered


def test_initialize_names_the_server_its_tools_capability_and_no_session():
    answer = legacy("initialize", {**INITIALIZE, "protocolVersion": "2025-06-18"}, version=None)
    assert answer.result == {
        "protocolVersion": "2025-06-18",
        "capabilities": {"tools": {"listChanged": False}},
        "serverInfo": {"name": "memmy-kb", "version": "1.2.3", "title": "Memmy knowledge bases"},
        "instructions": SERVER.instructions,
    }
    assert not any(name.lower() == "mcp-session-id" for name in answer.headers)


@pytest.mark.parametrize("params", [{}, {"protocolVersion": 20250618}, {"protocolVersion": None}])
def test_initialize_without_a_version_string_is_invalid_params(params):
    answer = legacy("initialize", params, version=None)
    assert (answer.status, answer.error["code"]) == (HTTPStatus.OK, -32602)


@pytest.mark.parametrize("version", [None, "2025-03-26", "2025-06-18", "2025-11-25"])
def test_requests_after_the_handshake_are_served_with_or_without_the_version_header(version):
    listed = legacy("tools/list", version=version)
    assert [tool["name"] for tool in listed.result["tools"]][:2] == ["crash", "rate_limited"]
    called = legacy("tools/call", {"name": "search", "arguments": {"query": "q"}}, version=version)
    assert called.result["structuredContent"] == {"echo": {"query": "q"}}


def test_legacy_results_carry_none_of_the_modern_fields():
    for answer in (
        legacy("tools/list"),
        legacy("tools/call", {"name": "search"}),
        legacy("initialize", {"protocolVersion": "2025-06-18"}),
    ):
        assert not {"resultType", "_meta", "ttlMs", "cacheScope"} & set(answer.result)


def test_a_request_with_a_session_id_we_never_minted_is_answered_anyway():
    answer = legacy("tools/list", mcp_session_id="d4f0c0ffee")
    assert answer.status == HTTPStatus.OK
    assert "tools" in answer.result


def test_ping_answers_an_empty_result():
    assert legacy("ping").result == {}


@pytest.mark.parametrize("method", ["server/discover", "resources/list", "logging/setLevel", "nope"])
def test_an_unknown_method_is_method_not_found_with_200_not_404(method):
    # To these revisions a 404 means the session is gone: the client would start over.
    answer = legacy(method)
    assert answer.status == HTTPStatus.OK
    assert answer.error == {"code": -32601, "message": f"Method not found: {method}."}
    assert answer.body is not None
    assert answer.body["id"] == 7


def test_a_legacy_error_carries_no_modern_status():
    answer = legacy("tools/call", {"name": "missing"})
    assert (answer.status, answer.error["code"]) == (HTTPStatus.OK, -32602)
