"""What the authorization server answers before it needs a store (memmy_kb.api.mcp_auth.routes): its RFC
8414 metadata under the configured issuer or the request's domain, and a clear refusal of a route it has
not or of an event it cannot read."""

from __future__ import annotations

import json

import pytest

from memmy_kb.api.mcp_auth.routes import handle_mcp_auth
from memmy_kb.composition import reset_composition
from tests.support.mcp_auth_events import DOMAIN, auth_event


@pytest.fixture(autouse=True)
def settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TABLE_NAME", "t")
    for name in ("MCP_AUTH_ISSUER", "MCP_RESOURCE_URL"):
        monkeypatch.delenv(name, raising=False)
    reset_composition()


def _metadata() -> dict[str, object]:
    result = handle_mcp_auth(auth_event("GET", "/.well-known/oauth-authorization-server"))
    assert result["statusCode"] == 200
    document: dict[str, object] = json.loads(result["body"])
    return document


def test_the_metadata_names_the_requests_domain_as_issuer_and_every_endpoint_under_it():
    document = _metadata()
    issuer = f"https://{DOMAIN}"
    assert document["issuer"] == issuer
    assert document["authorization_endpoint"] == f"{issuer}/oauth/authorize"
    assert document["token_endpoint"] == f"{issuer}/oauth/token"
    assert document["registration_endpoint"] == f"{issuer}/oauth/register"
    assert document["revocation_endpoint"] == f"{issuer}/oauth/revoke"
    assert document["jwks_uri"] == f"{issuer}/oauth/jwks"


def test_the_metadata_says_what_the_server_supports():
    document = _metadata()
    assert document["client_id_metadata_document_supported"] is True
    assert document["authorization_response_iss_parameter_supported"] is True
    assert document["code_challenge_methods_supported"] == ["S256"]
    assert document["token_endpoint_auth_methods_supported"] == ["none"]
    assert document["grant_types_supported"] == ["authorization_code", "refresh_token"]
    assert document["response_types_supported"] == ["code"]
    assert document["scopes_supported"] == ["kb.search"]


def test_a_configured_issuer_wins_without_its_trailing_slash(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("MCP_AUTH_ISSUER", "https://auth.example.test/")
    reset_composition()
    document = _metadata()
    assert document["issuer"] == "https://auth.example.test"
    assert document["token_endpoint"] == "https://auth.example.test/oauth/token"


def test_a_route_it_does_not_serve_is_404():
    result = handle_mcp_auth(auth_event("GET", "/oauth/nothing"))
    assert result["statusCode"] == 404
    assert json.loads(result["body"])["error"] == "not_found"


def test_a_body_marked_base64_that_is_not_is_400_invalid_request():
    event = auth_event("POST", "/oauth/token", form={"grant_type": "refresh_token"})
    event["isBase64Encoded"] = True
    event["body"] = "*not base64*"
    result = handle_mcp_auth(event)
    assert result["statusCode"] == 400
    assert json.loads(result["body"]) == {"error": "invalid_request", "error_description": "The body is not valid base64."}
