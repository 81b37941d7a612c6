"""memmy_local.aws.stepfunctions: the Lambda dispatcher answers as Lambda's Invoke API does (no AWS needed)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from botocore.exceptions import ClientError

from memmy_local.aws.stepfunctions import LambdaDispatcher, dispatching, function_name_of
from memmy_local.lambdas.functions import FunctionNotLoadedError

ARN = "arn:aws:lambda:us-east-1:123456789012:function:memmy-local-cleanup"
TEMPLATE = {
    "Resources": {
        "CleanupFunction": {"Type": "AWS::Serverless::Function", "Properties": {}},
        "Table": {"Type": "AWS::DynamoDB::Table", "Properties": {}},
    }
}
REFS = {"CleanupFunction": "memmy-local-cleanup", "CleanupFunction.Arn": ARN, "Table": "t"}


class CleanupRetryable(Exception):
    """Named as the cleanup function's transient error: Lambda reports errorType by class name."""


def invoke(dispatcher: LambdaDispatcher, payload: Any, function: str = ARN) -> dict[str, Any]:
    # As moto's interpreter hands the parameters over: Payload already JSON bytes.
    return dispatcher.invoke({"FunctionName": function, "Payload": json.dumps(payload).encode()})


@pytest.mark.parametrize(
    ("function", "expected"),
    [
        ("memmy-local-cleanup", ("memmy-local-cleanup", None)),
        ("memmy-local-cleanup:live", ("memmy-local-cleanup", "live")),
        (ARN, ("memmy-local-cleanup", None)),
        (f"{ARN}:$LATEST", ("memmy-local-cleanup", "$LATEST")),
        ("123456789012:function:memmy-local-cleanup", ("memmy-local-cleanup", None)),
        ("123456789012:function:memmy-local-cleanup:3", ("memmy-local-cleanup", "3")),
    ],
)
def test_every_spelling_of_a_function_name_is_understood(function: str, expected: tuple[str, Any]) -> None:
    assert function_name_of(function) == expected


def test_a_result_comes_back_as_the_invoke_response_with_the_payload_decoded() -> None:
    seen: list[Any] = []
    dispatcher = LambdaDispatcher.for_template(
        TEMPLATE, REFS, overrides={"CleanupFunction": lambda event: seen.append(event) or {"done": True}}
    )

    response = invoke(dispatcher, {"cleanup_id": "c1"})

    assert response == {"StatusCode": 200, "ExecutedVersion": "$LATEST", "Payload": {"done": True}}
    assert seen == [{"cleanup_id": "c1"}]
    # By plain name too, as a FunctionName may be written
    assert invoke(dispatcher, {}, "memmy-local-cleanup")["Payload"] == {"done": True}


def test_a_raised_exception_is_an_unhandled_function_error_named_by_its_class() -> None:
    def handler(event: Any) -> Any:
        raise CleanupRetryable("MemOS answered 503")

    dispatcher = LambdaDispatcher.for_template(TEMPLATE, REFS, overrides={"memmy-local-cleanup": handler})

    response = invoke(dispatcher, {"cleanup_id": "c1"})

    assert response["StatusCode"] == 200
    assert response["FunctionError"] == "Unhandled"
    payload = response["Payload"]
    assert payload["errorType"] == "CleanupRetryable"
    assert payload["errorMessage"] == "MemOS answered 503"
    assert payload["requestId"]
    # The trace starts in the handler, as the Python runtime's does (no frames of the local stack)
    assert payload["stackTrace"]
    assert "in handler" in payload["stackTrace"][0]
    assert not any("memmy_local" in line for line in payload["stackTrace"])


def test_a_result_that_is_not_json_is_the_runtimes_marshal_error() -> None:
    dispatcher = LambdaDispatcher(overrides={"f": lambda event: {"when": object()}})

    response = invoke(dispatcher, {}, "f")

    assert response["FunctionError"] == "Unhandled"
    assert response["Payload"]["errorType"] == "Runtime.MarshalError"


def test_an_unknown_function_is_lambdas_resource_not_found() -> None:
    with pytest.raises(ClientError) as raised:
        invoke(LambdaDispatcher.for_template(TEMPLATE, REFS), {}, "memmy-local-nothing")
    assert raised.value.response["Error"]["Code"] == "ResourceNotFoundException"
    assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404


class FakeFunction:
    def __init__(self, load_error: bool = False) -> None:
        self.load_error = load_error
        self.calls: list[tuple[Any, str | None]] = []

    def invoke(self, event: Any, request_id: str | None = None) -> Any:
        if self.load_error:
            raise FunctionNotLoadedError("CleanupFunction was not loaded: ImportError: no module")
        self.calls.append((event, request_id))
        return {"done": False}


def test_template_functions_are_loaded_once_on_first_use_and_get_the_request_id() -> None:
    loaded: list[str] = []
    function = FakeFunction()

    def loader(logical_id: str) -> FakeFunction:
        loaded.append(logical_id)
        return function

    dispatcher = LambdaDispatcher.for_template(TEMPLATE, REFS, loader)
    assert loaded == []

    first = invoke(dispatcher, {"cleanup_id": "a"})
    invoke(dispatcher, {"cleanup_id": "b"})

    assert first["Payload"] == {"done": False}
    assert loaded == ["CleanupFunction"]
    assert [event for event, _ in function.calls] == [{"cleanup_id": "a"}, {"cleanup_id": "b"}]
    assert all(request_id for _, request_id in function.calls)


def test_a_function_that_failed_to_load_fails_as_an_init_error() -> None:
    dispatcher = LambdaDispatcher.for_template(TEMPLATE, REFS, lambda _: FakeFunction(load_error=True))

    response = invoke(dispatcher, {})

    assert response["FunctionError"] == "Unhandled"
    assert response["Payload"]["errorType"] == "Runtime.ImportModuleError"


def test_an_override_can_be_removed_again() -> None:
    function = FakeFunction()
    dispatcher = LambdaDispatcher.for_template(
        TEMPLATE, REFS, lambda _: function, overrides={"CleanupFunction": lambda event: {"done": True}}
    )
    assert invoke(dispatcher, {})["Payload"] == {"done": True}

    dispatcher.override("CleanupFunction", None)

    assert invoke(dispatcher, {})["Payload"] == {"done": False}


def test_dispatching_replaces_motos_lambda_call_only_while_active() -> None:
    from moto.stepfunctions.parser.asl.component.state.exec.state_task import lambda_eval_utils

    original = lambda_eval_utils._invoke_lambda_function
    dispatcher = LambdaDispatcher(overrides={"f": lambda event: {"echo": event}})

    with dispatching(dispatcher):
        patched = lambda_eval_utils._invoke_lambda_function
        response = patched({"FunctionName": "f", "Payload": b'{"a": 1}'}, "us-east-1", None)
        assert response["Payload"] == {"echo": {"a": 1}}
        # Only one dispatcher at a time: moto's backends are process-wide
        with pytest.raises(RuntimeError, match="already active"), dispatching(LambdaDispatcher()):
            pass

    assert lambda_eval_utils._invoke_lambda_function is original
