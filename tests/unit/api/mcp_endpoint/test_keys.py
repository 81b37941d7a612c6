"""Which issuer ``POST /mcp`` trusts and where its keys come from (``memmy_kb.api.mcp_endpoint.keys``):
another server's issuer and JWKS URL when configured, else the service's own server, whose keys are the
KMS key's public half; a KMS error is ``KeysUnavailable`` (503), never a refusal of the token."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import boto3
import pytest
from moto import mock_aws

from memmy_kb import composition
from memmy_kb.adapters.kms_signer import KmsTokenSigner
from memmy_kb.api.mcp_endpoint.bearer import KeysUnavailable
from memmy_kb.api.mcp_endpoint.keys import signing_key_jwks, token_issuer, token_keys
from memmy_kb.settings import Settings, get_settings

REGION = "us-east-1"

EVENT = {"requestContext": {"domainName": "abc123.execute-api.eu-west-1.amazonaws.com"}}


MCP_VARIABLES = ("MCP_TOKEN_ISSUER", "MCP_JWKS_URL", "MCP_AUTH_ISSUER", "MCP_SIGNING_KEY")


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    monkeypatch.setenv("TABLE_NAME", "t")
    yield monkeypatch
    composition.reset_composition()


def settings(environment: pytest.MonkeyPatch, **env: str) -> Settings:
    """The settings a container loads with ``env`` as its MCP variables."""
    for name in MCP_VARIABLES:
        environment.setenv(name, env.get(name, ""))
    composition.reset_composition()
    return get_settings()


@pytest.fixture
def kms(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    with mock_aws():
        yield


def signing_key() -> str:
    """A new RSA_2048 SIGN_VERIFY key on moto, as template.yaml declares McpSigningKey; its ARN."""
    kms = boto3.client("kms", region_name=REGION)
    return str(kms.create_key(KeySpec="RSA_2048", KeyUsage="SIGN_VERIFY")["KeyMetadata"]["Arn"])


def test_the_own_server_is_the_requests_domain_unless_an_issuer_is_configured(
    environment: pytest.MonkeyPatch,
) -> None:
    assert token_issuer(settings(environment), EVENT) == "https://abc123.execute-api.eu-west-1.amazonaws.com"
    assert (
        token_issuer(settings(environment, MCP_AUTH_ISSUER="https://auth.example/"), EVENT)
        == "https://auth.example"
    )
    other = settings(
        environment, MCP_TOKEN_ISSUER="https://as.example", MCP_AUTH_ISSUER="https://auth.example"
    )
    assert token_issuer(other, EVENT) == "https://as.example"


def test_a_jwks_url_wins_over_the_signing_key(environment: pytest.MonkeyPatch) -> None:
    keys = token_keys(
        settings(environment, MCP_JWKS_URL="https://as.example/jwks", MCP_SIGNING_KEY="arn:aws:kms:k")
    )

    assert keys is token_keys(settings(environment, MCP_JWKS_URL="https://as.example/jwks"))
    assert keys is not token_keys(settings(environment, MCP_SIGNING_KEY="arn:aws:kms:k"))


def test_without_a_jwks_url_or_a_signing_key_no_token_can_be_checked(environment: pytest.MonkeyPatch) -> None:
    with pytest.raises(KeysUnavailable, match="MCP_SIGNING_KEY"):
        token_keys(settings(environment))


def test_the_signing_keys_public_half_is_read_from_kms_once(kms: None, environment: pytest.MonkeyPatch) -> None:
    arn = signing_key()
    kid = KmsTokenSigner(arn, boto3.client("kms", region_name=REGION)).public_jwk()["kid"]

    keys = token_keys(settings(environment, MCP_SIGNING_KEY=arn))

    assert keys.key(kid) is not None
    assert keys.key(kid) is not None
    assert keys.fetches == 1


def test_a_kms_error_is_keys_unavailable(kms: None, environment: pytest.MonkeyPatch) -> None:
    missing = signing_key().rsplit("/", 1)[0] + "/00000000-0000-4000-8000-000000000000"
    settings(environment, MCP_SIGNING_KEY=missing)

    with pytest.raises(KeysUnavailable, match="NotFoundException"):
        signing_key_jwks(missing)


def test_a_signer_that_returns_no_key_set_is_keys_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    class NoKeySet:
        def jwks(self) -> dict[str, Any]:
            return {"keys": "none"}

    monkeypatch.setattr(composition, "get_mcp_auth", lambda: SimpleNamespace(signer=NoKeySet()))

    with pytest.raises(KeysUnavailable, match="not a key set"):
        signing_key_jwks("k")
