"""memmy_local.template and memmy_local.provision.resources: reading template.yaml and provisioning it on moto."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from memmy_local.aws.stepfunctions import cap_retry_delays, substitute_definition
from memmy_local.provision.resources import LOCAL_ACCOUNT_ID, provision
from memmy_local.template import (
    TEMPLATE_PATH,
    Route,
    UnresolvableValueError,
    function_environment,
    http_routes,
    load_template,
    parameter_defaults,
    referenced_logical_ids,
    resolve_intrinsics,
    template_path,
)

REGION = "us-east-1"
MEMOS_KEY = "mpg-local-key-0001"
JWT_PARAMETERS = {"JwtIssuer": "https://login.memmy.test", "JwtAudience": "memmy-desktop"}

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


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return load_template(TEMPLATE_PATH)


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
}


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


# ------------------------------------------------------------------------------------------- provision


@pytest.fixture
def aws(aws_env: None) -> Iterator[None]:
    with mock_aws():
        yield


def provision_real(template: dict[str, Any], **overrides: Any) -> Any:
    return provision(
        template,
        endpoint_url=None,
        memos_api_key=MEMOS_KEY,
        parameters={**JWT_PARAMETERS, **overrides},
    )


@pytest.mark.usefixtures("aws")
def test_the_table_is_created_exactly_as_the_template_declares(template: dict[str, Any]) -> None:
    # When the real template is provisioned
    resources = provision_real(template)

    # Then the table has the template's keys, attributes, indexes and settings
    declared = template["Resources"]["Table"]["Properties"]
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    table = dynamodb.describe_table(TableName=resources.refs["Table"])["Table"]
    assert resources.refs["Table"] == "memmy-local-Table"
    assert resources.refs["Table.Arn"] == table["TableArn"]
    assert table["KeySchema"] == declared["KeySchema"]
    assert sorted(table["AttributeDefinitions"], key=str) == sorted(declared["AttributeDefinitions"], key=str)
    assert table["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
    assert table["SSEDescription"]["Status"] == "ENABLED"
    created = {
        index["IndexName"]: {"KeySchema": index["KeySchema"], "Projection": index["Projection"]}
        for index in table["GlobalSecondaryIndexes"]
    }
    assert created == {
        index["IndexName"]: {"KeySchema": index["KeySchema"], "Projection": index["Projection"]}
        for index in declared["GlobalSecondaryIndexes"]
    }
    ttl = dynamodb.describe_time_to_live(TableName=resources.refs["Table"])["TimeToLiveDescription"]
    assert ttl == {"TimeToLiveStatus": "ENABLED", "AttributeName": "expires_at"}
    backups = dynamodb.describe_continuous_backups(TableName=resources.refs["Table"])
    pitr = backups["ContinuousBackupsDescription"]["PointInTimeRecoveryDescription"]
    assert pitr["PointInTimeRecoveryStatus"] == "ENABLED"


@pytest.mark.usefixtures("aws")
def test_the_secret_holds_the_memos_key_as_json(template: dict[str, Any]) -> None:
    resources = provision_real(template)

    secret = boto3.client("secretsmanager", region_name=REGION).get_secret_value(
        SecretId=resources.refs["MemosApiKeySecret"]
    )
    assert secret["ARN"] == resources.refs["MemosApiKeySecret"]
    assert json.loads(secret["SecretString"]) == {"api_key": MEMOS_KEY}


@pytest.mark.usefixtures("aws")
def test_refs_hold_parameters_and_pseudo_parameters_for_the_environment(template: dict[str, Any]) -> None:
    # Given a parameter overridden for the local stack
    resources = provision_real(template, MemosBaseUrl="http://127.0.0.1:9000/api/openmem/v1")

    assert resources.refs["AWS::Region"] == REGION
    assert resources.refs["AWS::AccountId"] == LOCAL_ACCOUNT_ID
    assert resources.refs["AWS::StackName"] == "memmy-local"
    assert resources.refs["JwtIssuer"] == JWT_PARAMETERS["JwtIssuer"]
    assert resources.refs["LogRetentionDays"] == "30"
    # Then every function's environment resolves from them
    environment = function_environment(template, "ManageKbFunction", resources.refs)
    assert environment["MEMOS_BASE_URL"] == "http://127.0.0.1:9000/api/openmem/v1"
    assert environment["TABLE_NAME"] == resources.refs["Table"]
    assert environment["MEMOS_API_KEY_SECRET"] == resources.refs["MemosApiKeySecret"]


@pytest.mark.usefixtures("aws")
def test_only_local_resources_are_created(template: dict[str, Any]) -> None:
    provision_real(template)
    assert boto3.client("dynamodb", region_name=REGION).list_tables()["TableNames"] == ["memmy-local-Table"]
    assert len(boto3.client("secretsmanager", region_name=REGION).list_secrets()["SecretList"]) == 1
    assert boto3.client("lambda", region_name=REGION).list_functions()["Functions"] == []
    assert boto3.client("logs", region_name=REGION).describe_log_groups()["logGroups"] == []


@pytest.mark.usefixtures("aws")
def test_resources_are_created_after_the_ones_they_refer_to() -> None:
    # Given a secret whose description names a table declared after it, and a fixed table name
    template = {
        "Resources": {
            "Secret": {
                "Type": "AWS::SecretsManager::Secret",
                "Properties": {"Description": {"Fn::Sub": "key for ${Table} (${Table.Arn})"}},
            },
            "Table": {
                "Type": "AWS::DynamoDB::Table",
                "Properties": {
                    "TableName": {"Fn::Sub": "${AWS::StackName}-data"},
                    "BillingMode": "PAY_PER_REQUEST",
                    "AttributeDefinitions": [{"AttributeName": "PK", "AttributeType": "S"}],
                    "KeySchema": [{"AttributeName": "PK", "KeyType": "HASH"}],
                },
            },
        }
    }

    # When provisioned with another prefix
    resources = provision(template, endpoint_url=None, memos_api_key=MEMOS_KEY, prefix="dev")

    # Then the table exists first, under its own name, and the secret's description resolved
    assert resources.refs["Table"] == "dev-data"
    description = boto3.client("secretsmanager", region_name=REGION).describe_secret(
        SecretId=resources.refs["Secret"]
    )["Description"]
    assert description == f"key for dev-data ({resources.refs['Table.Arn']})"


@pytest.mark.usefixtures("aws")
def test_an_unknown_resource_type_stops_provisioning() -> None:
    template = {"Resources": {"Topic": {"Type": "AWS::SNS::Topic", "Properties": {}}}}
    with pytest.raises(NotImplementedError, match="AWS::SNS::Topic"):
        provision(template, endpoint_url=None, memos_api_key=MEMOS_KEY)


@pytest.mark.usefixtures("aws")
def test_an_undeclared_parameter_is_refused(template: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="JwtIsuer"):
        provision(template, endpoint_url=None, memos_api_key=MEMOS_KEY, parameters={"JwtIsuer": "x"})


# ------------------------------------------------------------------------------ state machines


ASL_PATH = TEMPLATE_PATH.parent / "infra" / "statemachines" / "cleanup.asl.json"


@pytest.mark.usefixtures("aws")
def test_the_state_machine_is_created_from_its_asl_file_with_the_substitutions(
    template: dict[str, Any],
) -> None:
    # When the real template is provisioned with the real retry delays kept
    resources = provision_real_with(template, max_retry_delay_seconds=None)

    # Then the state machine exists under its template name, and refs name it and the functions
    refs = resources.refs
    arn = f"arn:aws:states:{REGION}:{LOCAL_ACCOUNT_ID}:stateMachine:memmy-local-cleanup"
    assert refs["CleanupStateMachine"] == refs["CleanupStateMachine.Arn"] == arn
    assert refs["CleanupStateMachine.Name"] == "memmy-local-cleanup"
    assert refs["CleanupFunction"] == "memmy-local-cleanup"
    assert refs["CleanupFunction.Arn"] == (
        f"arn:aws:lambda:{REGION}:{LOCAL_ACCOUNT_ID}:function:memmy-local-cleanup"
    )
    described = boto3.client("stepfunctions", region_name=REGION).describe_state_machine(stateMachineArn=arn)
    assert described["type"] == "STANDARD"
    # And its definition is the file with ${CleanupFunctionArn} and ${TableName} replaced, nothing else
    expected = json.loads(
        ASL_PATH.read_text()
        .replace("${CleanupFunctionArn}", refs["CleanupFunction.Arn"])
        .replace("${TableName}", refs["Table"])
    )
    assert json.loads(described["definition"]) == expected
    # And the functions that start it get its ARN
    for function in ("DeleteFunction", "ReconcileFunction"):
        assert function_environment(template, function, refs)["CLEANUP_STATE_MACHINE_ARN"] == arn


@pytest.mark.usefixtures("aws")
def test_locally_retries_wait_at_most_a_second_and_nothing_else_changes(template: dict[str, Any]) -> None:
    # When the real template is provisioned as the local stack does (the default)
    resources = provision_real(template)

    definition = json.loads(
        boto3.client("stepfunctions", region_name=REGION).describe_state_machine(
            stateMachineArn=resources.refs["CleanupStateMachine"]
        )["definition"]
    )
    real = json.loads(
        ASL_PATH.read_text()
        .replace("${CleanupFunctionArn}", resources.refs["CleanupFunction.Arn"])
        .replace("${TableName}", resources.refs["Table"])
    )
    # Then only the Retry delays differ: capped to 1 s
    (retrier,) = definition["States"]["CleanUp"]["Retry"]
    (real_retrier,) = real["States"]["CleanUp"]["Retry"]
    assert retrier == {**real_retrier, "IntervalSeconds": 1, "MaxDelaySeconds": 1}
    definition["States"]["CleanUp"]["Retry"] = real["States"]["CleanUp"]["Retry"]
    assert definition == real


def test_retry_caps_reach_nested_states_and_set_a_missing_max_delay() -> None:
    definition = {
        "StartAt": "P",
        "States": {
            "P": {
                "Type": "Parallel",
                "Branches": [
                    {
                        "StartAt": "T",
                        "States": {
                            "T": {"Type": "Task", "Retry": [{"ErrorEquals": ["X"], "IntervalSeconds": 30}]}
                        },
                    }
                ],
                "Retry": [{"ErrorEquals": ["States.ALL"], "MaxDelaySeconds": 600, "BackoffRate": 3}],
                "End": True,
            },
            "M": {
                "Type": "Map",
                "ItemProcessor": {
                    "StartAt": "U",
                    "States": {"U": {"Type": "Task", "Retry": [{"ErrorEquals": ["Y"]}], "End": True}},
                },
                "End": True,
            },
        },
    }

    capped = cap_retry_delays(definition, 2)

    branch_retry = capped["States"]["P"]["Branches"][0]["States"]["T"]["Retry"][0]
    assert branch_retry == {"ErrorEquals": ["X"], "IntervalSeconds": 2, "MaxDelaySeconds": 2}
    assert capped["States"]["P"]["Retry"][0] == {
        "ErrorEquals": ["States.ALL"],
        "IntervalSeconds": 1,
        "MaxDelaySeconds": 2,
        "BackoffRate": 3,
    }
    map_retry = capped["States"]["M"]["ItemProcessor"]["States"]["U"]["Retry"][0]
    assert map_retry == {"ErrorEquals": ["Y"], "IntervalSeconds": 1, "MaxDelaySeconds": 2}
    # The input is left as it was
    assert "MaxDelaySeconds" not in definition["States"]["M"]["ItemProcessor"]["States"]["U"]["Retry"][0]
    with pytest.raises(ValueError, match="at least 1"):
        cap_retry_delays(definition, 0)


def test_a_definition_variable_without_a_substitution_is_refused() -> None:
    assert substitute_definition('{"a": "${A}", "b": "${B}"}', {"A": "x", "B": True}) == (
        '{"a": "x", "b": "true"}'
    )
    with pytest.raises(ValueError, match=r"\$\{Missing\}"):
        substitute_definition('{"a": "${Missing}"}', {})


def _state_machine_template(**properties: Any) -> dict[str, Any]:
    return {
        "Resources": {
            "Machine": {
                "Type": "AWS::Serverless::StateMachine",
                "Properties": {
                    "Definition": {"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}},
                    **properties,
                },
            }
        }
    }


@pytest.mark.usefixtures("aws")
def test_an_inline_definition_is_created_and_sam_only_properties_are_skipped() -> None:
    template = _state_machine_template(
        Policies=[{"Statement": [{"Resource": {"Fn::GetAtt": ["Nowhere", "Arn"]}}]}],
        Logging={"Destinations": [{"Ref": "NoLogGroup"}]},
    )

    resources = provision(template, endpoint_url=None, memos_api_key=MEMOS_KEY, prefix="dev")

    assert resources.refs["Machine.Name"] == "dev-Machine"


@pytest.mark.usefixtures("aws")
def test_state_machine_events_stop_provisioning() -> None:
    # Nothing would start the executions locally, so this is not silently skipped
    template = _state_machine_template(Events={"Hourly": {"Type": "ScheduleV2"}})
    with pytest.raises(NotImplementedError, match="Events"):
        provision(template, endpoint_url=None, memos_api_key=MEMOS_KEY)


def provision_real_with(template: dict[str, Any], **options: Any) -> Any:
    return provision(
        template,
        endpoint_url=None,
        memos_api_key=MEMOS_KEY,
        parameters=JWT_PARAMETERS,
        **options,
    )
