"""memmy_local.template: reading template.yaml (its tags, routes, parameters and environments); provisioning
it on moto is tests/unit/local/provision/test_provision_resources.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memmy_local.template import (
    TEMPLATE_PATH,
    Route,
    function_environment,
    http_routes,
    load_template,
    parameter_defaults,
    template_path,
)
from memmy_local.template_intrinsics import UnresolvableValueError, referenced_logical_ids, resolve_intrinsics
from tests.support.mcp_auth_events import AUTHORIZATION_SERVER_ROUTES

REGION = "us-east-1"

TAGGED_YAML = """\
AWSTemplateFormatVersion: 2010-09-09
Resources:
  Thing:
    Type: Custom::Thing
    Properties:
      Ref: !Ref Table
      AttDotted: !GetAtt Table.Arn
      AttNested: !GetAtt Queue.Attr.With.Dots
      AttList: !GetAtt [Table, StreamArn]
      Sub: !Sub "${Table}-${AWS::Region}"
      SubList: !Sub ["${Name}-x", {Name: !Ref Table}]
      Join: !Join [",", [a, !Ref B]]
      If: !If [IsProd, 1, !Ref AWS::NoValue]
      Equals: !Equals [!Ref Env, prod]
      Select: !Select [0, !GetAZs ""]
      Split: !Split [",", "a,b"]
      FindInMap: !FindInMap [Map, Top, Second]
      ImportValue: !ImportValue shared-export
      Base64: !Base64 hello
      Condition: !Condition IsProd
      Not: !Not [!Condition IsProd]
      And: !And [!Condition A, !Condition B]
      Or: !Or [!Condition A, !Condition B]
      GetAZs: !GetAZs us-east-1
      Cidr: !Cidr ["10.0.0.0/16", 4, 8]
