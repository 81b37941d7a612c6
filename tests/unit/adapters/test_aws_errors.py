"""The AWS adapters' boundary: a throttled, failing (5xx) or timed-out call becomes the domain's
``StoreUnavailable``; the answers each adapter reads (a failed condition, a missing object, an execution
that exists) and the failures that are bugs or configuration (access denied, validation) stay as they were.

Real botocore clients with a ``Stubber`` (no request leaves the process) for service errors, and scripted
clients for connection and read failures, which a Stubber cannot produce.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import (
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    ParamValidationError,
    ReadTimeoutError,
    ResponseStreamingError,
)
from botocore.response import StreamingBody
from botocore.stub import Stubber

from memmy_kb.adapters.aws_errors import is_transient
from memmy_kb.adapters.dynamodb.cleanups import DynamoCleanupStore
from memmy_kb.adapters.dynamodb.keys import kb_key
from memmy_kb.adapters.dynamodb.table import DynamoTable, dump
from memmy_kb.adapters.s3 import UploadStorage
from memmy_kb.adapters.sqs import UploadQueue
from memmy_kb.adapters.stepfunctions import CleanupStateMachine
from memmy_kb.domain.storage import ObjectChanged, ObjectInfo, StoreUnavailable

TABLE = "memmy"
BUCKET = "uploads"
ARN = "arn:aws:states:eu-west-1:123456789012:stateMachine:cleanup"
QUEUE = "https://sqs.eu-west-1.amazonaws.com/123456789012/uploads"


def client(service: str) -> Any:
    return boto3.client(
        service,  # type: ignore[call-overload]
        region_name="eu-west-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


@pytest.fixture
def dynamodb() -> Iterator[tuple[Any, Stubber]]:
    raw = client("dynamodb")
    with Stubber(raw) as stubber:
        yield raw, stubber
        stubber.assert_no_pending_responses()


@pytest.fixture
def s3() -> Iterator[tuple[Any, Stubber]]:
    raw = client("s3")
    with Stubber(raw) as stubber:
        yield raw, stubber
        stubber.assert_no_pending_responses()


@pytest.fixture(autouse=True)
def _no_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("memmy_kb.adapters.dynamodb.table.time.sleep", lambda _: None)


class Unreachable:
    """A client whose every call fails with ``error`` (what botocore raises once its retries are spent)."""

    def __init__(self, error: Exception) -> None:
        self.error = error
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        def call(**_: Any) -> Any:
            self.calls.append(name)
            raise self.error

        return call


TIMEOUTS = [
    EndpointConnectionError(endpoint_url="https://dynamodb.eu-west-1.amazonaws.com"),
    ConnectTimeoutError(endpoint_url="https://dynamodb.eu-west-1.amazonaws.com"),
    ReadTimeoutError(endpoint_url="https://dynamodb.eu-west-1.amazonaws.com"),
]


def service_error(code: str, status: int = 400, operation: str = "GetItem") -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": code}, "ResponseMetadata": {"HTTPStatusCode": status}}, operation)


# -- which failures are transient ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "transient"),
    [
        (service_error("ThrottlingException"), True),
        (service_error("ProvisionedThroughputExceededException"), True),
        (service_error("RequestLimitExceeded"), True),
        (service_error("SlowDown", 503), True),
        (service_error("503", 503), True),  # S3's answer to a HEAD: the status as the code
        (service_error("InternalServerError", 500), True),
        (service_error("ServiceUnavailable", 503), True),
        (service_error("SomethingNew", 502), True),
        (service_error("TooManyRequestsException", 429), True),
        (*TIMEOUTS[:1], True),
        (*TIMEOUTS[1:2], True),
        (*TIMEOUTS[2:], True),
        (ResponseStreamingError(error="connection reset"), True),
        (service_error("AccessDeniedException"), False),
        (service_error("ValidationException"), False),
        (service_error("ConditionalCheckFailedException"), False),
        (service_error("NoSuchKey", 404), False),
        (service_error("ExecutionAlreadyExists"), False),
        (NoCredentialsError(), False),
        (ParamValidationError(report="missing TableName"), False),
        (ValueError("not AWS"), False),
    ],
)
def test_throttling_5xx_and_unanswered_calls_are_transient_and_nothing_else(error: Exception, transient: bool) -> None:
    assert is_transient(error) is transient


# -- DynamoDB ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "status"),
    [("ThrottlingException", 400), ("ProvisionedThroughputExceededException", 400), ("InternalServerError", 500)],
)
def test_given_dynamodb_throttled_or_failing_when_a_store_reads_then_it_raises_store_unavailable(
    dynamodb: tuple[Any, Stubber], code: str, status: int
) -> None:
    raw, stubber = dynamodb
    stubber.add_client_error("get_item", service_error_code=code, http_status_code=status)

    with pytest.raises(StoreUnavailable) as raised:
        DynamoTable(TABLE, raw).get(kb_key("kb_1"))
    assert (raised.value.service, raised.value.reason) == ("table", code)
    assert isinstance(raised.value.__cause__, ClientError)


def test_given_dynamodb_access_denied_when_a_store_reads_then_the_client_error_surfaces(
    dynamodb: tuple[Any, Stubber],
) -> None:
    raw, stubber = dynamodb
    stubber.add_client_error("get_item", service_error_code="AccessDeniedException", http_status_code=400)

    with pytest.raises(ClientError, match="AccessDeniedException"):
        DynamoTable(TABLE, raw).get(kb_key("kb_1"))


def test_given_a_failed_condition_when_updating_then_it_is_still_an_answer_not_unavailability(
    dynamodb: tuple[Any, Stubber],
) -> None:
    raw, stubber = dynamodb
    stubber.add_client_error("update_item", service_error_code="ConditionalCheckFailedException")

    assert DynamoTable(TABLE, raw).update(kb_key("kb_1"), "SET a = :a", "attribute_exists(PK)", {":a": 1}) is None


def test_given_a_store_calling_the_client_directly_when_dynamodb_throttles_then_it_raises_store_unavailable(
    dynamodb: tuple[Any, Stubber],
) -> None:
    # DynamoCleanupStore.delete_kb_items queries and batch-writes through ``table.client`` itself.
    raw, stubber = dynamodb
    stubber.add_response("query", {"Items": [dump(kb_key("kb_1"))]})
    stubber.add_client_error("batch_write_item", service_error_code="ProvisionedThroughputExceededException")

    with pytest.raises(StoreUnavailable, match="table unavailable: ProvisionedThroughputExceededException"):
        DynamoCleanupStore(DynamoTable(TABLE, raw)).delete_kb_items("kb_1", 500)


@pytest.mark.parametrize("error", TIMEOUTS, ids=lambda e: type(e).__name__)
def test_given_dynamodb_unreachable_when_reading_or_writing_then_it_raises_store_unavailable(error: Exception) -> None:
    table = DynamoTable(TABLE, Unreachable(error))

    with pytest.raises(StoreUnavailable, match=type(error).__name__):
        table.get(kb_key("kb_1"))
    with pytest.raises(StoreUnavailable, match=type(error).__name__):
        list(table.query(KeyConditionExpression="PK = :pk"))
    with pytest.raises(StoreUnavailable, match=type(error).__name__):
        table.transact([{}])
    assert table.client.wrapped.calls == ["get_item", "query", "transact_write_items"]


def test_given_a_transaction_throttled_past_its_retries_then_it_raises_store_unavailable(
    dynamodb: tuple[Any, Stubber],
) -> None:
    raw, stubber = dynamodb
    for _ in range(4):
        stubber.add_client_error("transact_write_items", service_error_code="ThrottlingException")

    with pytest.raises(StoreUnavailable, match="ThrottlingException"):
        DynamoTable(TABLE, raw).transact([{"ConditionCheck": {"TableName": TABLE, "Key": dump(kb_key("kb_1")), "ConditionExpression": "attribute_exists(PK)"}}])


def test_given_a_transaction_cancelled_for_throttling_past_its_retries_then_it_raises_store_unavailable() -> None:
    cancelled = ClientError(
        {
            "Error": {"Code": "TransactionCanceledException", "Message": "cancelled"},
            "CancellationReasons": [{"Code": "None"}, {"Code": "ThrottlingError"}],
        },
        "TransactWriteItems",
    )
    scripted = Unreachable(cancelled)

    with pytest.raises(StoreUnavailable, match="TransactionCanceledException"):
        DynamoTable(TABLE, scripted).transact([{}, {}])
    assert len(scripted.calls) == 4  # retried under its token first, as before


def test_given_a_transaction_throttled_once_then_it_is_retried_not_reported(dynamodb: tuple[Any, Stubber]) -> None:
    raw, stubber = dynamodb
    stubber.add_client_error("transact_write_items", service_error_code="ThrottlingException")
    stubber.add_response("transact_write_items", {})

    DynamoTable(TABLE, raw).transact(
        [{"ConditionCheck": {"TableName": TABLE, "Key": dump(kb_key("kb_1")), "ConditionExpression": "attribute_exists(PK)"}}]
    )


# -- S3 ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("code", "status"), [("SlowDown", 503), ("InternalError", 500), ("503", 503)])
def test_given_s3_throttled_or_failing_when_the_bucket_is_used_then_it_raises_store_unavailable(
    s3: tuple[Any, Stubber], code: str, status: int
) -> None:
    raw, stubber = s3
    stubber.add_client_error("head_object", service_error_code=code, http_status_code=status)
    stubber.add_client_error("list_objects_v2", service_error_code=code, http_status_code=status)
    stubber.add_client_error("delete_object", service_error_code=code, http_status_code=status)
    bucket = UploadStorage(BUCKET, raw)

    with pytest.raises(StoreUnavailable, match=f"bucket unavailable: {code}"):
        bucket.head("uploads/kb_1/up_1")
    with pytest.raises(StoreUnavailable, match=f"bucket unavailable: {code}"):
        bucket.delete_prefix("uploads/kb_1/")
    with pytest.raises(StoreUnavailable, match=f"bucket unavailable: {code}"):
        bucket.delete("uploads/kb_1/up_1")


def test_given_s3_answers_what_the_adapter_reads_then_those_answers_are_unchanged(s3: tuple[Any, Stubber]) -> None:
    raw, stubber = s3
    stubber.add_client_error("head_object", service_error_code="404", http_status_code=404)
    stubber.add_client_error("get_object", service_error_code="PreconditionFailed", http_status_code=412)
    stubber.add_client_error("head_object", service_error_code="AccessDenied", http_status_code=403)
    bucket = UploadStorage(BUCKET, raw)

    assert bucket.head("uploads/kb_1/up_1") is None
    with pytest.raises(ObjectChanged):
        bucket.read_range(ObjectInfo("uploads/kb_1/up_1", 10, '"etag"'), 0, 5)
    with pytest.raises(ClientError, match="AccessDenied"):
        bucket.head("uploads/kb_1/up_1")


@pytest.mark.parametrize("error", TIMEOUTS, ids=lambda e: type(e).__name__)
def test_given_s3_unreachable_when_the_bucket_is_used_then_it_raises_store_unavailable(error: Exception) -> None:
    bucket = UploadStorage(BUCKET, Unreachable(error))

    with pytest.raises(StoreUnavailable, match=type(error).__name__):
        bucket.delete_prefix("uploads/kb_1/")
    with pytest.raises(StoreUnavailable, match=type(error).__name__):
        bucket.copy(ObjectInfo("uploads/kb_1/up_1", 10, '"etag"'), "verified/kb_1/up_1")


class StalledStream(io.RawIOBase):
    """A response body whose connection times out after ``good`` bytes."""

    def __init__(self, good: bytes) -> None:
        self.good = good

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        if self.good and size is not None and size > 0:
            chunk, self.good = self.good[:size], self.good[size:]
            return chunk
        raise ReadTimeoutError(endpoint_url="https://uploads.s3.eu-west-1.amazonaws.com")


class ScriptedGets:
    def get_object(self, **_: Any) -> dict[str, Any]:
        return {"Body": StreamingBody(StalledStream(b"12345"), 10), "ETag": '"etag"', "ContentRange": "bytes 0-9/10"}


def test_given_a_body_that_times_out_while_streaming_then_reads_raise_store_unavailable() -> None:
    bucket = UploadStorage(BUCKET, ScriptedGets())
    info = ObjectInfo("uploads/kb_1/up_1", 10, '"etag"')

    with pytest.raises(StoreUnavailable, match="ReadTimeoutError"):
        bucket.read_range(info, 0, 10)
    with pytest.raises(StoreUnavailable, match="ReadTimeoutError"):
        list(bucket.iter_chunks(info, 4))


# -- Step Functions and SQS ----------------------------------------------------------------------------


def test_given_step_functions_throttled_when_starting_a_cleanup_then_it_raises_store_unavailable() -> None:
    raw = client("stepfunctions")
    with Stubber(raw) as stubber:
        stubber.add_client_error("start_execution", service_error_code="ThrottlingException")
        stubber.add_client_error("start_execution", service_error_code="ExecutionAlreadyExists")
        stubber.add_client_error("start_execution", service_error_code="AccessDeniedException")
        machine = CleanupStateMachine(ARN, raw)

        with pytest.raises(StoreUnavailable, match="state machine unavailable: ThrottlingException"):
            machine.start("cl_1", "cl_1")
        machine.start("cl_1", "cl_1")  # already started: still an answer
        with pytest.raises(ClientError, match="AccessDeniedException"):
            machine.start("cl_1", "cl_1")


@pytest.mark.parametrize(("code", "status"), [("RequestThrottled", 400), ("ServiceUnavailable", 503)])
def test_given_sqs_throttled_or_failing_when_requeueing_then_it_raises_store_unavailable(code: str, status: int) -> None:
    raw = client("sqs")
    with Stubber(raw) as stubber:
        stubber.add_client_error("send_message", service_error_code=code, http_status_code=status)

        with pytest.raises(StoreUnavailable, match=f"queue unavailable: {code}"):
            UploadQueue(QUEUE, BUCKET, raw).requeue("uploads/kb_1/up_1")


def test_given_sqs_unreachable_when_requeueing_then_it_raises_store_unavailable() -> None:
    with pytest.raises(StoreUnavailable, match="EndpointConnectionError"):
        UploadQueue(QUEUE, BUCKET, Unreachable(TIMEOUTS[0])).requeue("uploads/kb_1/up_1")
