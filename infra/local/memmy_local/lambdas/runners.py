"""What Lambda's event source mappings do on AWS, done for the local stack on moto: ``SqsRunner`` feeds a
queue to its function on as many threads as the event's ``MaximumConcurrency``, ``ScheduleRunner`` fires
the schedules moto never fires (docs/architecture.md, "Local stack")."""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3

from memmy_local.template_intrinsics import resolve_intrinsics

from .functions import FunctionPool, LocalFunction

log = logging.getLogger("memmy_local.runners")

_SERVERLESS_FUNCTION = "AWS::Serverless::Function"
_MAX_BATCH = 10  # SQS's limit per ReceiveMessage
_DEFAULT_CONCURRENCY = 5  # concurrent batches of an SQS event source mapping without a ScalingConfig


@dataclass(frozen=True)
class SqsSource:
    """One SQS event of one function, resolved against the provisioned resources."""

    function: str
    queue_url: str
    queue_arn: str
    batch_size: int
    reports_item_failures: bool
    concurrency: int = _DEFAULT_CONCURRENCY  # batches in flight at once


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
                    concurrency=int(
                        (properties.get("ScalingConfig") or {}).get(
                            "MaximumConcurrency", _DEFAULT_CONCURRENCY
                        )
                    ),
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
    """Feeds one queue to one local function, on ``source.concurrency`` background threads, until ``stop()``.

    It long-polls the queue the template subscribes the function to (``Events: {Type: SQS}``) and invokes
    it with Lambda's event (``Records`` with ``messageId``, ``receiptHandle``, ``body``, ``attributes``,
    ``eventSource: aws:sqs``, ``eventSourceARN``), on as many threads as the event's
    ``ScalingConfig.MaximumConcurrency`` (else 5, the pollers Lambda starts with). As with
    ``ReportBatchItemFailures``, the messages the handler reports in ``batchItemFailures`` stay and the
    others are deleted; an invocation that raises leaves the whole batch. Unlike AWS, a failed message is
    visible again after ``retry_delay`` seconds, not the queue's visibility timeout (minutes), so local
    retries happen while someone is watching; the redrive policy (maxReceiveCount, DLQ) still applies.
    """

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
        self._threads: list[threading.Thread] = []

    def start(self) -> SqsRunner:
        for n in range(max(1, self.source.concurrency)):
            thread = threading.Thread(
                target=self._run, name=f"memmy-sqs-{self.source.function}-{n}", daemon=True
            )
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self) -> None:
        self._stopping.set()
        # A long poll ends within wait_seconds; an invocation in flight is allowed to finish.
        deadline = time.monotonic() + self.function.timeout_s + self._wait_seconds + 5
        for thread in self._threads:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
        self._threads = []

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
    pool: FunctionPool | None = None,
) -> list[SqsRunner]:
    """Load every SQS-triggered function of ``template`` (from ``pool`` when given) and start a runner
    for each of its queues."""
    pool = pool or FunctionPool(
        template, refs, environments, repo_root=repo_root, region=region, account_id=account_id
    )
    runners = []
    for source in sqs_sources(template, refs):
        function = pool.get(source.function)
        # Each concurrent batch in a container of its own, as Lambda runs them.
        function.max_containers = max(function.max_containers, source.concurrency)
        runners.append(SqsRunner(source, function, endpoint_url=endpoint_url, region=region).start())
    return runners


# -------------------------------------------------------------------------------------- schedules

_SCHEDULE_EVENTS = frozenset({"Schedule", "ScheduleV2"})
DEFAULT_SCHEDULE_INTERVAL = 60.0


@dataclass(frozen=True)
class ScheduleSource:
    """One ``Schedule`` (EventBridge rule) or ``ScheduleV2`` (EventBridge Scheduler) event of a function."""

    function: str
    event_id: str
    kind: str  # "Schedule" or "ScheduleV2"
    expression: str
    name: str
    input: str | None
    enabled: bool


