"""The authorization server's own rules on Authlib (memmy_kb.api.mcp_auth.server), before any store is
read: RFC 8707's one resource, RFC 9207's ``iss`` on an authorization response, and Authlib's answers as
proxy results."""

from __future__ import annotations

from typing import Any, cast

import pytest

from memmy_kb.api.mcp_auth.clients import InvalidTargetError
from memmy_kb.api.mcp_auth.requests import Answer, HttpEvent, OAuth2Event
from memmy_kb.api.mcp_auth.server import CodeGrant, McpAuthServer, ServerContext
from tests.support.mcp_auth_events import ISSUER, RESOURCE, auth_event


def _server() -> McpAuthServer:
    return McpAuthServer(ServerContext(cast(Any, None), ISSUER, RESOURCE, "kb.search", "198.51.100.7", 1000))


def _grant(*resources: str) -> CodeGrant:
    server = _server()
    query = [("response_type", "code"), ("client_id", "c"), *(("resource", r) for r in resources)]
    request = OAuth2Event.of(HttpEvent.of(auth_event("GET", "/oauth/authorize", query=query)), ISSUER)
    return CodeGrant(request, server)


@pytest.mark.parametrize("resources", [(), (RESOURCE,)])
def test_no_resource_or_the_mcp_endpoints_is_the_mcp_endpoint(resources: tuple[str, ...]):
    assert _grant(*resources).requested_resource() == RESOURCE


@pytest.mark.parametrize(
    "resources",
    [("https://other.example/mcp",), (RESOURCE, RESOURCE), (RESOURCE, "https://other.example/mcp"), (f"{RESOURCE}/",)],
)
def test_any_other_resource_or_several_is_invalid_target(resources: tuple[str, ...]):
    with pytest.raises(InvalidTargetError, match=RESOURCE):
        _grant(*resources).requested_resource()


def test_an_authorization_response_gets_the_issuer_as_iss():
    server = _server()
    answer = Answer(302, {"location": "http://127.0.0.1:33418/cb?code=x&state=s"})
    server.issuer_parameter.add_issuer_parameter(server, answer)
    assert answer.location == "http://127.0.0.1:33418/cb?code=x&state=s&iss=https%3A%2F%2Fkb.example.test"


def test_authlibs_answers_become_proxy_results_never_cached():
    answer = _server().handle_response(400, {"error": "invalid_grant"}, [("Content-Type", "application/json")])
    result = answer.proxy_result()
    assert result["statusCode"] == 400
    assert result["headers"]["cache-control"] == "no-store"
    assert result["body"] == '{"error": "invalid_grant"}'


def test_authlib_requests_are_built_on_the_event_at_the_issuers_url():
    event = HttpEvent.of(auth_event("POST", "/oauth/token", form={"grant_type": "authorization_code"}))
    request = _server().create_oauth2_request(event)
    assert request.uri == f"{ISSUER}/oauth/token"
    assert request.payload.grant_type == "authorization_code"
