"""memmy_local.provision.resources: template.yaml provisioned on moto, its state machines included."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from memmy_local.aws.stepfunctions import cap_retry_delays, substitute_definition
from memmy_local.provision.resources import LOCAL_ACCOUNT_ID, provision
from memmy_local.template import (
    TEMPLATE_PATH,
    function_environment,
)

REGION = "us-east-1"
MEMOS_KEY = "mpg-local-key-0001"
JWT_PARAMETERS = {"JwtIssuer": "https://login.memmy.test", "JwtAudience": "memmy-desktop"}


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
    # Given retries in a Parallel's branch, on the Parallel itself and in a Map's processor
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

    # When their delays are capped at 2 s
    capped = cap_retry_delays(definition, 2)

    # Then every one is, nested or not, a missing MaxDelaySeconds set
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
