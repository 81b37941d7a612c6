"""The MCP authorization server's whole flow (docs/remote-mcp.md, "Authorization servers"), through
``functions/mcp_auth/app.py`` on moto with the real adapters and the dev identity provider as the login
provider: register → authorize → sign in → callback → consent → code (state, iss) → token (PKCE) → the
``mcp`` function accepts the token → refresh rotates → a replayed refresh token ends the family → after
``DELETE /me/connections/{id}`` the refresh is ``invalid_grant``."""

from __future__ import annotations

import dataclasses
import logging
from http import HTTPStatus

import httpx
import jwt
import pytest

from memmy_kb import composition
from memmy_kb.adapters.client_metadata import HttpClientMetadata
from memmy_kb.domain.remote_mcp.connections import connection_id
from tests.support.https_loopback import HttpsDocuments
from tests.support.mcp_auth_flow import CALLBACK, COOKIE, ISSUER, RESOURCE, AuthFlow, query_of
from tests.support.mcp_world import McpCaller, register

LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


def test_a_registered_client_gets_a_token_the_mcp_function_accepts(service, auth: AuthFlow):
    register(service, "alice")
    client_id = auth.register("Claude")
    sign, reply = auth.authorize(client_id)
    assert reply.status == HTTPStatus.FOUND
    assert sign.cookie
    assert any(c.startswith(f"{COOKIE}=") and "HttpOnly" in c and "Secure" in c for c in reply.cookies)

    page = auth.callback(auth.sign_in(reply.location, "alice"), sign.cookie)
    assert page.status == HTTPStatus.OK
    assert "Claude" in page.body
    assert "127.0.0.1" in page.body
    assert page.headers["cache-control"] == "no-store"
    assert "form-action 'self' http://127.0.0.1:33418" in page.headers["content-security-policy"]

    answer = auth.consent(page, sign.cookie)
    back = query_of(answer.location)
    assert answer.status == HTTPStatus.FOUND
    assert (back["state"], back["iss"]) == ("st-1", ISSUER)
    tokens = auth.exchange(sign, back["code"]).json()
    claims = jwt.decode(tokens["access_token"], options={"verify_signature": False})
    assert (claims["iss"], claims["aud"], claims["sub"], claims["scope"]) == (ISSUER, RESOURCE, "alice", "kb.search")
    assert (claims["client_id"], claims["client_name"], claims["exp"] - claims["iat"]) == (client_id, "Claude", 3600)

    listed = McpCaller(service, None, "alice").post(LIST, token=tokens["access_token"])
    assert listed.status == HTTPStatus.OK, listed.body
    assert [t["name"] for t in listed.body["result"]["tools"]] == ["fetch", "list_knowledge_bases", "search"]


def test_refresh_rotates_a_replay_ends_the_family_and_a_disconnect_ends_the_grant(service, auth: AuthFlow):
    register(service, "alice")
    client_id = auth.register("Claude")
    first = auth.connect("alice", client_id)
    second = auth.refresh(client_id, first["refresh_token"])
    assert second.status == HTTPStatus.OK
    rotated = second.json()["refresh_token"]
    assert rotated != first["refresh_token"]

    replay = auth.refresh(client_id, first["refresh_token"])
    assert (replay.status, replay.json()["error"]) == (HTTPStatus.BAD_REQUEST, "invalid_grant")
    after = auth.refresh(client_id, rotated)
    assert (after.status, after.json()["error"]) == (HTTPStatus.BAD_REQUEST, "invalid_grant")

    fresh = auth.connect("alice", client_id)
    assert McpCaller(service, None, "alice").post(LIST, token=fresh["access_token"]).status == HTTPStatus.OK
    gone = service.call("DELETE", f"/me/connections/{connection_id(client_id)}", "alice")
    assert gone.status in (HTTPStatus.OK, HTTPStatus.NO_CONTENT), gone.body
    refused = auth.refresh(client_id, fresh["refresh_token"])
    assert (refused.status, refused.json()["error"]) == (HTTPStatus.BAD_REQUEST, "invalid_grant")


