"""memmy_local.provision.keys: the MCP authorization server's KMS signing key and alias as template.yaml
declares them (moto signs with the key), and an SSM parameter; a property not provisioned is refused."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from memmy_local.provision.context import ProvisionContext
from memmy_local.provision.keys import provision_kms_key, provision_ssm_parameter
from memmy_local.provision.resources import LOCAL_ACCOUNT_ID, provision

REGION = "us-east-1"
JWT_PARAMETERS = {"JwtIssuer": "https://login.memmy.test", "JwtAudience": "memmy-desktop"}


@pytest.fixture
def aws(aws_env: None) -> Iterator[None]:
    with mock_aws():
        yield


def context() -> ProvisionContext:
    return ProvisionContext(REGION, None, "memmy-local", "key", {})


@pytest.mark.usefixtures("aws")
def test_the_signing_key_is_the_templates_and_signs(template: dict[str, Any]) -> None:
    refs = provision(template, endpoint_url=None, memos_api_key="k", parameters=JWT_PARAMETERS).refs
    kms = boto3.client("kms", region_name=REGION)

    key = kms.describe_key(KeyId=refs["McpSigningKey.Arn"])["KeyMetadata"]
    assert (key["KeyId"], key["KeySpec"], key["KeyUsage"]) == (
        refs["McpSigningKey"],
        "RSA_2048",
        "SIGN_VERIFY",
    )
    policy = json.loads(kms.get_key_policy(KeyId=key["KeyId"], PolicyName="default")["Policy"])
    assert policy["Statement"][0]["Principal"] == {"AWS": f"arn:aws:iam::{LOCAL_ACCOUNT_ID}:root"}
    (alias,) = [a for a in kms.list_aliases()["Aliases"] if a["AliasName"] == refs["McpSigningKeyAlias"]]
    assert alias["AliasName"] == "alias/memmy-local-mcp-signing"
    assert alias["TargetKeyId"] == key["KeyId"]
    signed = kms.sign(
        KeyId=alias["AliasName"],
        Message=b"x",
        MessageType="RAW",
        SigningAlgorithm="RSASSA_PKCS1_V1_5_SHA_256",
    )
    assert signed["Signature"]
    # Without the Cognito pool (the local stack's dev provider is JwtIssuer) there is no app client to publish.
    assert "McpLoginClientIdParameter" not in refs


@pytest.mark.usefixtures("aws")
def test_a_key_property_not_provisioned_is_refused() -> None:
    with pytest.raises(NotImplementedError, match="Origin"):
        provision_kms_key(
            context(), "Key", {"KeySpec": "RSA_2048", "KeyUsage": "SIGN_VERIFY", "Origin": "EXTERNAL"}
        )


@pytest.mark.usefixtures("aws")
def test_an_ssm_parameter_is_put_under_its_name() -> None:
    refs = provision_ssm_parameter(
        context(), "Param", {"Name": "/memmy-local/x", "Type": "String", "Value": "v"}
    )

    assert refs == {"Param": "/memmy-local/x"}
    assert (
        boto3.client("ssm", region_name=REGION).get_parameter(Name="/memmy-local/x")["Parameter"]["Value"]
        == "v"
    )
