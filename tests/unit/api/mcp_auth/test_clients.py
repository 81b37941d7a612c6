"""The Authlib parts both authorization servers share (memmy_kb.api.mcp_auth.clients): an MCP client is
public, code and refresh, ``kb.search`` only; a token request may name its grant's resource or none."""

from __future__ import annotations

import pytest

from memmy_kb.api.mcp_auth.clients import InvalidTargetError, McpClient, check_token_resource
from memmy_kb.domain.mcp_auth.clients import REGISTERED, ClientRecord

RESOURCE = "http://127.0.0.1:8080/mcp"
MCP = McpClient(ClientRecord("mcp-1", REGISTERED, ("http://127.0.0.1:5000/cb",), 0.0, "Agent"))


def test_an_mcp_client_is_public_code_and_refresh_with_kb_search_only() -> None:
    assert MCP.get_allowed_scope("openid profile email kb.search") == "kb.search"
    assert MCP.get_allowed_scope(None) == "kb.search"
    assert [MCP.check_grant_type(g) for g in ("authorization_code", "refresh_token", "client_credentials")] == [
        True, True, False]  # fmt: skip
    assert MCP.check_grant_type("urn:ietf:params:oauth:grant-type:device_code") is False
    assert MCP.check_endpoint_auth_method("none", "token") is True
    assert MCP.check_endpoint_auth_method("client_secret_post", "token") is False


def test_a_token_request_may_repeat_its_grants_resource_or_name_none() -> None:
    check_token_resource([], RESOURCE)
    check_token_resource([RESOURCE], RESOURCE)
    check_token_resource([], None)
    for requested, granted in [
        ([RESOURCE], None),
        (["https://x.example/mcp"], RESOURCE),
        ([RESOURCE] * 2, RESOURCE),
    ]:
        with pytest.raises(InvalidTargetError):
            check_token_resource(requested, granted)
