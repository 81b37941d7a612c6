"""The MCP authorization server in template.yaml (McpAuthFunction): its routes open and the registration
route throttled, its privileges exactly what it is for, its KMS key, the Cognito app client it signs people
in with and the SSM parameter that names it without a dependency cycle, and the Rules that refuse another
issuer without its JWKS; and the mcp function's trust in it when McpTokenIssuer is empty."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from cfnlint.api import lint

from memmy_local.template import http_routes, load_template, parameter_defaults
from memmy_local.template_intrinsics import condition_refs, referenced_logical_ids, resolve_intrinsics
from tests.support.mcp_auth_events import AUTHORIZATION_SERVER_ROUTES
from tests.support.sam import LINT_CONFIG, translate

ROUTES = AUTHORIZATION_SERVER_ROUTES
OWN_PARTITIONS = ["MCPCLIENT#*", "MCPAUTH#*", "MCPCODE#*", "MCPRT#*", "MCPFAM#*", "MCPREG#*"]
KEY_ARN = {"Fn::GetAtt": ["McpSigningKey", "Arn"]}
PARAMETER_NAME = "/${AWS::StackName}/mcp-login-client-id"
PSEUDO = {
    "AWS::Region": "eu-west-1",
    "AWS::StackName": "memmy-kb",
    "AWS::AccountId": "111122223333",
    "AWS::Partition": "aws",
    "AWS::URLSuffix": "amazonaws.com",
    "UserPool.ProviderURL": "cognito-idp.eu-west-1.amazonaws.com/eu-west-1_AbC",
    "McpSigningKey.Arn": "arn:aws:kms:eu-west-1:111122223333:key/k-1",
    "HttpApi": "abc123",
    "DesktopAppClient": "desktop-client",
}


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return load_template()


def properties(template: dict[str, Any], name: str) -> dict[str, Any]:
    return template["Resources"][name]["Properties"]


def as_list(value: Any) -> list[str]:
    return value if isinstance(value, list) else [value]


def variables(template: dict[str, Any], function: str, parameters: dict[str, str]) -> dict[str, Any]:
    """The function's environment as deployed with ``parameters`` (the rest at their defaults)."""
    refs = {**PSEUDO, **parameter_defaults(template), **parameters}
    refs.update(condition_refs(template, refs))
    resolved: dict[str, Any] = resolve_intrinsics(
        properties(template, function)["Environment"]["Variables"], refs
    )
    return resolved


def test_the_eight_routes_are_the_functions_and_open(template: dict[str, Any]) -> None:
    routes = {(r.method, r.path) for r in http_routes(template) if r.function == "McpAuthFunction"}

    assert routes == ROUTES
    for event in properties(template, "McpAuthFunction")["Events"].values():
        assert event["Properties"]["Auth"] == {"Authorizer": "NONE"}


def test_open_registration_is_throttled_far_below_the_default(template: dict[str, Any]) -> None:
    api = properties(template, "HttpApi")
    register, default = api["RouteSettings"]["POST /oauth/register"], api["DefaultRouteSettings"]

    assert register["ThrottlingRateLimit"] * 10 <= default["ThrottlingRateLimit"]
    assert register["ThrottlingBurstLimit"] * 10 <= default["ThrottlingBurstLimit"]


def test_the_function_is_sized_and_logs_as_the_contract_says(template: dict[str, Any]) -> None:
    function = properties(template, "McpAuthFunction")

    assert (function["CodeUri"], function["Handler"]) == ("functions/mcp_auth/", "app.lambda_handler")
    assert (function["MemorySize"], function["Timeout"]) == (512, 10)
    group = properties(template, function["LoggingConfig"]["LogGroup"]["Ref"])
    assert group["LogGroupName"] == {"Fn::Sub": "/aws/lambda/${AWS::StackName}-mcp-auth"}
    assert group["RetentionInDays"] == properties(template, "McpLogGroup")["RetentionInDays"]


