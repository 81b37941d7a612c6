"""The real cleanup state machine (infra/statemachines/cleanup.asl.json) run by moto's interpreter.

The table, the cleanup function's name and the state machine come from template.yaml and are
provisioned as the local stack does (Retry delays capped to 1 s, nothing else changed); the Lambda task
is dispatched in-process to small handlers registered per test (``LambdaDispatcher`` overrides), and
the DynamoDB tasks run against moto's table.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from memmy_local.aws.moto_config import MOTO_CONFIG
from memmy_local.aws.stepfunctions import (
    LOCAL_MAX_RETRY_DELAY_SECONDS,
    LambdaDispatcher,
    dispatching,
    states_all_as_on_aws,
)
from memmy_local.provision.resources import provision
from memmy_local.template import TEMPLATE_PATH, load_template
from tests.support.polling import wait_until

REGION = "us-east-1"
ASL = json.loads((TEMPLATE_PATH.parent / "infra" / "statemachines" / "cleanup.asl.json").read_text())
(CLEANUP_RETRY,) = ASL["States"]["CleanUp"]["Retry"]
MAX_ATTEMPTS = CLEANUP_RETRY["MaxAttempts"]
# The resources the state machine needs, exactly as template.yaml declares them.
USED = ("Table", "CleanupFunction", "CleanupStateMachine")


class CleanupRetryable(Exception):
    """Same class name as the cleanup function's transient error: Lambda reports errorType by name."""


class Machine:
    """The provisioned state machine, its table, and the handler the dispatcher calls for the task."""

    def __init__(self, refs: dict[str, str]) -> None:
        self.refs = refs
        self.arn = refs["CleanupStateMachine"]
        self.table = refs["Table"]
        self.sfn = boto3.client("stepfunctions", region_name=REGION)
        self.dynamodb = boto3.client("dynamodb", region_name=REGION)
        self.calls: list[Any] = []
        self.dispatcher = LambdaDispatcher()
        self.handler: Callable[[Any], Any] = lambda event: {"done": True}

    def task(self, event: Any) -> Any:
        self.calls.append(event)
        return self.handler(event)

    def outbox_item(self, cleanup_id: str) -> dict[str, Any]:
        key = outbox_key(cleanup_id)
        self.dynamodb.put_item(
            TableName=self.table,
            Item={**key, "state": {"S": "pending"}, "GSI2PK": {"S": "CLEANUP#pending"}, "GSI2SK": {"S": "0"}},
        )
        return key

    def item(self, key: dict[str, Any]) -> dict[str, Any] | None:
        item: dict[str, Any] | None = self.dynamodb.get_item(
            TableName=self.table, Key=key, ConsistentRead=True
        ).get("Item")
        return item

    def start(self, cleanup_id: str, name: str | None = None) -> str:
        arn: str = self.sfn.start_execution(
            stateMachineArn=self.arn, name=name or cleanup_id, input=execution_input(cleanup_id)
        )["executionArn"]
        return arn

    def wait(self, execution_arn: str, timeout: float = 30.0) -> dict[str, Any]:
        def finished() -> dict[str, Any] | None:
            execution: dict[str, Any] = self.sfn.describe_execution(executionArn=execution_arn)
            return execution if execution["status"] != "RUNNING" else None

        return wait_until(finished, timeout=timeout, message=f"{execution_arn} to finish running")

    def history(self, execution_arn: str) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = self.sfn.get_execution_history(
            executionArn=execution_arn, maxResults=1000
        )["events"]
        return events


def outbox_key(cleanup_id: str) -> dict[str, Any]:
    return {"PK": {"S": f"CLEANUP#{cleanup_id}"}, "SK": {"S": "CLEANUP"}}


def execution_input(cleanup_id: str) -> str:
    return json.dumps({"cleanup_id": cleanup_id, "key": outbox_key(cleanup_id)})


def task_failures(history: list[dict[str, Any]]) -> list[str]:
    return [e["taskFailedEventDetails"]["error"] for e in history if e["type"] == "TaskFailed"]


@pytest.fixture(scope="module")
def _provisioned() -> Iterator[Machine]:
    template = load_template()
    subset = {"Resources": {name: template["Resources"][name] for name in USED}}
    with pytest.MonkeyPatch.context() as mp:
        for name, value in {
            "AWS_DEFAULT_REGION": REGION,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
        }.items():
            mp.setenv(name, value)
        mp.delenv("AWS_ENDPOINT_URL", raising=False)
        mp.delenv("AWS_PROFILE", raising=False)
        with mock_aws(config=MOTO_CONFIG):
            refs = provision(subset, endpoint_url=None, memos_api_key="unused")
            machine = Machine(refs.refs)
            machine.dispatcher = LambdaDispatcher.for_template(
                subset, machine.refs, overrides={"CleanupFunction": machine.task}
            )
            with dispatching(machine.dispatcher), states_all_as_on_aws():
                yield machine


