"""The authorization server's adapters as the composition root builds them (memmy_kb.adapters.mcp_auth
through ``composition.get_mcp_auth``, on moto): built without any AWS call (the key and the parameter may
appear after), the signer on the KMS key, and the login client's id from the settings or, on first use
only, from its SSM parameter."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from memmy_kb.composition import get_mcp_auth, reset_composition
from memmy_kb.domain.ports.mcp_auth import LoginRefused

PARAMETER = "/memmy/mcp-login-client-id"


@pytest.fixture
def moto(aws_env: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    monkeypatch.setenv("TABLE_NAME", "memmy-test")
    monkeypatch.setenv("LOGIN_ISSUER", "http://127.0.0.1:9")
    monkeypatch.setenv("MCP_LOGIN_CLIENT_PARAMETER", PARAMETER)
    monkeypatch.delenv("MCP_LOGIN_CLIENT_ID", raising=False)
    reset_composition()
    with mock_aws():
        yield {
            "kms": boto3.client("kms", region_name="us-east-1"),
            "ssm": boto3.client("ssm", region_name="us-east-1"),
        }
    reset_composition()


def test_the_ports_are_built_before_the_key_and_the_parameter_exist(
    moto: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCP_SIGNING_KEY", "alias/memmy-mcp")  # nothing by that name yet
    ports = get_mcp_auth()

    key = moto["kms"].create_key(KeySpec="RSA_2048", KeyUsage="SIGN_VERIFY")["KeyMetadata"]["KeyId"]
    moto["kms"].create_alias(AliasName="alias/memmy-mcp", TargetKeyId=key)
    moto["ssm"].put_parameter(Name=PARAMETER, Value="cognito-app-client", Type="String")

    assert ports.signer.jwks()["keys"][0]["kty"] == "RSA"
    assert ports.signer.sign({"sub": "alice"}).count(".") == 2
    assert ports.login.client_id == "cognito-app-client"  # type: ignore[attr-defined]


def test_the_settings_client_id_is_used_without_reading_the_parameter(
    moto: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCP_LOGIN_CLIENT_ID", "memmy-mcp-auth")

    assert get_mcp_auth().login.client_id == "memmy-mcp-auth"  # type: ignore[attr-defined]


def test_a_missing_login_client_is_refused_with_a_sentence_on_first_use(
    moto: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCP_LOGIN_CLIENT_PARAMETER", "")
    login = get_mcp_auth().login

    with pytest.raises(LoginRefused, match="No login client is configured"):
        login.client_id  # type: ignore[attr-defined]  # noqa: B018
