"""Event runners: what Lambda's event source mappings do on AWS, done for the local stack on moto.

``SqsRunner`` long-polls one queue and invokes the function that the template subscribes to it
(``Events: {Type: SQS}``) in-process, with events shaped like Lambda's (``Records`` with ``messageId``,
``receiptHandle``, ``body``, ``attributes``, ``eventSource: aws:sqs``, ``eventSourceARN``). As with
``FunctionResponseTypes: [ReportBatchItemFailures]``, the messages a handler reports in
``batchItemFailures`` stay in the queue and the others are deleted; an invocation that raises leaves the
whole batch. Unlike AWS, a failed message is made visible again after ``retry_delay`` seconds rather than
the queue's full visibility timeout (minutes), so that local retries happen while someone is watching;
the queue's redrive policy (maxReceiveCount, DLQ) still applies.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3

from .gateway import LocalFunction, load_function
from .template import resolve_intrinsics

log = logging.getLogger("memmy_local.runners")

_SERVERLESS_FUNCTION = "AWS::Serverless::Function"
_MAX_BATCH = 10  # SQS's limit per ReceiveMessage


@dataclass(frozen=True)
class SqsSource:
    """One SQS event of one function, resolved against the provisioned resources."""

    function: str
    queue_url: str
    queue_arn: str
    batch_size: int
    reports_item_failures: bool


def sqs_sources(template: Mapping[str, Any], refs: Mapping[str, str]) -> list[SqsSource]:
    """Every ``SQS`` event of every ``AWS::Serverless::Function`` in ``template``."""
    urls_by_arn = {value: refs[name[: -len(".Arn")]] for name, value in refs.items() if name.endswith(".Arn")}
    sources = []
    for logical_id, resource in template["Resources"].items():
        if resource.get("Type") != _SERVERLESS_FUNCTION:
            continue
        for event in ((resource.get("Properties") or {}).get("Events") or {}).values():
            if event.get("Type") != "SQS":
                continue
            properties = event.get("Properties") or {}
            arn = resolve_intrinsics(properties["Queue"], refs)
            sources.append(
                SqsSource(
                    function=logical_id,
                    queue_url=urls_by_arn[arn],
                    queue_arn=arn,
                    batch_size=min(int(properties.get("BatchSize", 10)), _MAX_BATCH),
                    reports_item_failures="ReportBatchItemFailures"
                    in (properties.get("FunctionResponseTypes") or []),
                )
            )
    return sources


def sqs_event(messages: list[Mapping[str, Any]], queue_arn: str, region: str) -> dict[str, Any]:
    """The event Lambda's SQS poller would send for ``messages`` (as ReceiveMessage returned them)."""
    return {
        "Records": [
            {
                "messageId": message["MessageId"],
                "receiptHandle": message["ReceiptHandle"],
                "body": message["Body"],
                "attributes": dict(message.get("Attributes") or {}),
                "messageAttributes": dict(message.get("MessageAttributes") or {}),
                "md5OfBody": message.get("MD5OfBody", ""),
                "eventSource": "aws:sqs",
                "eventSourceARN": queue_arn,
                "awsRegion": region,
            }
            for message in messages
        ]
    }


class SqsRunner:
    """Feeds one queue to one local function, in a background thread, until ``stop()``."""

    def __init__(
        self,
        source: SqsSource,
        function: LocalFunction,
        *,
        endpoint_url: str | None,
        region: str,
        wait_seconds: int = 1,
        retry_delay: int = 2,
    ) -> None:
        self.source = source
        self.function = function
        self.region = region
        self._sqs = boto3.client("sqs", endpoint_url=endpoint_url, region_name=region)
        self._wait_seconds = wait_seconds
        self._retry_delay = retry_delay
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> SqsRunner:
        self._thread = threading.Thread(
            target=self._run, name=f"memmy-sqs-{self.source.function}", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            # A long poll ends within wait_seconds; an invocation in flight is allowed to finish.
            self._thread.join(timeout=self.function.timeout_s + self._wait_seconds + 5)
            self._thread = None

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                self.poll_once()
            except Exception:
                if self._stopping.is_set():
                    return
                log.exception("polling %s failed", self.source.queue_url)
                self._stopping.wait(1.0)

    def poll_once(self) -> int:
        """Receive one batch (long poll), invoke the function, settle the messages; how many came."""
        messages = self._sqs.receive_message(
            QueueUrl=self.source.queue_url,
            MaxNumberOfMessages=self.source.batch_size,
            WaitTimeSeconds=self._wait_seconds,
            MessageSystemAttributeNames=["All"],
            MessageAttributeNames=["All"],
        ).get("Messages", [])
        if not messages:
            return 0
        event = sqs_event(messages, self.source.queue_arn, self.region)
        try:
            result = self.function.invoke(event, str(uuid.uuid4()))
        except Exception:
            log.exception("%s failed on a batch of %d; retrying it", self.source.function, len(messages))
            self._retry(messages)
            return len(messages)
        failed = self._failed_ids(result, messages)
        self._retry([m for m in messages if m["MessageId"] in failed])
        done = [m for m in messages if m["MessageId"] not in failed]
        if done:
            self._sqs.delete_message_batch(
                QueueUrl=self.source.queue_url,
                Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(done)],
            )
        return len(messages)

    def _failed_ids(self, result: Any, messages: list[Mapping[str, Any]]) -> set[str]:
        if not self.source.reports_item_failures:
            return set()
        failures = (result.get("batchItemFailures") or []) if isinstance(result, Mapping) else []
        ids = {str(f.get("itemIdentifier")) for f in failures}
        if any(not i or i == "None" for i in ids):
            # Lambda treats an empty or null identifier as a failure of the whole batch.
            return {m["MessageId"] for m in messages}
        return ids

    def _retry(self, messages: list[Mapping[str, Any]]) -> None:
        for message in messages:
            self._sqs.change_message_visibility(
                QueueUrl=self.source.queue_url,
                ReceiptHandle=message["ReceiptHandle"],
                VisibilityTimeout=self._retry_delay,
            )


def start_sqs_runners(
    template: Mapping[str, Any],
    refs: Mapping[str, str],
    environments: Mapping[str, Mapping[str, str]],
    *,
    repo_root: Path,
    endpoint_url: str | None,
    region: str,
    account_id: str,
) -> list[SqsRunner]:
    """Load every SQS-triggered function of ``template`` and start a runner for each of its queues."""
    runners = []
    for source in sqs_sources(template, refs):
        function = load_function(
            template,
            source.function,
            repo_root=repo_root,
            refs=refs,
            environment=environments.get(source.function, {}),
            region=region,
            account_id=account_id,
        )
        runners.append(SqsRunner(source, function, endpoint_url=endpoint_url, region=region).start())
    return runners
