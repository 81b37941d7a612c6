"""The authorization server's integration tests: ``functions/mcp_auth/app.py``'s handler on moto (the
table, a KMS RSA key) with the real adapters, the dev identity provider on 127.0.0.1 as the login provider
(its ``memmy-mcp-auth`` client), and the ``mcp`` function trusting the tokens it signs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from memmy_kb import composition
from memmy_kb.composition import reset_composition
from memmy_local import tokens
from memmy_local.identity.provider import IdentityProvider
from tests.support.mcp_auth_flow import ISSUER, RESOURCE, AuthFlow
from tests.support.mcp_tokens import JwksServer


@pytest.fixture(scope="module")
def idp_key(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return tokens.load_signing_key(tmp_path_factory.mktemp("mcp-auth-idp") / "key.pem")


@pytest.fixture
def idp(idp_key: Any, tmp_path: Path) -> Iterator[IdentityProvider]:
    with IdentityProvider(idp_key, port=0, state_dir=tmp_path, mcp_resource=RESOURCE) as provider:
        yield provider


@pytest.fixture
def auth(service: Any, idp: IdentityProvider, monkeypatch: pytest.MonkeyPatch) -> Iterator[AuthFlow]:
    """The service with the ``mcp_auth`` function's settings (a KMS key made on moto) and the ``mcp``
    function's, which trusts this issuer with the key's public JWKS served on 127.0.0.1."""
    key = boto3.client("kms", region_name="us-east-1").create_key(
        KeySpec="RSA_2048", KeyUsage="SIGN_VERIFY", Description="mcp tokens"
    )["KeyMetadata"]["Arn"]
    for name, value in {
        "MCP_SIGNING_KEY": key,
        "MCP_AUTH_ISSUER": ISSUER,
        "MCP_RESOURCE_URL": RESOURCE,
        "LOGIN_ISSUER": idp.issuer,
        "MCP_LOGIN_CLIENT_ID": "memmy-mcp-auth",
        "MCP_TOKEN_ISSUER": ISSUER,
        "MCP_AUTHORIZATION_SERVER": ISSUER,
    }.items():
        monkeypatch.setenv(name, value)
    reset_composition()
    with JwksServer(composition.get_mcp_auth().signer.jwks()).serving() as jwks:
        monkeypatch.setenv("MCP_JWKS_URL", jwks.url)
        reset_composition()
        yield AuthFlow(ISSUER, RESOURCE)
    reset_composition()
