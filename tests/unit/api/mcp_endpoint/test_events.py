"""The HTTP API event as the protocol layer's request (``memmy_kb.api.mcp_endpoint.events``), and what the
endpoint answers before any token is looked at: the metadata (RFC 9728), the 405s, the challenge."""

from __future__ import annotations

import base64
import json
from http import HTTPStatus
from typing import Any

import pytest

from memmy_kb.api.mcp_endpoint.endpoint import handle_mcp, metadata_url
from memmy_kb.api.mcp_endpoint.events import BadEvent, request_of
from memmy_kb.composition import reset_composition


def event(route: str, *, body: str = "", encoded: bool = False, headers: dict[str, str] | None = None) -> dict[str, Any]:
    method, path = route.split(" ", 1)
    return {
        "version": "2.0",
        "routeKey": route,
        "rawPath": path,
        "headers": headers or {},
        "body": body,
        "isBase64Encoded": encoded,
        "requestContext": {"http": {"method": method, "path": path}, "domainName": "api.example.com"},
    }


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TABLE_NAME", "t")
    monkeypatch.setenv("MCP_TOKEN_ISSUER", "https://idp.example.com")
    monkeypatch.delenv("MCP_RESOURCE_URL", raising=False)
    monkeypatch.delenv("MCP_AUTHORIZATION_SERVER", raising=False)
    reset_composition()
    yield
    reset_composition()


def test_headers_arrive_lower_case_and_a_base64_body_decoded() -> None:
    raw = json.dumps({"jsonrpc": "2.0", "method": "ping", "id": 1, "q": "差旅"}).encode()
    request = request_of(
        event("POST /mcp", body=base64.b64encode(raw).decode(), encoded=True,
              headers={"Content-Type": "application/json", "MCP-Protocol-Version": "2025-06-18"})
    )

    assert request.method == "POST"
    assert request.body == raw
    assert request.headers == {"content-type": "application/json", "mcp-protocol-version": "2025-06-18"}


def test_a_text_body_is_its_utf8_bytes_and_a_bad_base64_body_is_refused() -> None:
    assert request_of(event("POST /mcp", body="差旅")).body == "差旅".encode()
    with pytest.raises(BadEvent):
        request_of(event("POST /mcp", body="@@not base64@@", encoded=True))


def test_the_metadata_lives_at_the_well_known_path_of_the_resource() -> None:
    assert metadata_url("http://127.0.0.1:8080/mcp") == "http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp"


@pytest.mark.usefixtures("environment")
@pytest.mark.parametrize("route", ["GET /.well-known/oauth-protected-resource/mcp", "GET /.well-known/oauth-protected-resource"])
def test_the_protected_resource_metadata_names_the_resource_and_its_authorization_server(route: str) -> None:
    reply = handle_mcp(event(route))

    assert reply["statusCode"] == HTTPStatus.OK
    assert json.loads(reply["body"]) == {
        "resource": "https://api.example.com/mcp",
        "authorization_servers": ["https://idp.example.com"],
        "scopes_supported": ["kb.search"],
        "bearer_methods_supported": ["header"],
        "resource_name": "Memmy knowledge bases",
    }


@pytest.mark.usefixtures("environment")
@pytest.mark.parametrize("route", ["GET /mcp", "DELETE /mcp"])
def test_get_and_delete_on_mcp_are_405_allow_post(route: str) -> None:
    reply = handle_mcp(event(route))

    assert (reply["statusCode"], reply["headers"]["allow"], reply["body"]) == (HTTPStatus.METHOD_NOT_ALLOWED, "POST", "")


@pytest.mark.usefixtures("environment")
def test_a_post_without_a_token_is_401_with_the_metadata_and_scope_and_no_error() -> None:
    reply = handle_mcp(event("POST /mcp", body="{}"))

    assert reply["statusCode"] == HTTPStatus.UNAUTHORIZED
    assert reply["headers"]["www-authenticate"] == (
        'Bearer resource_metadata="https://api.example.com/.well-known/oauth-protected-resource/mcp", scope="kb.search"'
    )


@pytest.mark.usefixtures("environment")
def test_a_browser_origin_not_listed_is_403_before_the_token_is_read() -> None:
    reply = handle_mcp(event("POST /mcp", body="{}", headers={"Origin": "https://evil.example"}))

    assert reply["statusCode"] == HTTPStatus.FORBIDDEN
    assert "www-authenticate" not in reply["headers"]


@pytest.mark.usefixtures("environment")
def test_the_endpoints_own_origin_is_same_origin_and_not_refused() -> None:
    # A DNS-rebinding page carries the rebound name as its Origin; the endpoint's own origin is not one.
    reply = handle_mcp(event("POST /mcp", body="{}", headers={"Origin": "https://api.example.com"}))

    assert reply["statusCode"] == HTTPStatus.UNAUTHORIZED
