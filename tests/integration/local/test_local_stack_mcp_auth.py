"""The local stack with the service's own authorization server for MCP clients
(``StackConfig(mcp_authorization="service")``): the template as deployed (McpTokenIssuer empty), the
signing key a KMS RSA key on moto, the server's issuer the gateway's URL, and the dev identity provider
as the login provider it signs people in with."""

from __future__ import annotations

import time
from collections.abc import Iterator
from http import HTTPStatus

import boto3
import httpx
import pytest

from memmy_kb.adapters.kms_signer import KmsTokenSigner
from memmy_local import tokens
from memmy_local.stack import LocalStack, StackConfig

LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
HEADERS = {"mcp-protocol-version": "2025-06-18", "accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(tokens.HOME_ENV, str(home))
        config = StackConfig(
            gateway_port=0,
            memos_port=0,
            moto_port=0,
            idp_port=0,
            schedule_interval=0,
            mcp_authorization="service",
        )
        with LocalStack(config) as running:
            yield running


def test_the_metadata_names_the_services_own_server_at_the_gateway(stack: LocalStack) -> None:
    reply = httpx.get(f"{stack.api_url}/.well-known/oauth-protected-resource/mcp")

    assert reply.status_code == HTTPStatus.OK
    assert reply.json()["authorization_servers"] == [stack.api_url]
    assert reply.json()["resource"] == f"{stack.api_url}/mcp"


def test_the_mcp_function_trusts_the_own_server_and_reads_the_kms_key(stack: LocalStack) -> None:
    mcp = stack.function_environments["McpFunction"]

    assert (mcp["MCP_TOKEN_ISSUER"], mcp["MCP_JWKS_URL"]) == ("", "")
    assert mcp["MCP_AUTH_ISSUER"] == stack.api_url
    kms = boto3.client("kms", region_name=stack.config.region, endpoint_url=stack.moto_url)
    key = kms.describe_key(KeyId=mcp["MCP_SIGNING_KEY"])["KeyMetadata"]
    assert (key["KeySpec"], key["KeyUsage"]) == ("RSA_2048", "SIGN_VERIFY")
    aliases = {a["AliasName"]: a.get("TargetKeyId") for a in kms.list_aliases()["Aliases"]}
    assert aliases[stack.refs["McpSigningKeyAlias"]] == key["KeyId"]


def test_the_server_signs_people_in_with_the_dev_provider(stack: LocalStack) -> None:
    server = stack.function_environments["McpAuthFunction"]

    assert server["LOGIN_ISSUER"] == stack.issuer
    assert (server["MCP_LOGIN_CLIENT_ID"], server["MCP_LOGIN_CLIENT_PARAMETER"]) == ("memmy-mcp-auth", "")
    assert server["MCP_AUTH_ISSUER"] == stack.api_url
    assert server["MCP_SIGNING_KEY"] == stack.function_environments["McpFunction"]["MCP_SIGNING_KEY"]
    assert server["MCP_RESOURCE_URL"] == f"{stack.api_url}/mcp"


def test_a_token_signed_by_the_stacks_kms_key_lists_the_tools(stack: LocalStack) -> None:
    kms = boto3.client("kms", region_name=stack.config.region, endpoint_url=stack.moto_url)
    signer = KmsTokenSigner(stack.function_environments["McpFunction"]["MCP_SIGNING_KEY"], kms)
    now = int(time.time())
    claims = {
        "iss": stack.api_url,
        "sub": "alice",
        "aud": f"{stack.api_url}/mcp",
        "scope": "kb.search",
        "client_id": "https://client.example/oauth/client.json",
        "client_name": "Example",
        "auth_time": now,
        "iat": now,
        "exp": now + 600,
        "jti": "local-own-1",
    }
    headers = {**HEADERS, "authorization": f"Bearer {signer.sign(claims)}"}

    reply = httpx.post(f"{stack.api_url}/mcp", json=LIST, headers=headers)
    by_dev_issuer = httpx.post(
        f"{stack.api_url}/mcp",
        json=LIST,
        headers={**HEADERS, "authorization": f"Bearer {signer.sign({**claims, 'iss': stack.issuer})}"},
    )

    assert reply.status_code == HTTPStatus.OK, reply.text
    assert [t["name"] for t in reply.json()["result"]["tools"]] == ["fetch", "list_knowledge_bases", "search"]
    assert by_dev_issuer.status_code == HTTPStatus.UNAUTHORIZED