def test_revoking_a_refresh_token_ends_its_family(service, auth: AuthFlow):
    client_id = auth.register("Claude")
    tokens = auth.connect("alice", client_id)
    form = {"token": tokens["refresh_token"], "token_type_hint": "refresh_token", "client_id": client_id}
    assert auth.call("POST", "/oauth/revoke", form=form).status == HTTPStatus.OK
    refused = auth.refresh(client_id, tokens["refresh_token"])
    assert refused.json()["error"] == "invalid_grant"
    unknown = {"token": "no-such-token", "client_id": client_id}
    assert auth.call("POST", "/oauth/revoke", form=unknown).status == HTTPStatus.OK


def test_the_jwks_is_the_signing_keys_and_verifies_the_access_token(service, auth: AuthFlow):
    reply = auth.call("GET", "/oauth/jwks")
    assert reply.status == HTTPStatus.OK
    assert reply.headers["cache-control"] == "public, max-age=300"
    (key,) = reply.json()["keys"]
    tokens = auth.connect("alice", auth.register("Claude"))
    public = jwt.PyJWK(key).key
    claims = jwt.decode(tokens["access_token"], public, algorithms=["RS256"], audience=RESOURCE)
    assert claims["sub"] == "alice"
    assert jwt.get_unverified_header(tokens["access_token"])["kid"] == key["kid"]


def test_a_client_named_by_its_metadata_document_is_fetched_once_and_gets_a_token(
    service, auth: AuthFlow, monkeypatch: pytest.MonkeyPatch
):
    """The document is served over https on 127.0.0.1 (a certificate made for the test, trusted by the
    fetcher's client); the fetcher is the real one with loopback allowed."""
    documents = HttpsDocuments()
    with documents.serving(), httpx.Client(verify=documents.trust) as http:
        client_id = f"{documents.base_url}/oauth/client.json"
        documents.documents["/oauth/client.json"] = {
            "client_id": client_id, "client_name": "Agent by URL", "redirect_uris": [CALLBACK],
            "token_endpoint_auth_method": "none",
        }  # fmt: skip
        ports = dataclasses.replace(composition.get_mcp_auth(), metadata=HttpClientMetadata(http, allow_loopback=True))
        monkeypatch.setattr(composition, "get_mcp_auth", lambda: ports)
        sign, reply = auth.authorize(client_id)
        page = auth.callback(auth.sign_in(reply.location, "alice"), sign.cookie)
        assert "Agent by URL" in page.body
        back = query_of(auth.consent(page, sign.cookie).location)
        tokens = auth.exchange(sign, back["code"]).json()
    claims = jwt.decode(tokens["access_token"], options={"verify_signature": False})
    assert (claims["client_id"], claims["client_name"]) == (client_id, "Agent by URL")
    assert documents.fetched == ["/oauth/client.json"]  # kept in the store for the later requests


def test_a_metadata_document_that_cannot_be_used_gets_a_page(service, auth: AuthFlow, monkeypatch: pytest.MonkeyPatch):
    documents = HttpsDocuments()
    with documents.serving(), httpx.Client(verify=documents.trust) as http:
        client_id = f"{documents.base_url}/oauth/client.json"
        documents.documents["/oauth/client.json"] = {"client_id": "https://someone.else/client.json",
                                                     "redirect_uris": [CALLBACK]}  # fmt: skip
        ports = dataclasses.replace(composition.get_mcp_auth(), metadata=HttpClientMetadata(http, allow_loopback=True))
        monkeypatch.setattr(composition, "get_mcp_auth", lambda: ports)
        _, reply = auth.authorize(client_id)
    assert reply.status == HTTPStatus.BAD_REQUEST
    assert "location" not in reply.headers
    assert "names another client_id" in reply.body


def test_no_token_or_code_reaches_the_log_even_at_debug(service, auth: AuthFlow, caplog: pytest.LogCaptureFixture):
    caplog.set_level("DEBUG")
    authlib_log = logging.getLogger("authlib")
    before = authlib_log.level
    authlib_log.setLevel(logging.NOTSET)  # as in a fresh container (the dev provider sets its own)
    try:
        client_id = auth.register("Claude")
        sign, back = auth.code_for("alice", client_id)
        tokens = auth.exchange(sign, back["code"]).json()
        rotated = auth.refresh(client_id, tokens["refresh_token"]).json()
    finally:
        authlib_log.setLevel(before)
    logged = caplog.text
    for secret in (back["code"], tokens["access_token"], tokens["refresh_token"], rotated["refresh_token"]):
        assert secret not in logged
