"""The local stack (in this process): state machine executions run the ASL on moto's server with their
Lambda tasks dispatched in-process, and scheduled functions run on demand (``run_scheduled``, ``memmy-local
reconcile``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from memmy_local import tokens
from memmy_local.cli import main
from memmy_local.stack import LocalStack, StackConfig
from tests.support.polling import wait_until


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(tokens.HOME_ENV, str(home))
        config = StackConfig(
            gateway_port=0,
            memos_port=0,
            moto_port=0,
            idp_port=0,
            schedule_interval=0,
            memos_processing_delay=0.1,
        )
        with LocalStack(config) as running:
            yield running


def wait(sfn: Any, execution_arn: str, timeout: float = 30) -> dict[str, Any]:
    def finished() -> dict[str, Any] | None:
        execution: dict[str, Any] = sfn.describe_execution(executionArn=execution_arn)
        return execution if execution["status"] != "RUNNING" else None

    return wait_until(finished, timeout=timeout, message=f"{execution_arn} to finish running")


def outbox(stack: LocalStack, cleanup_id: str) -> dict[str, Any]:
    key = {"PK": {"S": f"CLEANUP#{cleanup_id}"}, "SK": {"S": "CLEANUP"}}
    boto3.client("dynamodb").put_item(TableName=stack.refs["Table"], Item={**key, "state": {"S": "pending"}})
    return key


def test_functions_that_start_cleanups_get_the_local_state_machine(stack: LocalStack) -> None:
    arn = stack.refs["CleanupStateMachine"]
    for function in ("DeleteFunction", "ReconcileFunction"):
        assert stack.function_environments[function]["CLEANUP_STATE_MACHINE_ARN"] == arn
    # A default boto3 client, as the handlers build theirs, reaches moto (AWS_ENDPOINT_URL)
    described = boto3.client("stepfunctions").describe_state_machine(stateMachineArn=arn)
    assert described["name"] == stack.refs["CleanupStateMachine.Name"]


def test_an_execution_runs_the_asl_on_motos_server_and_the_task_in_this_process(stack: LocalStack) -> None:
    # Given a stand-in for the cleanup function that needs two rounds
    rounds: list[Any] = []
    stack.dispatcher.override(
        "CleanupFunction", lambda event: rounds.append(event) or {"done": len(rounds) > 1}
    )
    key = outbox(stack, "s1")
    sfn = boto3.client("stepfunctions")
    try:
        # When a cleanup is started as the delete function starts it
        execution = wait(
            sfn,
            sfn.start_execution(
                stateMachineArn=stack.refs["CleanupStateMachine"],
                name="s1",
                input=json.dumps({"cleanup_id": "s1", "key": key}),
            )["executionArn"],
        )
    finally:
        stack.dispatcher.override("CleanupFunction", None)

    # Then both rounds ran here and the DynamoDB task deleted the outbox item on moto's server
    assert execution["status"] == "SUCCEEDED"
    assert rounds == [{"cleanup_id": "s1"}] * 2
    assert "Item" not in boto3.client("dynamodb").get_item(TableName=stack.refs["Table"], Key=key)


def test_without_an_override_the_task_reaches_the_template_function(stack: LocalStack) -> None:
    key = outbox(stack, "s2")
    sfn = boto3.client("stepfunctions")

    execution = wait(
        sfn,
        sfn.start_execution(
            stateMachineArn=stack.refs["CleanupStateMachine"],
            name="s2",
            input=json.dumps({"cleanup_id": "s2", "key": key}),
        )["executionArn"],
    )

    # Whatever the real cleanup does with an unknown id, it was found and imported
    history = sfn.get_execution_history(executionArn=execution["executionArn"])["events"]
    outcomes = [e for e in history if e["type"] in {"TaskSucceeded", "TaskFailed"}]
    assert outcomes
    first = outcomes[0]
    if first["type"] == "TaskFailed":
        error = first["taskFailedEventDetails"]["error"]
        assert error not in {"Lambda.ResourceNotFoundException", "Runtime.ImportModuleError"}
    else:
        assert first["taskSucceededEventDetails"]["resource"] == "invoke"


def test_reconcile_runs_once_on_demand_from_python_and_from_the_cli(
    stack: LocalStack, capsys: pytest.CaptureFixture[str]
) -> None:
    assert stack.scheduled_functions == ["ReconcileFunction"]

    stack.run_scheduled("ReconcileFunction")  # raises if the handler does

    # The stack recorded its control endpoint in the dev home ($MEMMY_KB_HOME here)
    assert (tokens.dev_home() / "local-stack.json").exists()
    code = main(["reconcile", "--json"])
    # The handler runs in this process: its EMF metric lines (one per MemOS backend) share this stdout
    out = capsys.readouterr().out.splitlines()
    printed = json.loads("\n".join(line for line in out if not line.startswith('{"_aws"')))
    assert (code, printed["function"]) == (0, "ReconcileFunction"), printed
    # Without --json, what it repaired in words (nothing, on a fresh stack)
    assert main(["reconcile"]) == 0
    words = [line for line in capsys.readouterr().out.splitlines() if not line.startswith('{"_aws"')]
    assert words == ["ReconcileFunction: nothing to repair"]


def test_the_identity_provider_is_the_stacks_issuer_and_token_uses_it(
    stack: LocalStack, capsys: pytest.CaptureFixture[str]
) -> None:
    import httpx
    import jwt

    from memmy_local.control import read_state

    discovery = httpx.get(f"{stack.idp_url}/.well-known/openid-configuration", timeout=10).json()
    login = httpx.get(f"{stack.api_url}/login-configuration", timeout=10).json()

    assert stack.issuer == stack.idp_url == discovery["issuer"] == login["issuer"]
    assert read_state(tokens.dev_home())["issuer"] == stack.issuer
    # `memmy-local token` signs with the running stack's issuer, and the gateway accepts it
    assert main(["token", "issuer-check"]) == 0
    token = capsys.readouterr().out.strip()
    assert jwt.decode(token, options={"verify_signature": False})["iss"] == stack.issuer
    me = httpx.get(f"{stack.api_url}/me", headers={"Authorization": f"Bearer {token}"}, timeout=10)
    assert me.status_code != 401, me.text
