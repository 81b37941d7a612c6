"""The remote MCP endpoint on the local stack: the ``mcp`` function trusts the dev identity provider's tokens
(its issuer and JWKS) for the gateway's own ``/mcp``, through the gateway's routes without its authorizer."""

from __future__ import annotations

import time
from collections.abc import Iterator
from http import HTTPStatus
from typing import Any

import httpx
import jwt
import pytest

from memmy_local import tokens
from memmy_local.stack import LocalStack, StackConfig

LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
HEADERS = {"mcp-protocol-version": "2025-06-18", "accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(tokens.HOME_ENV, str(home))
        config = StackConfig(gateway_port=0, memos_port=0, moto_port=0, idp_port=0, schedule_interval=0)
        with LocalStack(config) as running:
            yield running


def mcp_token(stack: LocalStack, **changed: Any) -> str:
    """An MCP token as the dev provider signs one (its key and kid), with the contract's claims."""
    key = tokens.load_signing_key(tokens.signing_key_path(stack.config.data_dir))
    now = int(time.time())
    claims = {
        "iss": stack.issuer,
        "sub": "alice",
        "aud": f"{stack.api_url}/mcp",
        "scope": "kb.search",
        "client_id": "memmy-local-cli",
        "auth_time": now,
        "iat": now,
        "exp": now + 600,
        "jti": "local-1",
        **changed,
    }
    return jwt.encode(claims, key, algorithm="RS256", headers={"kid": tokens.key_id(key)})


def post(stack: LocalStack, token: str) -> httpx.Response:
    return httpx.post(
        f"{stack.api_url}/mcp", json=LIST, headers={**HEADERS, "authorization": f"Bearer {token}"}
    )


def test_the_metadata_names_the_gateways_mcp_and_the_dev_provider(stack: LocalStack) -> None:
    reply = httpx.get(f"{stack.api_url}/.well-known/oauth-protected-resource/mcp")

    assert reply.status_code == HTTPStatus.OK
    assert reply.json()["resource"] == f"{stack.api_url}/mcp"
    assert reply.json()["authorization_servers"] == [stack.issuer]


def test_a_dev_mcp_token_lists_the_tools_and_a_desktop_token_is_401(stack: LocalStack) -> None:
    reply = post(stack, mcp_token(stack))
    assert reply.status_code == HTTPStatus.OK, reply.text
    assert [t["name"] for t in reply.json()["result"]["tools"]] == ["fetch", "list_knowledge_bases", "search"]

    desktop = tokens.issue_token(
        "alice", issuer=stack.issuer, key_path=tokens.signing_key_path(stack.config.data_dir)
    )
    refused = post(stack, desktop)
    assert refused.status_code == HTTPStatus.UNAUTHORIZED
    assert 'error="invalid_token"' in refused.headers["www-authenticate"]
    # And the other way round: the API's authorizer refuses the MCP token.
    assert (
        httpx.get(
            f"{stack.api_url}/knowledge-bases", headers={"authorization": f"Bearer {mcp_token(stack)}"}
        ).status_code
        == HTTPStatus.UNAUTHORIZED
    )


def test_by_default_the_dev_provider_is_the_authorization_server(stack: LocalStack) -> None:
    mcp = stack.function_environments["McpFunction"]

    assert (mcp["MCP_TOKEN_ISSUER"], mcp["MCP_JWKS_URL"]) == (stack.issuer, f"{stack.idp_url}/jwks.json")
    assert "MCP_AUTH_ISSUER" not in mcp