def schedule_sources(template: Mapping[str, Any], refs: Mapping[str, str]) -> list[ScheduleSource]:
    """Every ``Schedule``/``ScheduleV2`` event of every ``AWS::Serverless::Function``, in template order."""
    sources = []
    for logical_id, resource in template["Resources"].items():
        if resource.get("Type") != _SERVERLESS_FUNCTION:
            continue
        for event_id, event in ((resource.get("Properties") or {}).get("Events") or {}).items():
            kind = event.get("Type")
            if kind not in _SCHEDULE_EVENTS:
                continue
            properties = resolve_intrinsics(event.get("Properties") or {}, refs)
            expression = properties.get("ScheduleExpression" if kind == "ScheduleV2" else "Schedule", "")
            state = str(properties.get("State", "ENABLED")).upper()
            enabled = state == "ENABLED" and properties.get("Enabled", True) is not False
            raw_input = properties.get("Input")
            sources.append(
                ScheduleSource(
                    function=logical_id,
                    event_id=event_id,
                    kind=kind,
                    expression=str(expression),
                    # SAM names an unnamed rule or schedule after the function and the event.
                    name=str(properties.get("Name") or f"{logical_id}{event_id}"),
                    input=None if raw_input is None else str(raw_input),
                    enabled=enabled,
                )
            )
    return sources


def schedule_event(source: ScheduleSource, region: str, account_id: str, now: datetime | None = None) -> Any:
    """What the schedule delivers to the function: its ``Input`` (JSON) when it has one, else the
    default notification, an EventBridge-style "Scheduled Event" (``source`` ``aws.events`` for a rule,
    ``aws.scheduler`` for a Scheduler schedule, ``resources`` naming the rule or schedule)."""
    if source.input is not None:
        return json.loads(source.input)
    time = (now or datetime.now(tz=UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    if source.kind == "ScheduleV2":
        service, resource = "aws.scheduler", f"arn:aws:scheduler:{region}:{account_id}:schedule/default/"
    else:
        service, resource = "aws.events", f"arn:aws:events:{region}:{account_id}:rule/"
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": service,
        "account": account_id,
        "time": time,
        "region": region,
        "resources": [resource + source.name],
        "detail": {},
    }


class ScheduleRunner:
    """Invokes the template's scheduled functions every ``interval`` seconds (0: only when asked).

    It stands in for EventBridge (``Schedule``) and EventBridge Scheduler (``ScheduleV2``) with the event
    the schedule would send, at ``interval`` rather than the template's rate; ``run(logical_id)`` invokes
    one once, synchronously (``LocalStack.run_scheduled``, ``memmy-local reconcile``).
    """

    def __init__(
        self,
        sources: list[ScheduleSource],
        pool: FunctionPool,
        *,
        region: str,
        account_id: str,
        interval: float = DEFAULT_SCHEDULE_INTERVAL,
    ) -> None:
        self.sources = sources
        self.pool = pool
        self.region = region
        self.account_id = account_id
        self.interval = interval
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def functions(self) -> list[str]:
        """The logical ids of the scheduled functions, in template order."""
        return list(dict.fromkeys(source.function for source in self.sources))

    def start(self) -> ScheduleRunner:
        """Load the scheduled functions now (an import error shows at start); run them on the timer."""
        for function in self.functions:
            self.pool.get(function)
        if self.interval > 0 and any(source.enabled for source in self.sources):
            self._thread = threading.Thread(target=self._run, name="memmy-schedules", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            timeout = max((self.pool.get(f).timeout_s for f in self.functions), default=0) + 5
            self._thread.join(timeout=timeout)
            self._thread = None

    def run(self, function: str) -> Any:
        """Invoke ``function`` (a logical id) once with its schedule's event; its result, or its error raised."""
        source = next((s for s in self.sources if s.function == function), None)
        if source is None:
            raise KeyError(f"{function} has no Schedule or ScheduleV2 event in the template")
        return self._invoke(source, "asked for now")

    def _invoke(self, source: ScheduleSource, when: str) -> Any:
        event = schedule_event(source, self.region, self.account_id)
        request_id = str(uuid.uuid4())
        # Both rates: the template's (on AWS) and the timer's here, which are not the same.
        log.info(
            "schedule %s (%s on AWS; %s): invoking %s (request %s)",
            source.name,
            source.expression,
            when,
            source.function,
            request_id,
        )
        return self.pool.get(source.function).invoke(event, request_id)

    def _run(self) -> None:
        while not self._stopping.wait(self.interval):
            for source in self.sources:
                if self._stopping.is_set():
                    return
                if not source.enabled:
                    continue
                try:
                    self._invoke(source, f"here every {self.interval:g} s")
                except Exception:
                    # As with EventBridge Scheduler (our RetryPolicy: no retries), the next tick tries again.
                    log.exception("scheduled %s failed", source.function)