@pytest.fixture
def machine(_provisioned: Machine) -> Machine:
    _provisioned.calls.clear()
    _provisioned.handler = lambda event: {"done": True}
    return _provisioned


def rounds(*results: Any) -> Callable[[Any], Any]:
    """A task handler that answers each call with the next of ``results`` (raising exceptions)."""
    remaining = list(results)

    def handler(event: Any) -> Any:
        result = remaining.pop(0) if len(remaining) > 1 else remaining[0]
        if isinstance(result, BaseException):
            raise result
        return result

    return handler


# ----------------------------------------------------------------------------------------- rounds


def test_rounds_repeat_until_done_then_the_outbox_item_is_deleted(machine: Machine) -> None:
    # Given an outbox item and a cleanup that needs three rounds
    key = machine.outbox_item("c1")
    machine.handler = rounds({"done": False}, {"done": False}, {"done": True, "cleaned": 3})

    # When its execution runs
    execution = machine.wait(machine.start("c1"))

    # Then the task ran three times with the cleanup id only, and the outbox item is gone
    assert execution["status"] == "SUCCEEDED"
    assert machine.calls == [{"cleanup_id": "c1"}] * 3
    assert machine.item(key) is None
    # ResultSelector kept only `done` under $.round; the input passed through
    assert json.loads(execution["output"]) == {
        "cleanup_id": "c1",
        "key": key,
        "round": {"done": True},
    }
    # The task was the optimized lambda:invoke integration, addressed by the function's ARN
    scheduled = [e for e in machine.history(execution["executionArn"]) if e["type"] == "TaskScheduled"]
    parameters = json.loads(scheduled[0]["taskScheduledEventDetails"]["parameters"])
    assert parameters["FunctionName"] == machine.refs["CleanupFunction.Arn"]


# ---------------------------------------------------------------------------------------- retries


def test_a_retryable_error_is_retried_and_the_cleanup_then_finishes(machine: Machine) -> None:
    # Given a cleanup that hits a transient error three times
    key = machine.outbox_item("c2")
    busy = CleanupRetryable("MemOS is busy")
    machine.handler = rounds(busy, busy, busy, {"done": True})

    # When its execution runs
    started = time.monotonic()
    execution = machine.wait(machine.start("c2"))

    # Then each error was retried (after at most a second locally) and the cleanup finished
    assert execution["status"] == "SUCCEEDED"
    assert len(machine.calls) == 4
    assert task_failures(machine.history(execution["executionArn"])) == ["CleanupRetryable"] * 3
    # Locally each wait is at most LOCAL_MAX_RETRY_DELAY_SECONDS (the ASL says 5 s, doubling, up to 300 s)
    assert time.monotonic() - started < 3 * LOCAL_MAX_RETRY_DELAY_SECONDS + 2
    assert machine.item(key) is None


def test_retry_attempts_are_counted_per_round_not_per_execution(machine: Machine) -> None:
    # Given two rounds that each need MaxAttempts - 2 retries: more than MaxAttempts in the execution
    key = machine.outbox_item("c9")
    busy = CleanupRetryable("MemOS is busy")
    per_round = MAX_ATTEMPTS - 2
    machine.handler = rounds(*[busy] * per_round, {"done": False}, *[busy] * per_round, {"done": True})

    execution = machine.wait(machine.start("c9"))

    # Then each entry into CleanUp started its own count, as on AWS, and the cleanup finished
    assert execution["status"] == "SUCCEEDED"
    assert task_failures(machine.history(execution["executionArn"])) == ["CleanupRetryable"] * 2 * per_round
    assert 2 * per_round > MAX_ATTEMPTS
    assert machine.item(key) is None


