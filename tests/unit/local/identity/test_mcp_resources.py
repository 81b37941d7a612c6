"""The dev identity provider's resource rules (memmy_local.identity.resources): which resource (RFC 8707)
an authorization request of an MCP client or of the desktop may name."""

from __future__ import annotations

import pytest

from memmy_kb.api.mcp_auth.clients import InvalidTargetError, McpClient
from memmy_kb.domain.mcp_auth.clients import REGISTERED, ClientRecord
from memmy_local.identity.records import (
    MCP_AUTH_CALLBACK,
    MCP_AUTH_CLIENT_ID,
    PublicClient,
    is_loopback_callback,
)
from memmy_local.identity.resources import authorization_resource
from tests.support.linear_time import assert_linear_time

RESOURCE = "http://127.0.0.1:8080/mcp"
MCP = McpClient(ClientRecord("mcp-1", REGISTERED, ("http://127.0.0.1:5000/cb",), 0.0, "Agent"))


@pytest.mark.parametrize(
    ("client", "requested", "granted"),
    [(MCP, [], RESOURCE), (MCP, [RESOURCE], RESOURCE), (PublicClient(), [], None)],
)
def test_an_authorization_request_is_for_the_mcp_resource_or_the_desktops_api(
    client: object, requested: list[str], granted: str | None
) -> None:
    assert authorization_resource(client, requested, RESOURCE) == granted


@pytest.mark.parametrize(
    ("client", "requested", "mcp_resource"),
    [
        (MCP, ["http://127.0.0.1:8080/api"], RESOURCE),
        (MCP, [RESOURCE + "/"], RESOURCE),  # compared exactly
        (MCP, [RESOURCE, RESOURCE], RESOURCE),
        (MCP, [], None),  # a provider that serves no MCP resource
        (PublicClient(), [RESOURCE], RESOURCE),
    ],
)
def test_any_other_resource_is_invalid_target(
    client: object, requested: list[str], mcp_resource: str | None
) -> None:
    with pytest.raises(InvalidTargetError) as refused:
        authorization_resource(client, requested, mcp_resource)

    assert refused.value.error == "invalid_target"


@pytest.mark.parametrize(
    ("uri", "accepted"),
    [("http://127.0.0.1:3001/oauth/callback", True), ("http://localhost:65535/oauth/callback", True),
     ("http://127.0.0.1:3001/callback", False), ("http://127.0.0.1/oauth/callback", False),
     ("http://127.0.0.1:65536/oauth/callback", False), ("https://127.0.0.1:3001/oauth/callback", False),
     ("http://127.0.0.1:3001/oauth/callback?x=1", False)],
)  # fmt: skip
def test_the_authorization_servers_login_client_takes_a_loopback_oauth_callback(
    uri: str, accepted: bool
) -> None:
    assert PublicClient(MCP_AUTH_CLIENT_ID).check_redirect_uri(uri) is accepted


def test_the_authorization_servers_login_client_signs_in_only() -> None:
    client = PublicClient(MCP_AUTH_CLIENT_ID)

    assert (
        client.get_allowed_scope("openid email profile phone offline_access kb.search")
        == "openid email profile phone"
    )
    assert [client.check_grant_type(g) for g in ("authorization_code", "refresh_token")] == [True, False]
    assert client.check_endpoint_auth_method("none", "token") is True
    assert PublicClient().check_redirect_uri("http://127.0.0.1:3001/oauth/callback") is False  # the desktop's


@pytest.mark.parametrize(
    "make",
    [
        lambda n: "http://127.0.0.1:1" + "1" * n + "/oauth/callback",  # the port's digits, past their bound
        lambda n: "http://localhost:8080/oauth/callback" + "/" * n,  # a tail after the path
        lambda n: "http://" + "127.0.0.1" * (n // 9) + ":8080/oauth/callback",  # the host repeated
    ],
    ids=["long-port", "long-tail", "long-host"],
)
def test_the_login_clients_callback_pattern_runs_in_linear_time_on_a_huge_redirect_uri(make) -> None:
    # The redirect URI comes from the authorization request's query: any length a client sends.
    assert not is_loopback_callback(make(1024), MCP_AUTH_CALLBACK)
    assert_linear_time(lambda uri: is_loopback_callback(uri, MCP_AUTH_CALLBACK), make, large=256 * 1024)