def test_its_privileges_are_exactly_its_partitions_the_key_and_the_parameter(
    template: dict[str, Any],
) -> None:
    statements = [s for p in properties(template, "McpAuthFunction")["Policies"] for s in p["Statement"]]
    granted = {
        (
            tuple(sorted(as_list(s["Action"]))),
            json.dumps(s["Resource"], sort_keys=True),
            tuple(s.get("Condition", {}).get("ForAllValues:StringLike", {}).get("dynamodb:LeadingKeys", [])),
        )
        for s in statements
    }
    table = json.dumps({"Fn::GetAtt": ["Table", "Arn"]})
    parameter_arn = "arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}:parameter" + PARAMETER_NAME

    assert all(s["Effect"] == "Allow" for s in statements)
    assert granted == {
        (("kms:GetPublicKey", "kms:Sign"), json.dumps(KEY_ARN), ()),
        (
            (
                "dynamodb:ConditionCheckItem",
                "dynamodb:DeleteItem",
                "dynamodb:GetItem",
                "dynamodb:PutItem",
                "dynamodb:UpdateItem",
            ),
            table,
            tuple(OWN_PARTITIONS),
        ),
        (("dynamodb:GetItem",), table, ("MCPCONN#*",)),
        (("ssm:GetParameter",), json.dumps({"Fn::Sub": parameter_arn}), ()),
    }


def test_the_mcp_function_may_only_read_the_keys_public_half(template: dict[str, Any]) -> None:
    statements = [s for p in properties(template, "McpFunction")["Policies"] for s in p["Statement"]]
    kms = [s for s in statements if any(a.startswith("kms:") for a in as_list(s["Action"]))]

    assert [(s["Action"], s["Resource"]) for s in kms] == [("kms:GetPublicKey", KEY_ARN)]


def test_the_signing_key_is_rsa_for_signing_and_outlives_the_stack(template: dict[str, Any]) -> None:
    key = template["Resources"]["McpSigningKey"]

    assert (key["Type"], key["DeletionPolicy"], key["UpdateReplacePolicy"]) == (
        "AWS::KMS::Key",
        "Retain",
        "Retain",
    )
    assert (key["Properties"]["KeySpec"], key["Properties"]["KeyUsage"]) == ("RSA_2048", "SIGN_VERIFY")
    assert key["Properties"]["PendingWindowInDays"] == 30
    (administers,) = key["Properties"]["KeyPolicy"]["Statement"]
    assert administers["Principal"] == {
        "AWS": {"Fn::Sub": "arn:${AWS::Partition}:iam::${AWS::AccountId}:root"}
    }
    alias = properties(template, "McpSigningKeyAlias")
    assert alias["TargetKeyId"] == {"Ref": "McpSigningKey"}
    assert alias["AliasName"]["Fn::Sub"].startswith("alias/${AWS::StackName}")


def test_the_login_app_client_calls_back_to_the_apis_oauth_callback(template: dict[str, Any]) -> None:
    client = template["Resources"]["McpLoginAppClient"]
    api_url = template["Outputs"]["ApiUrl"]["Value"]["Fn::Sub"]

    assert client["Condition"] == "CreateUserPool"
    assert client["Properties"]["CallbackURLs"] == [{"Fn::Sub": api_url + "oauth/callback"}]
    assert (client["Properties"]["GenerateSecret"], client["Properties"]["AllowedOAuthFlows"]) == (
        False,
        ["code"],
    )
    metadata = template["Outputs"]["McpAuthorizationServerMetadataUrl"]["Value"]["Fn::Sub"]
    assert metadata == api_url + ".well-known/oauth-authorization-server"


def test_the_ssm_parameter_is_the_one_the_function_is_told_to_read(template: dict[str, Any]) -> None:
    parameter = template["Resources"]["McpLoginClientIdParameter"]
    environment = properties(template, "McpAuthFunction")["Environment"]["Variables"]

    assert parameter["Condition"] == "CreateUserPool"
    assert parameter["Properties"]["Value"] == {"Ref": "McpLoginAppClient"}
    assert parameter["Properties"]["Name"] == {"Fn::Sub": PARAMETER_NAME}
    assert environment["MCP_LOGIN_CLIENT_PARAMETER"] == {
        "Fn::If": ["CreateUserPool", {"Fn::Sub": PARAMETER_NAME}, ""]
    }


