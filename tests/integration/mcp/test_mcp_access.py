"""Who gets through ``POST /mcp`` (the real ``mcp`` handler, moto): only an MCP token of this issuer, for this
resource, with the scope, from a client the person has not disconnected; and the person's connections on
``/me/connections`` (``manage_kb``, desktop tokens)."""

from __future__ import annotations

import time
from http import HTTPStatus

import pytest

from memmy_kb.domain.remote_mcp.connections import connection_id
from memmy_local.tokens import issue_token
from tests.support.mcp_tokens import CLIENT_ID, ISSUER, KEY_FILE, mcp_token
from tests.support.mcp_world import McpCaller, register

LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
METADATA = "http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp"


@pytest.fixture
def alice(mcp, mcp_key):
    register(mcp, "alice")
    return McpCaller(mcp, mcp_key, "alice")


def challenge(reply) -> str:
    return reply.headers["www-authenticate"]


def test_an_mcp_token_lists_the_three_tools_and_adds_the_connection(mcp, alice):
    reply = alice.post(LIST)

    assert reply.status == HTTPStatus.OK
    assert [t["name"] for t in reply.body["result"]["tools"]] == ["fetch", "list_knowledge_bases", "search"]
    listed = mcp.call("GET", "/me/connections", "alice").body
    (conn,) = listed["connections"]
    assert (conn["id"], conn["client_id"], conn["client_name"], conn["state"]) == (
        connection_id(CLIENT_ID),
        CLIENT_ID,
        "Claude",
        "active",
    )
    assert conn["scope"] == ["kb.search"]
    assert conn["revoked_at"] is None
    assert [(a["kind"], a["client_name"]) for a in listed["activity"]] == [("connection_added", "Claude")]


@pytest.mark.parametrize(
    ("why", "changed"),
    [
        ("a desktop token", {"aud": "memmy-kb", "scope": None}),
        ("a token for another MCP resource", {"aud": "https://other.example/mcp"}),
        ("another issuer", {"iss": "https://evil.example"}),
        ("expired", {"iat": int(time.time()) - 7200, "exp": int(time.time()) - 3600}),
    ],
)
def test_any_other_token_is_401_invalid_token_with_the_metadata(mcp, alice, mcp_key, why, changed):
    reply = alice.post(LIST, token=mcp_token(mcp_key, "alice", **changed))

    assert reply.status == HTTPStatus.UNAUTHORIZED, why
    assert (
        challenge(reply) == f'Bearer error="invalid_token", resource_metadata="{METADATA}", scope="kb.search"'
    )
    assert mcp.call("GET", "/me/connections", "alice").body["connections"] == [], (
        "a refused token connects nothing"
    )


def test_the_desktops_own_login_token_signed_by_the_same_key_is_401(mcp, alice, mcp_key_folder):
    desktop = issue_token("alice", key_path=mcp_key_folder / KEY_FILE, issuer=ISSUER)

    reply = alice.post(LIST, token=desktop)

    assert reply.status == HTTPStatus.UNAUTHORIZED
    assert reply.body["message"] == "The token is for another resource."


def test_a_token_without_the_scope_is_403_insufficient_scope(alice, mcp_key):
    reply = alice.post(LIST, token=mcp_token(mcp_key, "alice", scope="openid"))

    assert reply.status == HTTPStatus.FORBIDDEN
    assert (
        challenge(reply)
        == f'Bearer error="insufficient_scope", scope="kb.search", resource_metadata="{METADATA}"'
    )


def test_no_token_is_401_without_an_error(alice):
    reply = alice.post(LIST, token="")

    assert reply.status == HTTPStatus.UNAUTHORIZED
    assert challenge(reply) == f'Bearer resource_metadata="{METADATA}", scope="kb.search"'


def test_a_disconnected_client_is_refused_at_once_until_a_new_sign_in(mcp, alice, mcp_key):
    assert alice.post(LIST).status == HTTPStatus.OK
    conn = connection_id(CLIENT_ID)

    assert mcp.call("DELETE", f"/me/connections/{conn}", "alice").status == HTTPStatus.NO_CONTENT

    refused = alice.post(LIST)  # the same grant, refreshed: auth_time unchanged
    assert refused.status == HTTPStatus.UNAUTHORIZED
    assert refused.body["message"] == "This client was disconnected."
    later = mcp_token(mcp_key, "alice", auth_time=int(time.time()) + 1)
    assert alice.post(LIST, token=later).status == HTTPStatus.OK
    kinds = [a["kind"] for a in mcp.call("GET", "/me/connections", "alice").body["activity"]]
    assert kinds == ["connection_added", "connection_revoked", "connection_added"]


def test_revoking_is_idempotent_and_an_unknown_or_foreign_connection_is_404(mcp, alice):
    register(mcp, "bob")
    assert alice.post(LIST).status == HTTPStatus.OK
    conn = connection_id(CLIENT_ID)

    assert mcp.call("DELETE", f"/me/connections/{conn}", "alice").status == HTTPStatus.NO_CONTENT
    assert mcp.call("DELETE", f"/me/connections/{conn}", "alice").status == HTTPStatus.NO_CONTENT
    for user, target in (("alice", "conn_unknown"), ("bob", conn)):
        reply = mcp.call("DELETE", f"/me/connections/{target}", user)
        assert (reply.status, reply.body["error"]["code"]) == (HTTPStatus.NOT_FOUND, "connection_not_found")
    (listed,) = mcp.call("GET", "/me/connections", "alice").body["connections"]
    assert listed["state"] == "revoked"
    assert listed["revoked_at"] is not None
    assert [a["kind"] for a in mcp.call("GET", "/me/connections", "alice").body["activity"]] == [
        "connection_revoked",
        "connection_added",
    ]


def test_the_jwks_unavailable_is_503_not_a_refused_token(mcp, alice, jwks):
    jwks.failing = True

    reply = alice.post(LIST)

    assert reply.status == HTTPStatus.SERVICE_UNAVAILABLE
    assert "www-authenticate" not in reply.headers
    assert reply.headers["retry-after"] == "5"