def test_retryable_errors_past_max_attempts_mark_the_outbox_item_failed(machine: Machine) -> None:
    # Given a cleanup that never gets past a transient error
    key = machine.outbox_item("c3")
    machine.handler = rounds(CleanupRetryable("MemOS is down"))

    # When its execution runs
    execution = machine.wait(machine.start("c3"))

    # Then it was tried once plus MaxAttempts retries, and then caught
    assert len(machine.calls) == 1 + MAX_ATTEMPTS
    assert execution["status"] == "FAILED"
    assert execution["error"] == "CleanupFailed"
    # And the outbox item is queued for the reconciler with the error that stopped it
    item = machine.item(key)
    assert item is not None
    assert item["state"] == {"S": "failed"}
    assert item["GSI2PK"] == {"S": "CLEANUP#failed"}
    assert item["last_error"] == {"S": "CleanupRetryable"}
    cause = json.loads(item["last_cause"]["S"])
    assert cause["errorType"] == "CleanupRetryable"
    assert cause["errorMessage"] == "MemOS is down"
    # The other attributes are untouched
    assert item["GSI2SK"] == {"S": "0"}


def test_a_non_retryable_error_marks_the_outbox_item_failed_at_once(machine: Machine) -> None:
    key = machine.outbox_item("c4")
    machine.handler = rounds(KeyError("kb_id"))

    execution = machine.wait(machine.start("c4"))

    assert len(machine.calls) == 1
    assert execution["status"] == "FAILED"
    item = machine.item(key)
    assert item is not None
    assert (item["state"], item["GSI2PK"], item["last_error"]) == (
        {"S": "failed"},
        {"S": "CLEANUP#failed"},
        {"S": "KeyError"},
    )
    assert json.loads(item["last_cause"]["S"])["errorMessage"] == "'kb_id'"


def test_a_function_that_does_not_exist_fails_the_task_as_lambda_would(machine: Machine) -> None:
    # Given no handler for the cleanup function (the dispatcher here has no loader for the template's)
    key = machine.outbox_item("c5")
    machine.dispatcher.override("CleanupFunction", None)
    try:
        execution = machine.wait(machine.start("c5"))
    finally:
        machine.dispatcher.override("CleanupFunction", machine.task)

    # Then the error is Lambda's own (not retried by this ASL) and the Catch marks the item failed
    assert execution["status"] == "FAILED"
    item = machine.item(key)
    assert item is not None
    assert item["last_error"] == {"S": "Lambda.ResourceNotFoundException"}
    assert machine.calls == []


def test_a_round_without_done_is_a_runtime_error_that_no_catch_handles(machine: Machine) -> None:
    # Given a task result without the `done` the ResultSelector reads
    key = machine.outbox_item("c6")
    machine.handler = rounds({"cleaned": 1})

    execution = machine.wait(machine.start("c6"))

    # Then the execution fails with States.Runtime, which Catch [States.ALL] does not catch on AWS
    # either: the outbox item is left as it was (pending), for the reconciler
    assert execution["status"] == "FAILED"
    assert execution["error"] == "States.Runtime"
    assert machine.item(key)["state"] == {"S": "pending"}  # type: ignore[index]


def test_marking_an_outbox_item_that_is_gone_fails_the_execution(machine: Machine) -> None:
    # Given an execution whose outbox item was removed meanwhile
    machine.handler = rounds(ValueError("broken"))

    execution = machine.wait(machine.start("c7"))

    # Then MarkFailed's condition (attribute_exists(PK)) fails it, and nothing is created
    assert execution["status"] == "FAILED"
    assert execution["error"] == "DynamoDB.ConditionalCheckFailedException"
    assert machine.item(outbox_key("c7")) is None


# ---------------------------------------------------------------------------------- execution names


def test_starting_the_same_name_and_input_while_running_is_idempotent(machine: Machine) -> None:
    # Given a running execution, held in its first round
    key = machine.outbox_item("c8")
    release = threading.Event()
    entered = threading.Event()

    def held(event: Any) -> Any:
        entered.set()
        assert release.wait(10)
        return {"done": True}

    machine.handler = held
    first = machine.start("c8")
    assert entered.wait(10)

    # When the same name and input are started again: the same execution, nothing new
    assert machine.start("c8") == first
    executions = machine.sfn.list_executions(stateMachineArn=machine.arn)["executions"]
    assert [e["executionArn"] for e in executions].count(first) == 1
    # But the same name with another input is refused
    with pytest.raises(ClientError) as refused:
        machine.sfn.start_execution(
            stateMachineArn=machine.arn, name="c8", input=json.dumps({"cleanup_id": "other", "key": key})
        )
    assert refused.value.response["Error"]["Code"] == "ExecutionAlreadyExists"

    release.set()
    assert machine.wait(first)["status"] == "SUCCEEDED"
    assert len(machine.calls) == 1

    # And once it has finished, the same name (even with the same input) is refused
    with pytest.raises(ClientError) as closed:
        machine.start("c8")
    assert closed.value.response["Error"]["Code"] == "ExecutionAlreadyExists"
