"""The local stack and template.yaml's Conditions: evaluated from the parameters, ``Fn::If`` resolved to its
branch, and a resource whose condition is false never provisioned (the Cognito pool, locally)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from memmy_local.provision.resources import provision
from memmy_local.template import TEMPLATE_PATH, function_environment, load_template
from memmy_local.template_intrinsics import (
    UnresolvableValueError,
    condition_refs,
    is_active,
    resolve_intrinsics,
)

REGION = "us-east-1"
MEMOS_KEY = "mpg-local-key-0001"

CONDITIONS = {
    "Parameters": {
        "Issuer": {"Type": "String", "Default": ""},
        "Stage": {"Type": "String", "Default": "dev"},
    },
    "Conditions": {
        "NoIssuer": {"Fn::Equals": [{"Ref": "Issuer"}, ""]},
        "HasIssuer": {"Fn::Not": [{"Condition": "NoIssuer"}]},
        "ProdWithIssuer": {
            "Fn::And": [{"Condition": "HasIssuer"}, {"Fn::Equals": ["prod", {"Ref": "Stage"}]}]
        },
        "ProdOrNoIssuer": {"Fn::Or": [{"Condition": "NoIssuer"}, {"Fn::Equals": [{"Ref": "Stage"}, "prod"]}]},
        "OnUnknown": {"Fn::Equals": [{"Ref": "Elsewhere"}, "x"]},
    },
    "Resources": {},
}


@pytest.mark.parametrize(
    ("parameters", "expected"),
    [
        ({"Issuer": "", "Stage": "dev"}, ("true", "false", "false", "true")),
        ({"Issuer": "https://login.test", "Stage": "dev"}, ("false", "true", "false", "false")),
        ({"Issuer": "https://login.test", "Stage": "prod"}, ("false", "true", "true", "true")),
    ],
)
def test_conditions_are_evaluated_from_the_parameters(
    parameters: dict[str, str], expected: tuple[str, ...]
) -> None:
    values = condition_refs(CONDITIONS, parameters)
    names = ("NoIssuer", "HasIssuer", "ProdWithIssuer", "ProdOrNoIssuer")
    assert tuple(values[f"Condition:{name}"] for name in names) == expected
    # A condition on a value the refs lack is left undecided rather than guessed.
    assert "Condition:OnUnknown" not in values


REFS = {"Condition:Yes": "true", "Condition:No": "false", "Table": "memmy-local-Table"}


def test_fn_if_takes_the_branch_of_its_condition_and_no_value_drops_the_key_or_item() -> None:
    tree = {
        "Chosen": {"Fn::If": ["Yes", {"Ref": "Table"}, {"Ref": "Missing"}]},
        "Other": {"Fn::If": ["No", {"Ref": "Missing"}, "fallback"]},
        "Dropped": {"Fn::If": ["No", "kept", {"Ref": "AWS::NoValue"}]},
        "List": ["a", {"Fn::If": ["Yes", {"Ref": "AWS::NoValue"}, "b"]}, {"Fn::If": ["Yes", ["c"], "d"]}],
        "Nested": {"Fn::If": ["Yes", {"Inner": {"Fn::If": ["No", 1, 2]}}, {}]},
    }
    assert resolve_intrinsics(tree, REFS) == {
        "Chosen": "memmy-local-Table",
        "Other": "fallback",
        "List": ["a", ["c"]],
        "Nested": {"Inner": 2},
    }


def test_fn_if_on_an_unknown_condition_or_a_bare_no_value_is_unresolvable() -> None:
    with pytest.raises(UnresolvableValueError, match=r"Fn::If.*'Maybe'"):
        resolve_intrinsics({"Fn::If": ["Maybe", "a", "b"]}, REFS)
    with pytest.raises(UnresolvableValueError, match="AWS::NoValue"):
        resolve_intrinsics({"Fn::If": ["No", "a", {"Ref": "AWS::NoValue"}]}, REFS)


def test_a_function_environment_evaluates_the_conditions_it_needs() -> None:
    # Given a function whose variables depend on a condition, and refs that do not carry its value
    template = {
        **CONDITIONS,
        "Resources": {
            "Fn": {
                "Type": "AWS::Serverless::Function",
                "Properties": {
                    "Environment": {
                        "Variables": {
                            "ISSUER": {"Fn::If": ["NoIssuer", "built-in", {"Ref": "Issuer"}]},
                            "ONLY_WITHOUT_ISSUER": {"Fn::If": ["NoIssuer", "yes", {"Ref": "AWS::NoValue"}]},
                        }
                    }
                },
            }
        },
    }
    # Then the parameters (and their defaults) decide
    assert function_environment(template, "Fn", {"Issuer": "https://login.test"}) == {
        "ISSUER": "https://login.test"
    }
    assert function_environment(template, "Fn", {}) == {"ISSUER": "built-in", "ONLY_WITHOUT_ISSUER": "yes"}


def test_a_resource_without_a_condition_is_always_there() -> None:
    assert is_active({"Type": "AWS::SQS::Queue"}, {})
    assert is_active({"Type": "AWS::SQS::Queue", "Condition": "Yes"}, REFS)
    assert not is_active({"Type": "AWS::SQS::Queue", "Condition": "No"}, REFS)


# --------------------------------------------------------------------------------------- provisioning


@pytest.fixture
def aws(aws_env: None) -> Iterator[None]:
    with mock_aws():
        yield


@pytest.mark.usefixtures("aws")
def test_a_resource_whose_condition_is_false_is_not_provisioned_whatever_its_type() -> None:
    # Given a queue for one branch, and a type the local stack cannot make for the other
    template = {
        **CONDITIONS,
        "Resources": {
            "Queue": {"Type": "AWS::SQS::Queue", "Condition": "HasIssuer", "Properties": {}},
            "Topic": {"Type": "AWS::SNS::Topic", "Condition": "NoIssuer", "Properties": {}},
        },
    }

    # When provisioned with an issuer
    resources = provision(
        template, endpoint_url=None, memos_api_key=MEMOS_KEY, parameters={"Issuer": "https://x"}
    )

    # Then only the queue exists, and the refs say which branch was taken
    assert "Queue" in resources.refs
    assert "Topic" not in resources.refs
    assert resources.refs["Condition:NoIssuer"] == "false"
    assert len(boto3.client("sqs", region_name=REGION).list_queues().get("QueueUrls", [])) == 1

    # And without one the other branch is taken, which the local stack cannot make: it says so
    with pytest.raises(NotImplementedError, match="Topic"):
        provision(template, endpoint_url=None, memos_api_key=MEMOS_KEY)


@pytest.mark.usefixtures("aws")
def test_the_local_stack_never_makes_the_cognito_pool_and_serves_its_own_issuer() -> None:
    # Given template.yaml provisioned as the local stack does: with its own issuer and audience
    template = load_template(TEMPLATE_PATH)
    parameters = {"JwtIssuer": "http://127.0.0.1:8070", "JwtAudience": "memmy-kb"}
    resources = provision(template, endpoint_url=None, memos_api_key=MEMOS_KEY, parameters=parameters)

    # Then no user pool was created and the Cognito resources have no refs
    assert resources.refs["Condition:CreateUserPool"] == "false"
    assert boto3.client("cognito-idp", region_name=REGION).list_user_pools(MaxResults=10)["UserPools"] == []
    assert not {"UserPool", "UserPoolDomain", "DesktopAppClient"} & set(resources.refs)

    # And the login configuration manage_kb serves is the local provider's, the access token sent
    environment = function_environment(template, "ManageKbFunction", resources.refs)
    assert {k: v for k, v in environment.items() if k.startswith("LOGIN_")} == {
        "LOGIN_ISSUER": "http://127.0.0.1:8070",
        "LOGIN_AUDIENCE": "memmy-kb",
        "LOGIN_CLIENT_ID": "memmy-desktop",
        "LOGIN_SCOPES": "openid profile email phone offline_access",
        "LOGIN_BEARER_TOKEN": "access_token",
    }


def test_a_fresh_deploy_is_not_a_local_stack(aws_env: None) -> None:
    # The template's defaults create the Cognito pool, which the local stack does not emulate: provisioning
    # them refuses clearly instead of running without a login.
    template: dict[str, Any] = load_template(TEMPLATE_PATH)
    with (
        mock_aws(),
        pytest.raises(NotImplementedError, match=r"UserPool\w*: no local provisioner for AWS::Cognito"),
    ):
        provision(template, endpoint_url=None, memos_api_key=MEMOS_KEY)