def test_the_functions_environment_names_neither_the_app_client_nor_its_parameter(
    template: dict[str, Any],
) -> None:
    # The app client refers to the API, the API to the function: a reference back would be a cycle.
    environment = properties(template, "McpAuthFunction")["Environment"]

    assert not referenced_logical_ids(environment) & {
        "McpLoginAppClient",
        "McpLoginClientIdParameter",
        "HttpApi",
    }


def test_the_linter_reports_the_cycle_a_reference_to_the_app_client_would_make(
    template: dict[str, Any],
) -> None:
    broken = copy.deepcopy(template)
    environment = broken["Resources"]["McpAuthFunction"]["Properties"]["Environment"]["Variables"]
    environment["MCP_LOGIN_CLIENT_ID"] = {"Fn::If": ["CreateUserPool", {"Ref": "McpLoginAppClient"}, ""]}

    flagged = {m.rule.id for m in lint(json.dumps(translate(broken)), config=LINT_CONFIG)}

    assert "E3004" in flagged


@pytest.mark.parametrize(
    ("parameters", "login"),
    [
        ({}, {"MCP_LOGIN_CLIENT_PARAMETER": "/memmy-kb/mcp-login-client-id", "MCP_LOGIN_CLIENT_ID": ""}),
        (
            {"JwtIssuer": "https://login.example.com", "JwtAudience": "memmy-api"},
            {"MCP_LOGIN_CLIENT_PARAMETER": "", "MCP_LOGIN_CLIENT_ID": "memmy-mcp-auth"},
        ),
    ],
    ids=["cognito", "other-provider"],
)
def test_the_server_signs_people_in_with_the_login_provider(
    template: dict[str, Any], parameters: dict[str, str], login: dict[str, str]
) -> None:
    server = variables(template, "McpAuthFunction", parameters)

    assert server["LOGIN_ISSUER"] == variables(template, "ManageKbFunction", parameters)["LOGIN_ISSUER"]
    assert {k: server[k] for k in login} == login
    assert server["MCP_SIGNING_KEY"] == PSEUDO["McpSigningKey.Arn"]
    mcp = variables(template, "McpFunction", parameters)
    assert {k: server[k] for k in ("MCP_RESOURCE_URL", "MCP_SCOPE")} == {
        k: mcp[k] for k in ("MCP_RESOURCE_URL", "MCP_SCOPE")
    }


def test_by_default_the_mcp_function_trusts_the_services_own_server(template: dict[str, Any]) -> None:
    mcp = variables(template, "McpFunction", {})

    assert (mcp["MCP_TOKEN_ISSUER"], mcp["MCP_JWKS_URL"]) == ("", "")
    assert mcp["MCP_SIGNING_KEY"] == PSEUDO["McpSigningKey.Arn"]


def test_another_issuer_is_trusted_with_its_jwks(template: dict[str, Any]) -> None:
    given = {"McpTokenIssuer": "https://as.example.com", "McpJwksUrl": "https://as.example.com/jwks"}

    mcp = variables(template, "McpFunction", given)

    assert (mcp["MCP_TOKEN_ISSUER"], mcp["MCP_JWKS_URL"]) == (given["McpTokenIssuer"], given["McpJwksUrl"])


def test_an_issuer_without_its_jwks_is_refused_before_anything_is_created(template: dict[str, Any]) -> None:
    rule = template["Rules"]["OtherMcpIssuerNeedsJwks"]
    (assertion,) = rule["Assertions"]
    as_conditions = {"Conditions": {"Applies": rule["RuleCondition"], "Holds": assertion["Assert"]}}

    def refused(parameters: dict[str, str]) -> bool:
        values = condition_refs(as_conditions, {**parameter_defaults(template), **parameters})
        return values == {"Condition:Applies": "true", "Condition:Holds": "false"}

    assert refused({"McpTokenIssuer": "https://as.example.com"})
    assert not refused(
        {"McpTokenIssuer": "https://as.example.com", "McpJwksUrl": "https://as.example.com/jwks"}
    )
    assert not refused({})
    assert not refused({"McpJwksUrl": "https://as.example.com/jwks"})