"""


def write(tmp_path: Path, text: str, name: str = "template.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------------- loader


def test_every_short_form_tag_loads_as_its_long_form(tmp_path: Path) -> None:
    properties = load_template(write(tmp_path, TAGGED_YAML))["Resources"]["Thing"]["Properties"]

    assert properties == {
        "Ref": {"Ref": "Table"},
        "AttDotted": {"Fn::GetAtt": ["Table", "Arn"]},
        "AttNested": {"Fn::GetAtt": ["Queue", "Attr.With.Dots"]},
        "AttList": {"Fn::GetAtt": ["Table", "StreamArn"]},
        "Sub": {"Fn::Sub": "${Table}-${AWS::Region}"},
        "SubList": {"Fn::Sub": ["${Name}-x", {"Name": {"Ref": "Table"}}]},
        "Join": {"Fn::Join": [",", ["a", {"Ref": "B"}]]},
        "If": {"Fn::If": ["IsProd", 1, {"Ref": "AWS::NoValue"}]},
        "Equals": {"Fn::Equals": [{"Ref": "Env"}, "prod"]},
        "Select": {"Fn::Select": [0, {"Fn::GetAZs": ""}]},
        "Split": {"Fn::Split": [",", "a,b"]},
        "FindInMap": {"Fn::FindInMap": ["Map", "Top", "Second"]},
        "ImportValue": {"Fn::ImportValue": "shared-export"},
        "Base64": {"Fn::Base64": "hello"},
        "Condition": {"Condition": "IsProd"},
        "Not": {"Fn::Not": [{"Condition": "IsProd"}]},
        "And": {"Fn::And": [{"Condition": "A"}, {"Condition": "B"}]},
        "Or": {"Fn::Or": [{"Condition": "A"}, {"Condition": "B"}]},
        "GetAZs": {"Fn::GetAZs": "us-east-1"},
        "Cidr": {"Fn::Cidr": ["10.0.0.0/16", 4, 8]},
    }


def test_an_unquoted_format_version_stays_a_string(tmp_path: Path) -> None:
    assert load_template(write(tmp_path, TAGGED_YAML))["AWSTemplateFormatVersion"] == "2010-09-09"


def test_a_document_without_resources_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a CloudFormation template"):
        load_template(write(tmp_path, "just: a mapping\n"))


def test_the_template_path_can_be_overridden(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given no override, the repository's template
    monkeypatch.delenv("MEMMY_KB_TEMPLATE", raising=False)
    assert template_path() == TEMPLATE_PATH

    # When the environment names another template
    other = write(tmp_path, TAGGED_YAML, "other.yaml")
    monkeypatch.setenv("MEMMY_KB_TEMPLATE", str(other))

    # Then load_template() without a path reads that one
    assert template_path() == other
    assert "Thing" in load_template()["Resources"]


# ---------------------------------------------------------------------------------------------- routes


# Every route of the API contract (docs/architecture.md, "Routes"); the template may implement them over
# several issues, never others.
API_CONTRACT = {
    ("PUT", "/me"),
    ("GET", "/me"),
    ("PATCH", "/me"),
    ("GET", "/me/blocked"),
    ("POST", "/me/blocked"),
    ("DELETE", "/me/blocked/{user_id}"),
    ("GET", "/knowledge-bases/{kb_id}/activity"),
    ("GET", "/knowledge-bases"),
    ("POST", "/knowledge-bases"),
    ("GET", "/knowledge-bases/{kb_id}"),
    ("PATCH", "/knowledge-bases/{kb_id}"),
    ("DELETE", "/knowledge-bases/{kb_id}"),
    ("PUT", "/knowledge-bases/{kb_id}/recall"),
    ("GET", "/knowledge-bases/{kb_id}/members"),
    ("POST", "/knowledge-bases/{kb_id}/members"),
    ("DELETE", "/knowledge-bases/{kb_id}/members/{user_id}"),
    ("POST", "/knowledge-bases/{kb_id}/uploads"),
    ("DELETE", "/knowledge-bases/{kb_id}/uploads/{upload_id}"),
    ("GET", "/knowledge-bases/{kb_id}/files"),
    ("GET", "/knowledge-bases/{kb_id}/files/{file_id}"),
    ("PATCH", "/knowledge-bases/{kb_id}/files/{file_id}"),
    ("DELETE", "/knowledge-bases/{kb_id}/files/{file_id}"),
    ("POST", "/knowledge-bases/{kb_id}/files/{file_id}/replacements"),
    ("POST", "/knowledge-bases/{kb_id}/folders"),
    ("PATCH", "/knowledge-bases/{kb_id}/folders/{folder_id}"),
    ("DELETE", "/knowledge-bases/{kb_id}/folders/{folder_id}"),
    ("POST", "/recall"),
    ("GET", "/login-configuration"),
    # Teams (docs/teams.md).
    ("GET", "/knowledge-bases/{kb_id}/teams"),
    ("POST", "/knowledge-bases/{kb_id}/teams"),
    ("DELETE", "/knowledge-bases/{kb_id}/teams/{team_id}"),
    ("GET", "/teams"),
    ("POST", "/teams"),
    ("GET", "/teams/{team_id}"),
    ("PATCH", "/teams/{team_id}"),
    ("DELETE", "/teams/{team_id}"),
    ("POST", "/teams/{team_id}/members"),
    ("PATCH", "/teams/{team_id}/members/{user_id}"),
    ("DELETE", "/teams/{team_id}/members/{user_id}"),
    ("POST", "/teams/{team_id}/accept"),
    ("POST", "/teams/{team_id}/decline"),
    ("GET", "/teams/{team_id}/activity"),
    # The remote MCP endpoint (its own token check) and the caller's connections to it.
    ("POST", "/mcp"),
    ("GET", "/mcp"),
    ("DELETE", "/mcp"),
    ("GET", "/.well-known/oauth-protected-resource/mcp"),
    ("GET", "/.well-known/oauth-protected-resource"),
    ("GET", "/me/connections"),
    ("DELETE", "/me/connections/{connection_id}"),
    # Its authorization server for MCP clients (the mcp_auth function, every route public).
} | AUTHORIZATION_SERVER_ROUTES


def test_routes_are_the_contracts_and_each_has_one_function(template: dict[str, Any]) -> None:
    routes = http_routes(template)
    keys = [(r.method, r.path) for r in routes]
    assert len(keys) == len(set(keys))
    assert set(keys) <= API_CONTRACT
    by_key = {(r.method, r.path): r for r in routes}
    assert by_key[("POST", "/knowledge-bases")] == Route(
        "POST", "/knowledge-bases", "CreateKbFunction", "functions/create_kb/", "app.lambda_handler"
    )
    assert by_key[("PUT", "/me")].function == "ManageKbFunction"
    assert by_key[("POST", "/knowledge-bases/{kb_id}/members")].function == "ShareFunction"
    assert by_key[("POST", "/teams/{team_id}/members")].function == "TeamsFunction"
    assert by_key[("POST", "/mcp")].function == by_key[("GET", "/.well-known/oauth-protected-resource")].function
    assert by_key[("POST", "/mcp")].function == "McpFunction"
    assert by_key[("DELETE", "/me/connections/{connection_id}")].function == "ManageKbFunction"
    assert by_key[("POST", "/knowledge-bases/{kb_id}/files/{file_id}/replacements")].function == "UploadFunction"


def test_routes_take_handler_and_code_from_globals_and_skip_other_events() -> None:
    # Given a function whose handler comes from Globals, with a lower-case method and a queue event
    template = {
        "Globals": {"Function": {"Handler": "app.handler"}},
        "Resources": {
            "Fn": {
                "Type": "AWS::Serverless::Function",
                "Properties": {
                    "CodeUri": "functions/fn/",
                    "Events": {
                        "Api": {"Type": "HttpApi", "Properties": {"Method": "patch", "Path": "/x/{id}"}},
                        "Queue": {"Type": "SQS", "Properties": {"Queue": {"Fn::GetAtt": ["Q", "Arn"]}}},
                    },
                },
            },
            "Table": {"Type": "AWS::DynamoDB::Table", "Properties": {}},
        },
    }

    # Then only the HTTP event is a route, its method upper-cased
    assert http_routes(template) == [Route("PATCH", "/x/{id}", "Fn", "functions/fn/", "app.handler")]


def test_a_catch_all_http_event_is_refused() -> None:
    template = {
        "Resources": {
            "Fn": {
                "Type": "AWS::Serverless::Function",
                "Properties": {"CodeUri": "f/", "Handler": "app.h", "Events": {"All": {"Type": "HttpApi"}}},
            }
        }
    }
    with pytest.raises(ValueError, match="Method and a Path"):
        http_routes(template)


def test_parameter_defaults_are_strings(template: dict[str, Any]) -> None:
    defaults = parameter_defaults(template)
    assert defaults == {
        "MemosBaseUrl": "https://memos.memtensor.cn/api/openmem/v1",
        "LogRetentionDays": "30",
        "JwtIssuer": "",
        "JwtAudience": "",
        "DesktopClientId": "memmy-desktop",
        "LoginScopes": "openid profile email phone offline_access",
        "LoginBearerToken": "access_token",
        "LoginDomainPrefix": "",
        "EnableE2eLogin": "false",
        "SelfSignUp": "false",
        "SmsRoleArn": "",
        "SmsExternalId": "",
        "RecallSnapStart": "PublishedVersions",
        "RecallBurst": "10",
        "RecallRatePerSecond": "2",
        "RecallLimitWindowSeconds": "10",
        "McpTokenIssuer": "",
        "McpJwksUrl": "",
        "McpLoginClientId": "memmy-mcp-auth",
        "McpAuthorizationServer": "",
        "McpResourceUrl": "",
        "McpAllowedOrigins": "",
    }


# ----------------------------------------------------------------------------------------- environment

REFS = {
    "Table": "memmy-local-Table",
    "Table.Arn": "arn:aws:dynamodb:us-east-1:123456789012:table/memmy-local-Table",
    "MemosApiKeySecret": "arn:aws:secretsmanager:us-east-1:123456789012:secret:memmy-local-x",
    "MemosBaseUrl": "http://127.0.0.1:8801/api/openmem/v1",
    "AWS::AccountId": "123456789012",
    "AWS::StackName": "memmy-local",
    "JwtIssuer": "https://login.memmy.test/",
    "JwtAudience": "memmy-api",
    "DesktopClientId": "memmy-desktop",
    "LoginScopes": "openid profile",
    "LoginBearerToken": "id_token",
}


def test_the_real_functions_get_the_resolved_globals(template: dict[str, Any]) -> None:
    environment = function_environment(template, "CreateKbFunction", REFS)
    assert environment == {
        "POWERTOOLS_SERVICE_NAME": "memmy-kb",
        "POWERTOOLS_METRICS_NAMESPACE": "Memmy",
        "POWERTOOLS_LOG_LEVEL": "INFO",
        "TABLE_NAME": "memmy-local-Table",
        "MEMOS_BASE_URL": "http://127.0.0.1:8801/api/openmem/v1",
        "MEMOS_API_KEY_SECRET": REFS["MemosApiKeySecret"],
        "ACTIVITY_RETENTION_DAYS": "180",
        "MAX_FILES_PER_KB": "1000",
        "MAX_BYTES_PER_KB": "2147483648",
        "MAX_KBS_PER_USER": "100",
    }
    manage_kb = {
        **{k: v for k, v in environment.items() if k != "MAX_KBS_PER_USER"},
        "LOGIN_ISSUER": "https://login.memmy.test/",
        "LOGIN_AUDIENCE": "memmy-api",
        "LOGIN_CLIENT_ID": "memmy-desktop",
        "LOGIN_SCOPES": "openid profile",
        # JwtIssuer is given (another provider): every login setting comes from its parameter, none from
        # the Cognito branch (CreateUserPool is false).
        "LOGIN_BEARER_TOKEN": "id_token",
    }
    assert function_environment(template, "ManageKbFunction", REFS) == manage_kb


def env_template(variables: dict[str, Any]) -> dict[str, Any]:
    return {
        "Globals": {"Function": {"Environment": {"Variables": {"SHARED": "global", "OVERRIDDEN": "global"}}}},
        "Resources": {
            "Fn": {
                "Type": "AWS::Serverless::Function",
                "Properties": {"Environment": {"Variables": {"OVERRIDDEN": "own", **variables}}},
            }
        },
    }


def test_function_environment_resolves_refs_subs_and_attributes() -> None:
    template = env_template(
        {
            "REF": {"Ref": "Table"},
            "ATT": {"Fn::GetAtt": ["Table", "Arn"]},
            "ATT_DOTTED": {"Fn::GetAtt": "Table.Arn"},
            "SUB": {"Fn::Sub": "${AWS::StackName}/${Table}@${AWS::Region}:${AWS::AccountId} ${Table.Arn}"},
            "SUB_VARS": {"Fn::Sub": ["${Name}-${!Literal}", {"Name": {"Ref": "Table"}}]},
            "JOIN": {"Fn::Join": ["|", ["a", {"Ref": "Table"}, 3]]},
            "NUMBER": 30,
            "FLAG": True,
            "ABSENT": {"Ref": "AWS::NoValue"},
        }
    )

    environment = function_environment(template, "Fn", REFS)

    assert environment == {
        "SHARED": "global",
        "OVERRIDDEN": "own",
        "REF": "memmy-local-Table",
        "ATT": REFS["Table.Arn"],
        "ATT_DOTTED": REFS["Table.Arn"],
        "SUB": f"memmy-local/memmy-local-Table@us-east-1:123456789012 {REFS['Table.Arn']}",
        "SUB_VARS": "memmy-local-Table-${Literal}",
        "JOIN": "a|memmy-local-Table|3",
        "NUMBER": "30",
        "FLAG": "true",
    }


def test_the_region_comes_from_refs_when_given() -> None:
    template = env_template({"REGION": {"Fn::Sub": "${AWS::Region}"}})
    assert function_environment(template, "Fn", {"AWS::Region": "eu-west-1"})["REGION"] == "eu-west-1"


@pytest.mark.parametrize(
    ("value", "missing"),
    [
        ({"Ref": "Queue"}, "Queue"),
        ({"Fn::GetAtt": ["Table", "StreamArn"]}, "Table.StreamArn"),
        ({"Fn::Sub": "${Bucket}-uploads"}, "Bucket"),
        ({"Fn::If": ["IsProd", "a", "b"]}, "Fn::If"),
    ],
)
def test_an_unresolvable_variable_raises_a_key_error_naming_it(value: Any, missing: str) -> None:
    template = env_template({"BROKEN": value})
    with pytest.raises(KeyError) as raised:
        function_environment(template, "Fn", REFS)
    assert isinstance(raised.value, UnresolvableValueError)
    assert "Fn environment variable BROKEN" in str(raised.value)
    assert missing in str(raised.value)


def test_an_unknown_function_raises_a_key_error(template: dict[str, Any]) -> None:
    with pytest.raises(KeyError, match="NoSuchFunction"):
        function_environment(template, "NoSuchFunction", REFS)


def test_property_trees_resolve_and_drop_no_value() -> None:
    tree = {
        "Name": {"Fn::Sub": "${Table}-copy"},
        "Optional": {"Ref": "AWS::NoValue"},
        "List": [1, {"Ref": "AWS::NoValue"}, {"Ref": "Table"}],
        "Flag": True,
    }
    assert resolve_intrinsics(tree, REFS) == {
        "Name": "memmy-local-Table-copy",
        "List": [1, "memmy-local-Table"],
        "Flag": True,
    }


def test_referenced_logical_ids_skip_pseudo_parameters_and_sub_variables() -> None:
    value = {
        "A": {"Ref": "Table"},
        "B": [{"Fn::GetAtt": "Queue.Arn"}, {"Fn::Sub": "${Bucket.Arn}/${AWS::Region}/${!Escaped}"}],
        "C": {"Fn::Sub": ["${Local}-${Secret}", {"Local": {"Ref": "Param"}}]},
    }
    assert referenced_logical_ids(value) == {"Table", "Queue", "Bucket", "Secret", "Param"}
