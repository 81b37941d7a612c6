"""What AWS does around the functions of the ``service`` fixture, played in-process: Lambda's SQS poller
(``deliver``), the cleanup state machine (``Executions``) and the reconcile schedule (``Schedule``).

The fixture's Step Functions do not execute; ``Executions`` plays the cleanup state machine
(infra/statemachines/cleanup.asl.json) for every execution that was started: CleanUp rounds until done
(``CleanupRetryable`` retried up to the ASL's MaxAttempts), then DeleteOutbox; anything else MarkFailed.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import boto3
from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError

from memmy_kb.domain.deletion.cleanup import CleanupRetryable
from memmy_local.lambdas.runners import sqs_event
from tests.support.aws import Service
from tests.support.crashes import Killed
from tests.support.repair import reconciler
from tests.support.uploads import REGION

# The ASL's CleanUp Retry: MaxAttempts for CleanupRetryable.
CLEANUP_RETRIES = 6
# Each reconciler run happens this much later than the last: past every grace period (15 minutes), past a
# pending upload's POST and grace (70 minutes) and past the cleanup backoff's cap (6 hours).
RECONCILE_STEP = timedelta(hours=7)


def sqs_client() -> Any:
    return boto3.client("sqs", region_name=REGION)


def deliver(service: Service, *, until_empty: bool = True, batch: int = 1, max_invocations: int = 60) -> None:
    """Lambda's SQS poller (one message per invocation unless told otherwise, so that a crash takes one
    delivery down): a message the handler reports failed, or whose invocation crashed, comes back; with
    ``until_empty`` it is retried at once, else it is left for later."""
    queue_url, queue_arn = service.refs["UploadQueue"], service.refs["UploadQueue.Arn"]
    client = sqs_client()
    for _ in range(max_invocations):
        messages = client.receive_message(
            QueueUrl=queue_url, MaxNumberOfMessages=batch, MessageSystemAttributeNames=["All"]
        ).get("Messages", [])
        if not messages:
            return
        try:
            result = service.invoke("IngestFunction", sqs_event(messages, queue_arn, REGION))
            failed = {f["itemIdentifier"] for f in result.get("batchItemFailures", [])}
        except (BatchProcessingError, Killed):
            failed = {m["MessageId"] for m in messages}  # all failed, or the invocation died: all come back
        for message in messages:
            if message["MessageId"] in failed:
                client.change_message_visibility(
                    QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
                )
            else:
                client.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
        if failed and not until_empty:
            return
    raise AssertionError("the upload queue did not drain")


def queue_depth(service: Service) -> int:
    attributes = sqs_client().get_queue_attributes(
        QueueUrl=service.refs["UploadQueue"],
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return sum(int(v) for v in attributes.values())


@dataclass
class Executions:
    """The cleanup state machine, for every execution started since this object was made."""

    service: Any
    done: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.client: Any = boto3.client("stepfunctions", region_name=REGION)
        self.arn = self.service.refs["CleanupStateMachine"]
        self.done = {e["executionArn"] for e in self._listed()}  # moto keeps other tests' executions

    def _listed(self) -> list[dict[str, Any]]:
        paginator = self.client.get_paginator("list_executions")
        return [e for page in paginator.paginate(stateMachineArn=self.arn) for e in page["executions"]]

    def pending(self) -> list[dict[str, Any]]:
        return sorted(
            (e for e in self._listed() if e["executionArn"] not in self.done), key=lambda e: e["startDate"]
        )

    def run_started(self) -> int:
        """Run every execution started and not yet run, in start order; how many ran."""
        ran = 0
        while todo := self.pending():
            for execution in todo:
                self.done.add(execution["executionArn"])
                payload = json.loads(
                    self.client.describe_execution(executionArn=execution["executionArn"])["input"]
                )
                self.execute(payload)
                ran += 1
        return ran

    def execute(self, payload: dict[str, Any]) -> None:
        """CleanUp until done, then DeleteOutbox. A ``CleanupRetryable`` is retried (counted per entry into
        CleanUp, as on AWS) up to the Retry's MaxAttempts; it, or any other error, ends in MarkFailed."""
        retries = 0
        for _ in range(50):
            try:
                done = self.service.invoke("CleanupFunction", {"cleanup_id": payload["cleanup_id"]})["done"]
            except CleanupRetryable as err:
                retries += 1
                if retries > CLEANUP_RETRIES:
                    self._mark_failed(payload, err)
                    return
                continue
            except (Exception, Killed) as err:
                self._mark_failed(payload, err)
                return
            retries = 0
            if done:
                self.service.stores.table.client.delete_item(
                    TableName=self.service.refs["Table"], Key=payload["key"]
                )
                return
        raise AssertionError(f"cleanup {payload['cleanup_id']} never finished")

    def _mark_failed(self, payload: dict[str, Any], err: BaseException) -> None:
        client = self.service.stores.table.client
        with contextlib.suppress(client.exceptions.ConditionalCheckFailedException):  # finished meanwhile
            client.update_item(
                TableName=self.service.refs["Table"],
                Key=payload["key"],
                UpdateExpression="SET #state = :failed, GSI2PK = :queue, last_error = :error, last_cause = :cause",
                ConditionExpression="attribute_exists(PK)",
                ExpressionAttributeNames={"#state": "state"},
                ExpressionAttributeValues={
                    ":failed": {"S": "failed"},
                    ":queue": {"S": "CLEANUP#failed"},
                    ":error": {"S": type(err).__name__},
                    ":cause": {"S": str(err)[:200] or "-"},
                },
            )


@dataclass
class Schedule:
    """The reconciler on the service's adapters, each run ``RECONCILE_STEP`` later than the last."""

    service: Any
    later: timedelta = timedelta(0)

    def reconcile(self) -> dict[str, int]:
        self.later += RECONCILE_STEP
        try:
            return reconciler(self.service, later=self.later).run().counts
        except Killed:
            return {"Killed": 1}  # the next scheduled run picks up where this one died
