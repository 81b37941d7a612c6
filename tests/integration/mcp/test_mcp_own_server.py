"""``POST /mcp`` trusting the service's own authorization server (McpTokenIssuer empty, the template's
default): tokens of issuer ``https://<the request's domain>`` (or ``MCP_AUTH_ISSUER``) signed by the stack's
KMS key (``MCP_SIGNING_KEY``, provisioned on moto from template.yaml) are checked against the key's public
half read from KMS, not a JWKS URL (tests/unit/api/mcp_endpoint/test_keys.py: a KMS error is a 503)."""

from __future__ import annotations

import os
from http import HTTPStatus
from typing import Any

import boto3
import pytest

from memmy_kb import composition
from memmy_kb.adapters.kms_signer import KmsTokenSigner
from tests.support.mcp_tokens import ISSUER, mcp_claims, mcp_token, signing_key
from tests.support.mcp_world import LEGACY_HEADERS, register

OWN_ISSUER = "https://localhost"  # the events' requestContext.domainName
RESOURCE = f"{OWN_ISSUER}/mcp"
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


@pytest.fixture
def own_server(service: Any, monkeypatch: pytest.MonkeyPatch) -> KmsTokenSigner:
    """The service with the template's MCP settings as deployed: no issuer, no JWKS URL, the signing key;
    a signer on that key, as the authorization server signs."""
    assert (os.environ["MCP_TOKEN_ISSUER"], os.environ["MCP_JWKS_URL"]) == ("", "")
    monkeypatch.setenv("RECALL_BURST", "1000")
    composition.reset_composition()
    register(service, "alice")
    return KmsTokenSigner(os.environ["MCP_SIGNING_KEY"], boto3.client("kms", region_name="us-east-1"))


def post(service: Any, token: str) -> Any:
    headers = {**LEGACY_HEADERS, "authorization": f"Bearer {token}"}
    return service.call("POST", "/mcp", None, body=LIST, headers=headers)


def test_a_token_of_the_own_server_signed_by_the_kms_key_is_accepted(service, own_server):
    reply = post(service, own_server.sign(mcp_claims("alice", iss=OWN_ISSUER, aud=RESOURCE)))

    assert reply.status == HTTPStatus.OK, reply.body
    assert [t["name"] for t in reply.body["result"]["tools"]] == ["fetch", "list_knowledge_bases", "search"]


def test_a_token_of_another_issuer_is_refused(service, own_server):
    reply = post(service, own_server.sign(mcp_claims("alice", iss=ISSUER, aud=RESOURCE)))

    assert reply.status == HTTPStatus.UNAUTHORIZED
    assert reply.body["error"] == "invalid_token"


def test_a_token_signed_by_another_key_under_the_kms_keys_kid_is_refused(service, own_server, tmp_path):
    kid = own_server.public_jwk()["kid"]
    forged = mcp_token(signing_key(tmp_path), "alice", kid=kid, iss=OWN_ISSUER, aud=RESOURCE)

    reply = post(service, forged)

    assert reply.status == HTTPStatus.UNAUTHORIZED
    assert "signature" in reply.body["message"]


def test_the_configured_issuer_of_the_own_server_wins_over_the_domain(service, own_server, monkeypatch):
    monkeypatch.setenv("MCP_AUTH_ISSUER", "https://auth.memmy.example/")
    composition.reset_composition()

    named = post(
        service, own_server.sign(mcp_claims("alice", iss="https://auth.memmy.example", aud=RESOURCE))
    )
    by_domain = post(service, own_server.sign(mcp_claims("alice", iss=OWN_ISSUER, aud=RESOURCE)))
    metadata = service.call("GET", "/.well-known/oauth-protected-resource/mcp", None)

    assert (named.status, by_domain.status) == (HTTPStatus.OK, HTTPStatus.UNAUTHORIZED)
    assert metadata.body["authorization_servers"] == ["https://auth.memmy.example"]


def test_the_protected_resource_metadata_names_the_own_server(service, own_server):
    reply = service.call("GET", "/.well-known/oauth-protected-resource/mcp", None)

    assert reply.status == HTTPStatus.OK
    assert (reply.body["resource"], reply.body["authorization_servers"]) == (RESOURCE, [OWN_ISSUER])
