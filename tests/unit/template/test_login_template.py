"""template.yaml's login: each branch of ``CreateUserPool`` (and of ``CreateE2eLoginClient``, make e2e-stage's
sign-ins) resolved as CloudFormation would resolve it.

A fresh deploy (``JwtIssuer`` empty) creates a Cognito user pool, its hosted sign-in domain and the desktop's
app client, and the API trusts that pool's ID tokens; with ``JwtIssuer`` given none of them exist and the
API trusts that provider. The translated template is evaluated for both parameter sets: its conditions,
``Fn::If`` branches and the values the authorizer, manage_kb's ``LOGIN_*`` and the outputs end up with.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from cfnlint.api import lint

from memmy_kb.api.models.login import BEARER_TOKENS
from memmy_kb_client.desktop.state import DEFAULT_PORT
from memmy_local.template import TEMPLATE_PATH, load_template, parameter_defaults
from memmy_local.template_intrinsics import (
    condition_refs,
    is_active,
    referenced_logical_ids,
    resolve_intrinsics,
)
from tests.support.sam import LINT_CONFIG, resources_of, translate

REGION = "eu-west-1"
STACK_ID = f"arn:aws:cloudformation:{REGION}:111122223333:stack/memmy-kb/1a2b3c4d-5e6f-4a1b-9c2d-0e1f2a3b4c5d"
POOL_ID = f"{REGION}_AbCdEf123"
CLIENT_ID = "4tq0example0desktop0client"
E2E_CLIENT_ID = "7e2eexample0e2e0client"
# What CloudFormation would return for the Cognito resources, were they created.
PHYSICAL = {
    "UserPool": POOL_ID,
    "UserPool.ProviderURL": f"cognito-idp.{REGION}.amazonaws.com/{POOL_ID}",
    "DesktopAppClient": CLIENT_ID,
    "E2eLoginClient": E2E_CLIENT_ID,
    "UserPoolDomain": "memmy-kb-1a2b3c4d",
}
COGNITO_TYPES = {"AWS::Cognito::UserPool", "AWS::Cognito::UserPoolDomain", "AWS::Cognito::UserPoolClient"}

FRESH: dict[str, str] = {}
OTHER_PROVIDER = {
    "JwtIssuer": "https://login.example.com/realms/memmy",
    "JwtAudience": "memmy-api",
    "DesktopClientId": "memmy-desktop-app",
    "LoginScopes": "openid profile email phone offline_access",
    "LoginBearerToken": "access_token",
}


class Deployed(Mapping[str, str]):
    """The refs of a stack deployed with ``parameters``: parameter values and pseudo parameters, the
    conditions, and a physical value for each resource that exists (and for its attributes), nothing for
    the others."""

    def __init__(self, template: Mapping[str, Any], parameters: Mapping[str, str]) -> None:
        base = {
            "AWS::Region": REGION,
            "AWS::StackName": "memmy-kb",
            "AWS::StackId": STACK_ID,
            "AWS::AccountId": "111122223333",
            "AWS::Partition": "aws",
            "AWS::URLSuffix": "amazonaws.com",
            **parameter_defaults(template),
            **parameters,
        }
        self._values = {**base, **condition_refs(template, base)}
        self.parameters = set(template["Parameters"])
        self.active: set[str] = set()
        self.active = {name for name, resource in template["Resources"].items() if is_active(resource, self)}

    def __getitem__(self, name: str) -> str:
        if name in self._values:
            return self._values[name]
        logical_id = name.partition(".")[0]
        if logical_id in self.active:
            return PHYSICAL.get(name, f"<{name}>")
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def chosen(self, value: Any) -> Any:
        """``value`` with every ``Fn::If`` replaced by the branch this deployment takes."""
        if isinstance(value, list):
            return [self.chosen(item) for item in value]
        if not isinstance(value, Mapping):
            return value
        if set(value) == {"Fn::If"}:
            condition, if_true, if_false = value["Fn::If"]
            return self.chosen(if_true if self[f"Condition:{condition}"] == "true" else if_false)
        return {key: self.chosen(item) for key, item in value.items()}


@pytest.fixture(scope="module")
def sam_template() -> dict[str, Any]:
    return load_template(TEMPLATE_PATH)


@pytest.fixture(scope="module")
def cloudformation(sam_template: dict[str, Any]) -> dict[str, Any]:
    return translate(sam_template)


def authorizer(cloudformation: Mapping[str, Any]) -> dict[str, Any]:
    (api,) = resources_of(dict(cloudformation), "AWS::ApiGatewayV2::Api").values()
    scheme = api["Properties"]["Body"]["components"]["securitySchemes"]["MemmyJwt"]
    configuration: dict[str, Any] = scheme["x-amazon-apigateway-authorizer"]["jwtConfiguration"]
    return configuration


def login_environment(cloudformation: Mapping[str, Any], deployed: Deployed) -> dict[str, str]:
    variables = cloudformation["Resources"]["ManageKbFunction"]["Properties"]["Environment"]["Variables"]
    return {k: v for k, v in resolve_intrinsics(variables, deployed).items() if k.startswith("LOGIN_")}


def outputs(cloudformation: Mapping[str, Any], deployed: Deployed) -> dict[str, str]:
    return {
        name: resolve_intrinsics(output["Value"], deployed)
        for name, output in cloudformation["Outputs"].items()
        if is_active(output, deployed)
    }


# -------------------------------------------------------------------------------------- the branches


def test_a_fresh_deploy_trusts_the_id_tokens_of_its_own_cognito_pool(cloudformation: dict[str, Any]) -> None:
    # Given the template deployed with every parameter at its default
    deployed = Deployed(cloudformation, FRESH)

    # Then the pool, its hosted pages, the desktop's and the MCP authorization server's clients exist, and
    # no e2e client
    cognito = {name for name, r in cloudformation["Resources"].items() if r["Type"] in COGNITO_TYPES}
    assert cognito & deployed.active == {"UserPool", "UserPoolDomain", "DesktopAppClient", "McpLoginAppClient"}
    assert cognito == {"UserPool", "UserPoolDomain", "DesktopAppClient", "McpLoginAppClient", "E2eLoginClient"}

    # And the authorizer requires the pool as issuer and the desktop's client as audience (ID tokens)
    issuer = f"https://cognito-idp.{REGION}.amazonaws.com/{POOL_ID}"
    assert resolve_intrinsics(authorizer(cloudformation), deployed) == {
        "issuer": issuer,
        "audience": [CLIENT_ID],
    }

    # And the desktop learns exactly that, and to send the ID token
    assert login_environment(cloudformation, deployed) == {
        "LOGIN_ISSUER": issuer,
        "LOGIN_AUDIENCE": CLIENT_ID,
        "LOGIN_CLIENT_ID": CLIENT_ID,
        "LOGIN_SCOPES": "openid email phone profile",
        "LOGIN_BEARER_TOKEN": "id_token",
    }
    values = outputs(cloudformation, deployed)
    assert values["LoginIssuer"] == issuer
    assert values["LoginClientId"] == CLIENT_ID
    assert values["UserPoolId"] == POOL_ID
    assert values["LoginPagesUrl"] == f"https://memmy-kb-1a2b3c4d.auth.{REGION}.amazoncognito.com"
    assert "E2eLoginClientId" not in values


def test_the_e2e_client_is_made_only_when_asked_and_the_api_then_takes_its_tokens_too(
    cloudformation: dict[str, Any],
) -> None:
    # Given the pool deployed with EnableE2eLogin (make e2e-stage)
    deployed = Deployed(cloudformation, {"EnableE2eLogin": "true"})
    assert "E2eLoginClient" in deployed.active

    # Then the authorizer takes the ID tokens of both clients, the desktop's first
    issuer = f"https://cognito-idp.{REGION}.amazonaws.com/{POOL_ID}"
    assert resolve_intrinsics(authorizer(cloudformation), deployed) == {
        "issuer": issuer,
        "audience": [CLIENT_ID, E2E_CLIENT_ID],
    }
    # And the desktop still logs in with its own client only, as before
    assert login_environment(cloudformation, deployed)["LOGIN_CLIENT_ID"] == CLIENT_ID
    assert outputs(cloudformation, deployed)["E2eLoginClientId"] == E2E_CLIENT_ID
    # And with another provider there is no e2e client, whatever the parameter says
    other = Deployed(cloudformation, {**OTHER_PROVIDER, "EnableE2eLogin": "true"})
    assert "E2eLoginClient" not in other.active
    assert resolve_intrinsics(authorizer(cloudformation), other)["audience"] == [OTHER_PROVIDER["JwtAudience"]]


def test_the_e2e_client_signs_in_only_with_iam_credentials(sam_template: dict[str, Any]) -> None:
    client = sam_template["Resources"]["E2eLoginClient"]
    properties = client["Properties"]
    assert client["Condition"] == "CreateE2eLoginClient"
    assert sam_template["Parameters"]["EnableE2eLogin"]["Default"] == "false"
    assert properties["UserPoolId"] == {"Ref": "UserPool"}
    # AdminInitiateAuth is signed with IAM credentials: nothing a browser, the desktop or a person without
    # them can use. No OAuth flow, no hosted pages, no password sign-in of the public kind (USER_PASSWORD_AUTH).
    assert properties["ExplicitAuthFlows"] == ["ALLOW_ADMIN_USER_PASSWORD_AUTH", "ALLOW_REFRESH_TOKEN_AUTH"]
    assert properties["AllowedOAuthFlowsUserPoolClient"] is False
    assert not {"AllowedOAuthFlows", "CallbackURLs", "SupportedIdentityProviders"} & set(properties)
    assert properties["GenerateSecret"] is False
    # Its ID tokens carry the claims the service reads, like the desktop's
    desktop = sam_template["Resources"]["DesktopAppClient"]["Properties"]
    assert properties["ReadAttributes"] == desktop["ReadAttributes"]
    assert properties["WriteAttributes"] == desktop["WriteAttributes"]
    assert (properties["IdTokenValidity"], properties["TokenValidityUnits"]["IdToken"]) == (60, "minutes")


@pytest.mark.parametrize("bearer_token", BEARER_TOKENS)
def test_another_issuer_replaces_the_pool_with_the_parameters(
    cloudformation: dict[str, Any], bearer_token: str
) -> None:
    # Given the template deployed for another OpenID Connect provider
    deployed = Deployed(cloudformation, {**OTHER_PROVIDER, "LoginBearerToken": bearer_token})

    # Then no Cognito resource exists
    assert not {
        name for name in deployed.active if cloudformation["Resources"][name]["Type"] in COGNITO_TYPES
    }

    # And the authorizer and the desktop's configuration are the parameters, as given
    assert resolve_intrinsics(authorizer(cloudformation), deployed) == {
        "issuer": OTHER_PROVIDER["JwtIssuer"],
        "audience": [OTHER_PROVIDER["JwtAudience"]],
    }
    assert login_environment(cloudformation, deployed) == {
        "LOGIN_ISSUER": OTHER_PROVIDER["JwtIssuer"],
        "LOGIN_AUDIENCE": OTHER_PROVIDER["JwtAudience"],
        "LOGIN_CLIENT_ID": OTHER_PROVIDER["DesktopClientId"],
        "LOGIN_SCOPES": OTHER_PROVIDER["LoginScopes"],
        "LOGIN_BEARER_TOKEN": bearer_token,
    }
    values = outputs(cloudformation, deployed)
    assert (values["LoginIssuer"], values["LoginClientId"]) == (
        OTHER_PROVIDER["JwtIssuer"],
        OTHER_PROVIDER["DesktopClientId"],
    )
    assert not {"UserPoolId", "LoginPagesUrl"} & set(values)


@pytest.mark.parametrize(
    "parameters",
    [FRESH, {"EnableE2eLogin": "true"}, OTHER_PROVIDER, {**OTHER_PROVIDER, "EnableE2eLogin": "true"}],
    ids=["cognito", "cognito-e2e", "other-provider", "other-provider-e2e"],
)
def test_in_each_branch_nothing_refers_to_a_resource_that_is_not_there(
    cloudformation: dict[str, Any], parameters: dict[str, str]
) -> None:
    deployed = Deployed(cloudformation, parameters)
    known = deployed.active | deployed.parameters
    for name in deployed.active:
        resource = cloudformation["Resources"][name]
        chosen = deployed.chosen({k: v for k, v in resource.items() if k in ("Properties", "DependsOn")})
        depends_on = chosen.get("DependsOn", [])
        names = referenced_logical_ids(chosen) | set(
            [depends_on] if isinstance(depends_on, str) else depends_on
        )
        assert names <= known, (name, names - known)
    for name, output in cloudformation["Outputs"].items():
        if is_active(output, deployed):
            assert referenced_logical_ids(deployed.chosen(output["Value"])) <= known, name


def test_an_issuer_without_its_audience_is_refused_before_anything_is_created(
    sam_template: dict[str, Any],
) -> None:
    # The template's rule, evaluated as CloudFormation does: it applies when its RuleCondition holds, and
    # then each Assert must hold.
    rule = sam_template["Rules"]["OtherIssuerNeedsAudience"]
    (assertion,) = rule["Assertions"]
    as_conditions = {"Conditions": {"Applies": rule["RuleCondition"], "Holds": assertion["Assert"]}}

    def refused(parameters: dict[str, str]) -> bool:
        values = condition_refs(as_conditions, {**parameter_defaults(sam_template), **parameters})
        return values == {"Condition:Applies": "true", "Condition:Holds": "false"}

    assert refused({"JwtIssuer": "https://login.example.com"})
    assert not refused({"JwtIssuer": "https://login.example.com", "JwtAudience": "memmy-api"})
    assert not refused({})


def test_the_linter_flags_a_pool_reference_outside_its_condition(sam_template: dict[str, Any]) -> None:
    # Given manage_kb naming the desktop's app client even when no pool is created
    broken = copy.deepcopy(sam_template)
    variables = broken["Resources"]["ManageKbFunction"]["Properties"]["Environment"]["Variables"]
    variables["LOGIN_AUDIENCE"] = {"Ref": "DesktopAppClient"}

    # Then the lint that passes on the real template (tests/unit/template/test_template.py) reports it
    matches = lint(json.dumps(translate(broken)), config=LINT_CONFIG)
    flagged = {(m.rule.id, "/".join(map(str, m.path[:6]))) for m in matches}
    assert ("W1001", "Resources/ManageKbFunction/Properties/Environment/Variables/LOGIN_AUDIENCE") in flagged


# --------------------------------------------------------------------------------- the Cognito pieces


def test_the_desktop_app_client_is_public_with_pkce_on_the_desktop_default_port(
    sam_template: dict[str, Any],
) -> None:
    client = sam_template["Resources"]["DesktopAppClient"]
    properties = client["Properties"]
    assert client["Condition"] == "CreateUserPool"
    assert properties["UserPoolId"] == {"Ref": "UserPool"}
    # A public client: the desktop keeps no secret, PKCE protects the code (Cognito requires no secret
    # for PKCE; a client with a secret would need one in every token request).
    assert properties["GenerateSecret"] is False
    assert properties["AllowedOAuthFlowsUserPoolClient"] is True
    assert properties["AllowedOAuthFlows"] == ["code"]
    assert sorted(properties["AllowedOAuthScopes"]) == ["email", "openid", "phone", "profile"]
    assert properties["SupportedIdentityProviders"] == ["COGNITO"]
    # Cognito matches callback URLs exactly: the desktop's default port, on both loopback spellings.
    assert properties["CallbackURLs"] == [
        f"http://127.0.0.1:{DEFAULT_PORT}/callback",
        f"http://localhost:{DEFAULT_PORT}/callback",
    ]
    # Sign-in only on the hosted pages; the client itself only refreshes.
    assert properties["ExplicitAuthFlows"] == ["ALLOW_REFRESH_TOKEN_AUTH"]
    assert properties["TokenValidityUnits"] == {
        "AccessToken": "minutes",
        "IdToken": "minutes",
        "RefreshToken": "days",
    }
    assert (properties["AccessTokenValidity"], properties["IdTokenValidity"]) == (60, 60)
    assert properties["RefreshTokenValidity"] == 30
    assert properties["EnableTokenRevocation"] is True
    assert properties["PreventUserExistenceErrors"] == "ENABLED"
    # The ID token carries the claims the service reads (memmy_kb.api.identity; sub is always there), and
    # no user can set a verified flag.
    assert {"name", "email", "email_verified", "phone_number", "phone_number_verified"} <= set(
        properties["ReadAttributes"]
    )
    assert not {attribute for attribute in properties["WriteAttributes"] if attribute.endswith("_verified")}


@pytest.mark.parametrize(
    ("parameters", "verified", "sms"),
    [
        (FRESH, ["email"], None),
        (
            {"SmsRoleArn": "arn:aws:iam::111122223333:role/memmy-sms", "SmsExternalId": "memmy-kb-sms"},
            ["email", "phone_number"],
            {"SnsCallerArn": "arn:aws:iam::111122223333:role/memmy-sms", "ExternalId": "memmy-kb-sms"},
        ),
        (
            {"SmsRoleArn": "arn:aws:iam::111122223333:role/memmy-sms"},
            ["email", "phone_number"],
            {"SnsCallerArn": "arn:aws:iam::111122223333:role/memmy-sms"},
        ),
    ],
    ids=["email-only", "sms-with-external-id", "sms"],
)
def test_the_pool_signs_in_by_email_and_verifies_phones_only_with_sms(
    sam_template: dict[str, Any], parameters: dict[str, str], verified: list[str], sms: dict[str, str] | None
) -> None:
    pool = sam_template["Resources"]["UserPool"]
    properties = resolve_intrinsics(pool["Properties"], Deployed(sam_template, parameters))
    assert pool["Condition"] == "CreateUserPool"
    # A user's Memmy id is the pool's sub: the pool outlives the stack and any replacement.
    assert pool["DeletionPolicy"] == pool["UpdateReplacePolicy"] == "Retain"
    assert properties["UsernameAttributes"] == ["email"]
    assert properties["AutoVerifiedAttributes"] == verified
    assert properties["UserAttributeUpdateSettings"] == {
        "AttributesRequireVerificationBeforeUpdate": verified
    }
    assert properties.get("SmsConfiguration") == sms
    assert properties["AdminCreateUserConfig"] == {"AllowAdminCreateUserOnly": True}


def test_self_sign_up_is_a_choice(sam_template: dict[str, Any]) -> None:
    deployed = Deployed(sam_template, {"SelfSignUp": "true"})
    properties = resolve_intrinsics(sam_template["Resources"]["UserPool"]["Properties"], deployed)
    assert properties["AdminCreateUserConfig"] == {"AllowAdminCreateUserOnly": False}


def _domain_prefix(value: Any, deployed: Deployed) -> str:
    """The few intrinsics of the domain prefix (Join, Select, Split, Ref, If) evaluated."""
    if isinstance(value, str):
        return value
    ((function, argument),) = value.items()
    if function == "Ref":
        return deployed[argument]
    if function == "Fn::If":
        return _domain_prefix(deployed.chosen(value), deployed)
    if function == "Fn::Join":
        return str(argument[0]).join(_domain_prefix(item, deployed) for item in argument[1])
    if function == "Fn::Select":
        index, source = argument
        ((split, (delimiter, text)),) = source.items()
        assert split == "Fn::Split"
        return _domain_prefix(text, deployed).split(delimiter)[int(index)]
    raise AssertionError(f"unexpected {function} in the domain prefix")


# Cognito's rule for a domain prefix: lower-case letters, digits and hyphens, at most 63 characters.
COGNITO_PREFIX = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")


def test_the_hosted_pages_get_a_prefix_from_the_stack_unless_one_is_given(
    sam_template: dict[str, Any],
) -> None:
    domain = sam_template["Resources"]["UserPoolDomain"]
    assert domain["Condition"] == "CreateUserPool"
    assert domain["Properties"]["UserPoolId"] == {"Ref": "UserPool"}
    prefix = domain["Properties"]["Domain"]

    # The stack name and the first part of the stack id: stable for the stack, unique enough in a region
    default = _domain_prefix(prefix, Deployed(sam_template, FRESH))
    assert default == "memmy-kb-1a2b3c4d"
    assert COGNITO_PREFIX.fullmatch(default)
    assert _domain_prefix(prefix, Deployed(sam_template, {"LoginDomainPrefix": "acme-memmy"})) == "acme-memmy"

    allowed = sam_template["Parameters"]["LoginDomainPrefix"]["AllowedPattern"]
    assert re.fullmatch(allowed, "")
    assert re.fullmatch(allowed, "acme-memmy-2")
    for wrong in ("Acme", "-acme", "acme-", "acme_memmy", "acme memmy"):
        assert not re.fullmatch(allowed, wrong), wrong
