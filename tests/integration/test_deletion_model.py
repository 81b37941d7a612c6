"""Deletion under crashes and faults: after reconcile, Memmy, MemOS and S3 agree again.

Two kinds of evidence, both checked by one helper, ``assert_consistent``:

* **Kill points.** A crash (``Killed``, a ``BaseException`` nothing in the service may catch, as a Lambda
  timeout or an out-of-memory kill) is injected once before or after one adapter call of one flow: the
  ingest of an upload, the ingest of a replace (a file's next version), the DELETE of a file, a folder or
  a KB, or a cleanup round. The crashed flow is
  finished as AWS would: a crashed request is retried by the client, a crashed ingest invocation's SQS
  message comes back, a crashed cleanup execution is caught by the state machine and its outbox item is
  marked failed. Then the system settles (the queue drained, the reconciler run with its clock past
  every grace period, every cleanup execution it started run) and nothing may be left behind. Right
  after the folder DELETE, its subtree must also be gone for the user: no listing of, upload into or
  move into any of its folders, whatever the sweep got to before the crash.
* **A stateful property test.** Random interleavings of creates, uploads, deletes, MemOS faults, crashes,
  cleanup runs and reconciler runs against a model of what is live: nothing deleted is ever visible again
  (KB list, recall scope, file and folder listings; a deleted KB or folder, subfolders included, lists as
  404), nothing live disappears, and at the end ``assert_consistent`` holds. Replaces run among them: at
  the end a file answers recall with the words of its recorded version only, never the replaced ones.

* **A late arrival.** The bytes of an upload arrive after its KB's cleanup emptied S3 and before its
  table step, the ingest running before, during (the table step landing in its hold or its rejection) or
  after that step, or never: no object of the KB remains once the reconciler has run.

The fixture's Step Functions do not execute; ``Executions`` plays the cleanup state machine
(infra/statemachines/cleanup.asl.json) for every execution that was started: CleanUp rounds until done
(``CleanupRetryable`` retried up to the ASL's MaxAttempts), then DeleteOutbox; anything else MarkFailed.

The S3 rule, from the code: the ingest keeps an upload's objects (``uploads/<kb>/<upload>`` and, for a
large file, ``verified/<kb>/<upload>``) after it is submitted, by design, until the bucket's lifecycle
expires them (three days). So an object may remain only while its KB is live and its upload is in flight
(pending or submitting) or submitted into a FILE item that is still live and still at that upload's
version. The objects of deleted KBs, of deleted files, of replaced versions, of rejected or expired
uploads, and keys without an upload record must be gone.
"""

from __future__ import annotations

import contextlib
import json
import re
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from http import HTTPStatus
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError
from botocore.client import BaseClient
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from memmy_kb.adapters.dynamodb.cleanups import DynamoCleanupStore
from memmy_kb.adapters.dynamodb.contents import DynamoContentStore
from memmy_kb.adapters.dynamodb.table import dump, upload_key
from memmy_kb.adapters.memos.client import MemosClient
from memmy_kb.adapters.s3 import UploadStorage
from memmy_kb.adapters.stepfunctions import CleanupStateMachine
from memmy_kb.composition import reset_composition
from memmy_kb.domain.cleanup import CleanupRetryable
from memmy_kb.domain.engine import MemosUnavailable
from memmy_kb.domain.files import GONE_FROM_MEMOS
from memmy_local.lambdas.runners import sqs_event
from tests.support.aws import TWO_BACKENDS
from tests.support.polling import wait_until
from tests.support.repair import drop_queued_events, reconciler
from tests.support.uploads import REGION, create_kb, post_file, request_upload

ADD = "/add/knowledgebase-file"
UPDATE = "/update/knowledgebase-file"
DELETE_FILES = "/delete/knowledgebase-file"
DELETE_KB = "/delete/knowledgebase"
# The ASL's CleanUp Retry: MaxAttempts for CleanupRetryable.
CLEANUP_RETRIES = 6
# Each reconciler run happens this much later than the last: past every grace period (15 minutes), past a
# pending upload's POST and grace (70 minutes) and past the cleanup backoff's cap (6 hours).
RECONCILE_STEP = timedelta(hours=7)
_OBJECT_KEY = re.compile(r"^(uploads|verified)/([^/]+)/([^/]+)$")


@pytest.fixture(autouse=True)
def _on_two_backends(two_memos_backends: Any) -> None:
    """Every case here runs with two MemOS backends (the emulator's two projects): KBs spread over both,
    and ``assert_consistent`` checks each."""


class Killed(BaseException):
    """The process dies here. A ``BaseException``, so that no ``except Exception`` in the service can
    swallow it: a Lambda timeout or kill runs no handler code either."""


# -- crashes ----------------------------------------------------------------------------------------------

Target = tuple[type, str]


@dataclass
class Killer:
    """Wraps adapter methods; the armed one raises ``Killed`` once, before or after doing the real call
    (only within ``phase``, when one is named)."""

    armed: tuple[Target, str, str | None] | None = None  # method, "before" | "after", phase
    phase: str | None = None
    fired: list[str] = field(default_factory=list)

    def install(self, monkeypatch: pytest.MonkeyPatch, targets: list[Target]) -> None:
        for cls, name in dict.fromkeys(targets):
            monkeypatch.setattr(cls, name, self._wrap((cls, name), getattr(cls, name)))

    def _wrap(self, target: Target, original: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            when = self._take(target)
            if when == "before":
                raise Killed(f"{target[0].__name__}.{target[1]} (before)")
            result = original(*args, **kwargs)
            if when == "after":
                raise Killed(f"{target[0].__name__}.{target[1]} (after)")
            return result

        return wrapper

    def _take(self, target: Target) -> str | None:
        if self.armed is None:
            return None
        armed, when, phase = self.armed
        if armed != target or (phase is not None and phase != self.phase):
            return None
        self.armed = None
        self.fired.append(f"{target[0].__name__}.{target[1]} ({when}) in {self.phase}")
        return when

    def arm(self, target: Target, when: str, phase: str | None = None) -> None:
        self.armed = (target, when, phase)

    def disarm(self) -> None:
        self.armed = None

    @contextmanager
    def during(self, phase: str) -> Iterator[None]:
        self.phase = phase
        try:
            yield
        finally:
            self.phase = None


# -- playing AWS: the SQS event source, the cleanup state machine, the schedule ------------------------------


def sqs_client() -> Any:
    return boto3.client("sqs", region_name=REGION)


def deliver(service, *, until_empty: bool = True, batch: int = 1, max_invocations: int = 60) -> None:
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


def queue_depth(service) -> int:
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
        self.client = boto3.client("stepfunctions", region_name=REGION)
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


# -- the state of the three stores ------------------------------------------------------------------------


def table_items(service) -> list[dict[str, Any]]:
    table = boto3.resource("dynamodb", region_name=REGION).Table(service.refs["Table"])
    items: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"ConsistentRead": True}
    while True:
        page = table.scan(**kwargs)
        items.extend(page["Items"])
        if "LastEvaluatedKey" not in page:
            return items
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def bucket_keys(service) -> list[str]:
    client = boto3.client("s3", region_name=REGION)
    paginator = client.get_paginator("list_objects_v2")
    return [
        o["Key"]
        for page in paginator.paginate(Bucket=service.refs["UploadBucket"])
        for o in page.get("Contents", [])
    ]


def memos_kbs(service) -> dict[str, list[dict[str, Any]]]:
    """MemOS KB id -> its files, as the emulator holds them."""
    return {kb["id"]: kb["files"] for kb in service.memos.state()["knowledge_bases"]}


def assert_consistent(service) -> None:
    problems = consistency_problems(service)
    assert not problems, "inconsistent after reconcile:\n  " + "\n  ".join(problems)


def consistency_problems(service) -> list[str]:
    """What must hold once reconcile has run: Memmy, MemOS and S3 agree, and nothing deleted is left.

    (a) every MemOS KB belongs to a live KB (a META item, by ``memos_kb_id``), and every live KB's MemOS
        KB exists; (b) every MemOS file of a live KB is referenced by exactly one FILE item; (c) every
        FILE item's MemOS file exists in its KB's MemOS KB, and its folder is live; (d) the S3 rule of the
        module docstring; (e) no item of a deleted KB (its partition, a grant), no outbox item, no upload
        still submitting (the reconciler resolves every one past its grace period); (f) each live KB's
        capacity counts on META (``file_count``, ``bytes_used``) are exactly its FILE items and their sizes;
        (g) every live KB's MemOS KB is in the project of the backend recorded on it, whose counter holds
        it, and each backend's count is exactly the KBs its counter holds (no slot lost or left behind);
        (h) no file is left marked ``replacing`` an upload no longer in flight (no file stays locked).
    """
    items = table_items(service)
    problems: list[str] = []
    metas = {i["PK"].removeprefix("KB#"): i for i in items if i["PK"].startswith("KB#") and i["SK"] == "META"}
    by_memos = {m["memos_kb_id"]: kb_id for kb_id, m in metas.items()}
    files = [i for i in items if i["PK"].startswith("KB#") and i["SK"].startswith("FILE#")]
    folders = {
        (i["kb_id"], i["folder_id"])
        for i in items
        if i["PK"].startswith("KB#") and i["SK"].startswith("FOLDER#")
    }
    uploads = {
        (i["kb_id"], i["upload_id"]): i
        for i in items
        if i["PK"].startswith("KB#") and i["SK"].startswith("UPLOAD#")
    }
    memos = memos_kbs(service)
    problems += backend_problems(service, metas, items)

    # (a)
    for memos_kb_id in memos:
        if memos_kb_id not in by_memos:
            problems.append(f"(a) MemOS KB {memos_kb_id} belongs to no live KB")
    for kb_id, meta in metas.items():
        if meta["memos_kb_id"] not in memos:
            problems.append(f"(a) live KB {kb_id} has no MemOS KB")
    # (b) and (c)
    for kb_id, meta in metas.items():
        in_memos = Counter(f["id"] for f in memos.get(meta["memos_kb_id"], []))
        referenced = Counter(f["memos_file_id"] for f in files if f["kb_id"] == kb_id)
        for memos_file_id in in_memos:
            if referenced[memos_file_id] != 1:
                problems.append(
                    f"(b) MemOS file {memos_file_id} of {kb_id} is referenced by {referenced[memos_file_id]} FILE items"
                )
        for memos_file_id in referenced:
            if memos_file_id not in in_memos:
                problems.append(
                    f"(c) FILE item of {kb_id} points at MemOS file {memos_file_id}, which MemOS lacks"
                )
    for f in files:
        if f.get("folder_id") and (f["kb_id"], f["folder_id"]) not in folders:
            problems.append(f"(c) FILE {f['file_id']} hangs under the deleted folder {f['folder_id']}")
    # (d)
    live_uploads = {(f["kb_id"], f["upload_id"]) for f in files}
    for key in bucket_keys(service):
        match = _OBJECT_KEY.match(key)
        if match is None:
            problems.append(f"(d) object {key} is not an upload's")
            continue
        kb_id, upload_id = match.group(2), match.group(3)
        upload = uploads.get((kb_id, upload_id))
        state = upload["state"] if upload else None
        in_flight = state in ("pending", "submitting")
        recorded = state == "submitted" and (kb_id, upload_id) in live_uploads
        if kb_id not in metas:
            problems.append(f"(d) object {key} belongs to a deleted KB")
        elif not (in_flight or recorded):
            why = (
                "no upload record"
                if upload is None
                else f"upload {state}" + (", its file deleted or at a later version" if state == "submitted" else "")
            )
            problems.append(f"(d) object {key} is left behind ({why})")
    # (e)
    for item in items:
        pk, sk = item["PK"], item["SK"]
        if pk.startswith("KB#") and pk.removeprefix("KB#") not in metas:
            problems.append(f"(e) item {pk} {sk} of a deleted KB")
        if pk.startswith("USER#") and sk.startswith("KB#") and sk.removeprefix("KB#") not in metas:
            problems.append(f"(e) grant {pk} {sk} of a deleted KB")
        if pk.startswith("CLEANUP#"):
            problems.append(f"(e) outbox item {pk} {sk} remains ({item.get('state', 'part')})")
    for (kb_id, upload_id), upload in uploads.items():
        if upload["state"] == "submitting":
            problems.append(f"(e) upload {upload_id} of {kb_id} still submitting")
    # (h)
    for f in files:
        holder = uploads.get((f["kb_id"], f["replacing"])) if f.get("replacing") else None
        if f.get("replacing") and (holder is None or holder["state"] not in ("pending", "submitting")):
            problems.append(f"(h) FILE {f['file_id']} is left marked by replace {f['replacing']}, no longer in flight")
    # (f)
    for kb_id, meta in metas.items():
        mine = [f for f in files if f["kb_id"] == kb_id]
        counted = (int(meta.get("file_count", 0)), int(meta.get("bytes_used", 0)))
        actual = (len(mine), sum(int(f["size_bytes"]) for f in mine))
        if counted != actual:
            problems.append(f"(f) KB {kb_id} counts {counted} (files, bytes), holds {actual}")
    return problems


def backend_problems(service, metas: dict[str, dict[str, Any]], items: list[dict[str, Any]]) -> list[str]:
    """(g) of ``consistency_problems``: the KBs agree with the backends they were placed on."""
    problems = []
    project_of = {kb["id"]: kb["project"] for kb in service.memos.state()["knowledge_bases"]}
    counters = {i["PK"].removeprefix("BACKEND#"): i for i in items if i["PK"].startswith("BACKEND#")}
    placed = {kb: backend for backend, c in counters.items() for kb in c.get("kbs", set())}
    for kb_id, meta in metas.items():
        backend = meta.get("memos_backend")
        if project_of.get(meta["memos_kb_id"], TWO_BACKENDS.get(backend)) != TWO_BACKENDS.get(backend):
            problems.append(f"(g) KB {kb_id} on backend {backend} is in MemOS project {project_of[meta['memos_kb_id']]}")
        if placed.get(kb_id) != backend:
            problems.append(f"(g) KB {kb_id} on backend {backend} holds a slot on {placed.get(kb_id)}")
    for backend, counter in counters.items():
        held = set(counter.get("kbs", set()))
        if int(counter.get("used", 0)) != len(held):
            problems.append(f"(g) backend {backend} counts {counter.get('used')} KBs, holds {sorted(held)}")
        if held - set(metas):
            problems.append(f"(g) backend {backend} holds slots of deleted KBs {sorted(held - set(metas))}")
    return problems


def settle(service, executions: Executions, schedule: Schedule) -> None:
    """No more faults or crashes; then what AWS does over the next hours: deliveries, scheduled
    reconciles, and the cleanup executions they start, until nothing is left to do (or a few hours have
    passed: what is left then is for ``assert_consistent`` to name)."""
    service.memos.clear_faults()
    for _ in range(4):
        deliver(service)
        schedule.reconcile()
        executions.run_started()
        deliver(service)
        outbox = [i for i in table_items(service) if i["PK"].startswith("CLEANUP#")]
        if not outbox and queue_depth(service) == 0:
            return


# -- helpers for the flows --------------------------------------------------------------------------------


def upload_bytes(service, kb_id: str, filename: str, data: bytes, folder_id: str | None = None) -> str:
    extra = {"folder_id": folder_id} if folder_id else {}
    reply = request_upload(service, kb_id, filename, len(data), **extra)
    assert reply.status == HTTPStatus.CREATED, reply.body
    assert post_file(reply.body, data, filename).status_code == HTTPStatus.NO_CONTENT
    return reply.body["upload_id"]


# The words of the first versions of the files replaced in the kill-point scenario.
FIRST_WORDS = {"r.md": "penguinold", "k.md": "koalaold"}
# r.md's next version, with a word of its own: small (inline), since MemOS (the emulator) cannot fetch a
# presigned URL of the in-process moto, and a version it fails to process leaves the old one answering.
REPLACED = "# walrusnew\nwalrusnew 的新内容。\n".encode()


def replace_bytes(service, kb_id: str, file_id: str, data: bytes) -> str:
    """Replace a file with ``data`` (its presigned POST sent); the replace's upload id."""
    reply = service.call(
        "POST", f"/knowledge-bases/{kb_id}/files/{file_id}/replacements", "alice", body={"size_bytes": len(data)}
    )
    assert reply.status == HTTPStatus.CREATED, reply.body
    assert post_file(reply.body, data, "next.md").status_code == HTTPStatus.NO_CONTENT
    upload_id: str = reply.body["upload_id"]
    return upload_id


def processed(service) -> None:
    """Wait until MemOS has processed every file and version it was given."""
    wait_until(
        lambda: all(f["status"] != "running" for files in memos_kbs(service).values() for f in files),
        timeout=30,
        message="MemOS to process every file",
    )


def recall_problems(service, *, present: list[str], absent: list[str]) -> list[str]:
    """Which words of ``present`` the owner's recall does not find, and which of ``absent`` it does."""
    processed(service)
    problems = []
    for word, expected in [*((w, True) for w in present), *((w, False) for w in absent)]:
        reply = service.call("POST", "/recall", "alice", body={"query": word})
        found = reply.status == HTTPStatus.OK and any(word in e["content"] for e in reply.body["items"])
        if found != expected:
            problems.append(f"recall of {word!r} {'finds nothing' if expected else 'still finds it'}")
    return problems


def new_folder(service, kb_id: str, name: str, parent_id: str | None = None) -> str:
    body = {"name": name, **({"parent_id": parent_id} if parent_id else {})}
    reply = service.call("POST", f"/knowledge-bases/{kb_id}/folders", "alice", body=body)
    assert reply.status == HTTPStatus.CREATED, reply.body
    return reply.body["id"]


def delete(service, path: str) -> int:
    """DELETE ``path`` as the owner; a crashed request is retried once, as the client would."""
    try:
        reply = service.call("DELETE", path, "alice")
    except Killed:
        reply = service.call("DELETE", path, "alice")
        assert reply.status in (HTTPStatus.ACCEPTED, HTTPStatus.NOT_FOUND), reply.body
        return reply.status
    assert reply.status == HTTPStatus.ACCEPTED, reply.body
    return reply.status


@contextmanager
def add_outcome_lost() -> Iterator[None]:
    """MemOS stores the file but its reply never arrives (a read timeout): the upload stays submitting."""
    original = MemosClient.add_knowledgebase_files

    def lost(self: MemosClient, kb_id: str, files: list[Any]) -> Any:
        original(self, kb_id, files)
        raise MemosUnavailable("read timed out", endpoint=ADD, request_sent=True)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(MemosClient, "add_knowledgebase_files", lost)
        yield


def file_items(service, kb_id: str) -> dict[str, dict[str, Any]]:
    """name -> FILE item of ``kb_id``."""
    return {
        i["name"]: i for i in table_items(service) if i["PK"] == f"KB#{kb_id}" and i["SK"].startswith("FILE#")
    }


def kb_ids_listed(service) -> set[str]:
    return {k["id"] for k in service.call("GET", "/knowledge-bases", "alice").body["items"]}


# -- 1. kill points ---------------------------------------------------------------------------------------

KILL_POINTS: list[tuple[str, Target, str]] = [
    # ingest of a small file (inline): pending -> submitting -> MemOS add -> FILE item
    ("ingest-small", (UploadStorage, "read_start"), "before"),
    ("ingest-small", (DynamoContentStore, "update_upload_submitting"), "after"),
    ("ingest-small", (MemosClient, "add_knowledgebase_files"), "before"),
    ("ingest-small", (MemosClient, "add_knowledgebase_files"), "after"),
    ("ingest-small", (DynamoContentStore, "put_file_for_upload"), "before"),
    ("ingest-small", (DynamoContentStore, "put_file_for_upload"), "after"),
    # ingest of a large file: the verified copy and its presigned GET
    ("ingest-large", (UploadStorage, "copy"), "after"),
    ("ingest-large", (UploadStorage, "presign_get"), "before"),
    ("ingest-large", (MemosClient, "add_knowledgebase_files"), "after"),
    # ingest of a large file MemOS refuses: the rejection and the deletion of both objects
    ("ingest-refused", (DynamoContentStore, "update_upload_rejected"), "after"),
    ("ingest-refused", (UploadStorage, "delete"), "after"),
    # ingest of a replace: the hold, MemOS's update, the record of the next version, the replaced bytes
    ("replace", (DynamoContentStore, "update_replacement_submitting"), "after"),
    ("replace", (MemosClient, "update_knowledgebase_file"), "before"),
    ("replace", (MemosClient, "update_knowledgebase_file"), "after"),
    ("replace", (DynamoContentStore, "put_file_version"), "before"),
    ("replace", (DynamoContentStore, "put_file_version"), "after"),
    ("replace", (UploadStorage, "delete"), "before"),
    # a replace MemOS refuses: the rejection, which unmarks the file, and the deletion of its bytes
    ("replace-refused", (DynamoContentStore, "update_replacement_rejected"), "after"),
    ("replace-refused", (UploadStorage, "delete"), "after"),
    # DELETE of a file
    ("delete-file", (DynamoCleanupStore, "delete_file_with_outbox"), "before"),
    ("delete-file", (DynamoCleanupStore, "delete_file_with_outbox"), "after"),
    ("delete-file", (CleanupStateMachine, "start"), "before"),
    # DELETE of a folder: the folder with its outbox item, then the sweep of its subtree
    ("delete-folder", (DynamoCleanupStore, "delete_folder_with_outbox"), "after"),
    ("delete-folder", (DynamoContentStore, "update_upload_rejected"), "after"),
    ("delete-folder", (DynamoCleanupStore, "delete_files_with_part"), "before"),
    ("delete-folder", (DynamoCleanupStore, "delete_files_with_part"), "after"),
    ("delete-folder", (DynamoCleanupStore, "delete_folders"), "before"),
    ("delete-folder", (DynamoCleanupStore, "delete_folders"), "after"),
    ("delete-folder", (CleanupStateMachine, "start"), "before"),
    # DELETE of a KB
    ("delete-kb", (DynamoCleanupStore, "delete_kb_with_outbox"), "before"),
    ("delete-kb", (DynamoCleanupStore, "delete_kb_with_outbox"), "after"),
    ("delete-kb", (CleanupStateMachine, "start"), "before"),
    # the cleanup of a file
    ("cleanup-file", (MemosClient, "delete_knowledgebase_files"), "before"),
    ("cleanup-file", (MemosClient, "delete_knowledgebase_files"), "after"),
    ("cleanup-file", (UploadStorage, "delete"), "after"),
    ("cleanup-file", (DynamoCleanupStore, "delete_cleanup_parts"), "before"),
    # the cleanup of a folder
    ("cleanup-folder", (MemosClient, "delete_knowledgebase_files"), "after"),
    ("cleanup-folder", (UploadStorage, "delete"), "after"),
    ("cleanup-folder", (DynamoCleanupStore, "delete_cleanup_parts"), "before"),
    ("cleanup-folder", (DynamoCleanupStore, "delete_cleanup_parts"), "after"),
    # the cleanup of a KB
    ("cleanup-kb", (MemosClient, "list_knowledgebase_files"), "before"),
    ("cleanup-kb", (MemosClient, "delete_knowledgebase_files"), "after"),
    ("cleanup-kb", (MemosClient, "delete_knowledgebase"), "after"),
    ("cleanup-kb", (UploadStorage, "delete_prefix"), "after"),
    ("cleanup-kb", (DynamoCleanupStore, "delete_kb_items"), "after"),
]


def _kill_id(point: tuple[str, Target, str]) -> str:
    phase, (cls, name), when = point
    return f"{phase}:{cls.__name__}.{name}:{when}"


def md(title: str, size: int = 0) -> bytes:
    """A small Markdown file, padded with text lines to at least ``size`` bytes."""
    text = f"# {title}\n{title} 的内容。\n"
    while len(text.encode()) < size:
        text += f"{title} 的另一行内容。\n"
    return text.encode()


@pytest.mark.parametrize("point", KILL_POINTS, ids=_kill_id)
def test_a_crash_at_any_step_leaves_nothing_behind_once_reconcile_has_run(service, monkeypatch, point):
    """One scenario runs every flow once, in phases (three ingests, then a file, a folder and a KB deleted
    and cleaned up); the kill point crashes the first call of its method within its phase."""
    phase, target, when = point
    monkeypatch.setenv("INLINE_UPLOAD_MAX_BYTES", "1024")  # "big" files take the verified-copy path
    reset_composition()
    executions, schedule = Executions(service), Schedule(service)

    # Given two KBs with folders, files and uploads still in flight
    keep = create_kb(service, name="keep")
    gone = create_kb(service, name="gone")
    f = new_folder(service, keep, "F")
    g = new_folder(service, keep, "G", parent_id=f)
    h = new_folder(service, keep, "H")
    q = new_folder(service, gone, "Q")
    for kb_id, name, folder in [
        (keep, "r.md", None),
        (keep, "r2.md", None),
        (keep, "k.md", h),
        (keep, "y.md", f),
        (keep, "z.md", g),
        (gone, "q.md", q),
    ]:
        upload_bytes(service, kb_id, name, md(FIRST_WORDS.get(name, name)), folder)
    deliver(service, batch=10)
    assert set(file_items(service, keep)) == {"r.md", "r2.md", "k.md", "y.md", "z.md"}

    killer = Killer()
    killer.install(monkeypatch, [target])
    killer.arm(target, when, phase)

    # When the flows run, one of them crashing at the kill point
    with killer.during("ingest-small"):
        upload_bytes(service, keep, "x.md", md("x.md"))
        deliver(service)
    with killer.during("ingest-large"):
        upload_bytes(service, keep, "big.md", md("big.md", 2048))
        deliver(service)
    with killer.during("ingest-refused"):
        service.memos.add_fault(ADD, code=50107, times=1)  # MemOS does not take this type of file
        upload_bytes(service, keep, "refused.md", md("refused.md", 2048))
        deliver(service)
    # r.md replaced by its next version, k.md's replace refused
    r, k = file_items(service, keep)["r.md"]["file_id"], file_items(service, keep)["k.md"]["file_id"]
    with killer.during("replace"):
        replace_bytes(service, keep, r, REPLACED)
        deliver(service)
    with killer.during("replace-refused"):
        service.memos.add_fault(UPDATE, code=50107, times=1)
        replace_bytes(service, keep, k, md("kangaroonew", 2048))
        deliver(service)
    # and uploads in flight into what is deleted next: adds whose outcome is unknown (MemOS stored the file,
    # the upload stays submitting, its message is done) into G and into the KB, and a pending upload into
    # the KB whose event still waits in the queue
    with add_outcome_lost():
        upload_bytes(service, keep, "s1.md", md("s1.md"), g)
        upload_bytes(service, gone, "s2.md", md("s2.md"))
        deliver(service)
    upload_bytes(service, gone, "p2.md", md("p2.md"))
    r2 = file_items(service, keep)["r2.md"]["file_id"]
    with killer.during("delete-file"):
        delete(service, f"/knowledge-bases/{keep}/files/{r2}")
    with killer.during("cleanup-file"):
        executions.run_started()
    with killer.during("delete-folder"):
        delete(service, f"/knowledge-bases/{keep}/folders/{f}")
    # the deleted folder's subtree is gone for the user at once, whatever the sweep got to
    leaks = [
        f"{what} answered {status}"
        for what, status in subtree_reachable(service, keep, f, g, live_file="r.md")
    ]
    with killer.during("cleanup-folder"):
        executions.run_started()
    with killer.during("delete-kb"):
        delete(service, f"/knowledge-bases/{gone}")
    with killer.during("cleanup-kb"):
        executions.run_started()
    assert killer.fired, f"the kill point {_kill_id(point)} was never reached"

    # Then, once everything has settled, Memmy, MemOS and S3 agree
    settle(service, executions, schedule)
    problems = consistency_problems(service) + leaks
    # and every deletion took effect while nothing else was lost
    if kb_ids_listed(service) != {keep}:
        problems.append(f"live KBs {kb_ids_listed(service)}, expected only {keep}")
    if (names := set(file_items(service, keep))) != {"r.md", "k.md", "x.md", "big.md"}:
        problems.append(f"files {sorted(names)}, expected r.md, k.md, x.md and big.md")
    if (folders := {i["folder_id"] for i in table_items(service) if i["SK"].startswith("FOLDER#")}) != {h}:
        problems.append(f"folders {folders}, expected only H {h}")
    # and the replaced file answers with its new words only, the refused one with its old ones
    versions = {name: int(item.get("version", 1)) for name, item in file_items(service, keep).items()}
    if (versions.get("r.md"), versions.get("k.md")) != (2, 1):
        problems.append(f"versions {versions}, expected r.md at 2 and k.md at 1")
    problems += recall_problems(service, present=["walrusnew", "koalaold"], absent=["penguinold", "kangaroonew"])
    assert not problems, "after the crash and reconcile:\n  " + "\n  ".join(problems)


# The original botocore call, unrecorded: what another process does in the middle of an invocation (the
# ingest running while a cleanup round runs) must not be charged to that invocation's IAM check.
_UNRECORDED_CALL = BaseClient._make_api_call  # type: ignore[attr-defined]


@contextmanager
def another_process() -> Iterator[None]:
    """AWS calls made here are not recorded by the invocation in progress (``service.invoke`` inside
    still checks its own)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(BaseClient, "_make_api_call", _UNRECORDED_CALL)
        yield


LATE_ARRIVALS = [
    "ingested-before-the-table-step",
    "table-step-during-the-hold",
    "table-step-during-the-rejection",
    "ingested-after-the-table-step",
    "event-never-delivered",
]


@pytest.mark.parametrize("arrival", LATE_ARRIVALS)
def test_an_object_arriving_between_the_cleanups_s3_and_table_steps_leaves_nothing(service, monkeypatch, arrival):
    """The red team's race: a KB's cleanup has emptied S3 and not yet deleted the table items when the
    bytes of one of its uploads arrive. However the ingest and the cleanup's table step interleave, or if
    the event never comes, no object of the deleted KB remains once the cleanup and the reconciler ran."""
    executions, schedule = Executions(service), Schedule(service)
    kb_id = create_kb(service, name="gone")
    ticket = request_upload(service, kb_id, "late.md", len(md("late.md")))
    assert ticket.status == HTTPStatus.CREATED, ticket.body
    upload_id = ticket.body["upload_id"]
    delete(service, f"/knowledge-bases/{kb_id}")

    def table_step_lands_first(original: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            key = dump(upload_key(kb_id, upload_id))
            _UNRECORDED_CALL(service.stores.table.client, "DeleteItem", {"TableName": service.refs["Table"], "Key": key})
            return original(*args, **kwargs)

        return wrapper

    arrived: list[str] = []
    table_step = DynamoCleanupStore.delete_kb_items

    def object_arrives_first(self: DynamoCleanupStore, *args: Any, **kwargs: Any) -> Any:
        if not arrived:
            arrived.append(arrival)
            with another_process():
                assert post_file(ticket.body, md("late.md"), "late.md").status_code == HTTPStatus.NO_CONTENT
                if arrival in ("ingested-before-the-table-step", "table-step-during-the-hold", "table-step-during-the-rejection"):
                    with pytest.MonkeyPatch.context() as mp:
                        if arrival == "table-step-during-the-hold":
                            hold = DynamoContentStore.update_upload_submitting
                            mp.setattr(DynamoContentStore, "update_upload_submitting", table_step_lands_first(hold))
                        if arrival == "table-step-during-the-rejection":
                            reject = DynamoContentStore.update_upload_rejected
                            mp.setattr(DynamoContentStore, "update_upload_rejected", table_step_lands_first(reject))
                        deliver(service)
        return table_step(self, *args, **kwargs)

    monkeypatch.setattr(DynamoCleanupStore, "delete_kb_items", object_arrives_first)
    executions.run_started()
    assert arrived, "the cleanup never reached its table step"
    assert kb_partition_left(service, kb_id) == []
    if arrival == "event-never-delivered":
        drop_queued_events(service)

    # Then, after the reconciler's next runs (and any delivery), nothing of the KB is left
    settle(service, executions, schedule)
    schedule.reconcile()
    assert not [k for k in bucket_keys(service) if f"/{kb_id}/" in k]
    assert_consistent(service)


def kb_partition_left(service, kb_id: str) -> list[dict[str, Any]]:
    return [i for i in table_items(service) if i["PK"] == f"KB#{kb_id}"]


def subtree_reachable(service, kb_id: str, *folder_ids: str, live_file: str) -> list[tuple[str, int]]:
    """What still answers for the folders of a deleted subtree: listing them, uploading into them and
    moving a live file (``live_file``) into them must all be 404 (the folder does not exist)."""
    reachable = []
    moved = file_items(service, kb_id)[live_file]["file_id"]
    for folder_id in folder_ids:
        attempts = {
            f"listing the deleted folder {folder_id}": service.call(
                "GET", f"/knowledge-bases/{kb_id}/files", "alice", query={"folder_id": folder_id}
            ),
            f"an upload into the deleted folder {folder_id}": request_upload(
                service, kb_id, "late.md", 7, folder_id=folder_id
            ),
            f"moving {live_file} into the deleted folder {folder_id}": service.call(
                "PATCH", f"/knowledge-bases/{kb_id}/files/{moved}", "alice", body={"folder_id": folder_id}
            ),
        }
        reachable += [
            (what, reply.status) for what, reply in attempts.items() if reply.status != HTTPStatus.NOT_FOUND
        ]
    return reachable


# -- 2. the stateful model --------------------------------------------------------------------------------

# What may go wrong during each kind of step: MemOS answering 50004 for a while (the fault outlives the
# step), or the process dying before or after one adapter call (the crash fires on the next such call,
# in this step or a later one). None of these methods is used by the read paths the invariants call.
Trouble = tuple[str, Any, Any] | None


def _crashes(*targets: Target) -> list[Trouble]:
    return [("crash", target, when) for target in targets for when in ("before", "after")]


def _faults(*endpoints: str) -> list[Trouble]:
    return [("fault", endpoint, times) for endpoint in endpoints for times in (1, 3)]


INGEST_TROUBLE = [
    *_faults(ADD),
    *_crashes(
        (MemosClient, "add_knowledgebase_files"),
        (DynamoContentStore, "update_upload_submitting"),
        (DynamoContentStore, "put_file_for_upload"),
    ),
]
DELETE_TROUBLE = _crashes(
    (DynamoCleanupStore, "delete_file_with_outbox"),
    (DynamoCleanupStore, "delete_folder_with_outbox"),
    (DynamoCleanupStore, "delete_kb_with_outbox"),
    (DynamoContentStore, "update_upload_rejected"),
    (DynamoCleanupStore, "delete_files_with_part"),
    (DynamoCleanupStore, "delete_folders"),
    (CleanupStateMachine, "start"),
)
CLEANUP_TROUBLE = [
    *_faults(DELETE_FILES, DELETE_KB),
    *_crashes(
        (DynamoCleanupStore, "get_cleanup"),
        (MemosClient, "delete_knowledgebase_files"),
        (MemosClient, "delete_knowledgebase"),
        (UploadStorage, "delete"),
        (UploadStorage, "delete_prefix"),
        (DynamoCleanupStore, "delete_kb_items"),
        (DynamoCleanupStore, "delete_cleanup_parts"),
    ),
]
REPLACE_TROUBLE = [
    *_faults(UPDATE),
    *_crashes(
        (MemosClient, "update_knowledgebase_file"),
        (DynamoContentStore, "update_replacement_submitting"),
        (DynamoContentStore, "put_file_version"),
    ),
]
RECONCILE_TROUBLE = [
    *_faults(DELETE_FILES),
    *_crashes(
        (CleanupStateMachine, "start"),
        (DynamoContentStore, "update_upload_rejected"),
        (DynamoContentStore, "put_file_for_upload"),
        (MemosClient, "delete_knowledgebase_files"),
        (UploadStorage, "delete"),
    ),
]
CRASHABLE: list[Target] = list(
    dict.fromkeys(
        t[1]
        for t in (*INGEST_TROUBLE, *REPLACE_TROUBLE, *DELETE_TROUBLE, *CLEANUP_TROUBLE, *RECONCILE_TROUBLE)
        if t is not None and t[0] == "crash"
    )
)


def trouble(options: list[Trouble]) -> st.SearchStrategy[Trouble]:
    """Nothing, about half of the time; else one of ``options``."""
    return st.one_of(st.none(), st.sampled_from(options))


@dataclass
class ModelKb:
    folders: dict[str, str | None] = field(default_factory=dict)  # folder id -> parent id
    files: dict[str, str | None] = field(default_factory=dict)  # file id -> folder id
    uploads: dict[str, str | None] = field(default_factory=dict)  # upload id -> folder id, not yet a file

    def under(self, folder_id: str) -> set[str]:
        """``folder_id`` and every folder below it."""
        found = {folder_id}
        while more := {f for f, parent in self.folders.items() if parent in found} - found:
            found |= more
        return found


def reset_world(service) -> None:
    """An empty table, bucket, queue and MemOS, so that every example starts from nothing."""
    table = service.stores.table
    for page in table.client.get_paginator("scan").paginate(
        TableName=table.name, ProjectionExpression="PK, SK"
    ):
        for item in page["Items"]:
            table.client.delete_item(TableName=table.name, Key=item)
    s3 = boto3.client("s3", region_name=REGION)
    keys = [{"Key": k} for k in bucket_keys(service)]
    if keys:
        s3.delete_objects(Bucket=service.refs["UploadBucket"], Delete={"Objects": keys, "Quiet": True})
    client = sqs_client()
    for queue in ("UploadQueue", "UploadDeadLetterQueue"):
        while messages := client.receive_message(QueueUrl=service.refs[queue], MaxNumberOfMessages=10).get(
            "Messages", []
        ):
            for message in messages:
                client.delete_message(QueueUrl=service.refs[queue], ReceiptHandle=message["ReceiptHandle"])
    service.memos.emulator.reset()


def test_interleaved_uploads_deletes_faults_crashes_and_reconciles_follow_the_model(service, monkeypatch):
    killer = Killer()
    killer.install(monkeypatch, CRASHABLE)

    class Deletions(RuleBasedStateMachine):
        """Model: which KBs, folders and files are live (ids in creation order, so that the same choices
        pick the same things in every run), which were deleted, and which uploads may still become
        files. Lists are exact for KBs and folders; for files, an upload becomes a file when it first
        shows up in a listing (its outcome may wait for a retry or a reconcile), and then must stay."""

        def __init__(self) -> None:
            super().__init__()
            killer.disarm()
            reset_world(service)
            self.executions, self.schedule = Executions(service), Schedule(service)
            self.kbs: dict[str, ModelKb] = {}
            self.gone_kbs: set[str] = set()
            self.gone_folders: dict[str, str] = {}  # folder id -> its KB
            self.gone_files: set[str] = set()
            self.dead_uploads: set[str] = set()  # uploads into something deleted: never a file
            self.tokens: dict[str, str] = {}  # upload id -> the word only its file contains
            self.run = uuid.uuid4().hex[:6]

        def expect(self, what: Trouble) -> None:
            if what is None:
                return
            kind, target, how = what
            if kind == "fault":
                service.memos.add_fault(target, code=50004, times=how)
            else:
                killer.arm(target, how)

        def upload_into(self, kb_id: str, folder: str | None) -> None:
            token = f"tok{self.run}n{len(self.tokens)}"
            upload_id = upload_bytes(service, kb_id, f"{token}.md", md(token), folder)
            self.kbs[kb_id].uploads[upload_id] = folder
            self.tokens[upload_id] = token

        # -- rules ----------------------------------------------------------------------------------

        @initialize(nested=st.booleans())
        def two_kbs_with_files(self, nested):
            """Two KBs, a folder (maybe with a subfolder) and three files, so that every step has material."""
            first, second = (create_kb(service, name=name) for name in ("kb0", "kb1"))
            self.kbs = {first: ModelKb(), second: ModelKb()}
            top = new_folder(service, first, "top")
            self.kbs[first].folders[top] = None
            where = top
            if nested:
                where = new_folder(service, first, "sub", top)
                self.kbs[first].folders[where] = top
            for kb_id, folder in ((first, None), (first, where), (second, None)):
                self.upload_into(kb_id, folder)
            deliver(service, batch=10)

        @precondition(lambda self: len(self.kbs) < 3)
        @rule()
        def create_kb(self):
            self.kbs[create_kb(service, name=f"kb{len(self.kbs)}")] = ModelKb()

        @precondition(lambda self: self.kbs)
        @rule(data=st.data())
        def create_folder(self, data):
            kb_id = data.draw(st.sampled_from(list(self.kbs)), label="kb")
            kb = self.kbs[kb_id]
            parent = data.draw(st.sampled_from([None, *kb.folders]), label="parent")
            kb.folders[new_folder(service, kb_id, f"d{len(kb.folders)}", parent)] = parent

        @precondition(lambda self: self.kbs)
        @rule(data=st.data(), what=trouble(INGEST_TROUBLE))
        def upload(self, data, what):
            kb_id = data.draw(st.sampled_from(list(self.kbs)), label="kb")
            folder = data.draw(st.sampled_from([None, *self.kbs[kb_id].folders]), label="folder")
            self.upload_into(kb_id, folder)
            self.expect(what)
            deliver(service, until_empty=False)

        @precondition(lambda self: any(kb.files for kb in self.kbs.values()))
        @rule(data=st.data(), what=trouble(REPLACE_TROUBLE))
        def replace_file(self, data, what):
            """A file's next version, with a word of its own; refused while another replace of it is in flight."""
            kb_id = data.draw(st.sampled_from([k for k, kb in self.kbs.items() if kb.files]), label="kb")
            file_id = data.draw(st.sampled_from(list(self.kbs[kb_id].files)), label="file")
            token = f"tok{self.run}n{len(self.tokens)}"
            content = md(token)
            path = f"/knowledge-bases/{kb_id}/files/{file_id}/replacements"
            reply = service.call("POST", path, "alice", body={"size_bytes": len(content)})
            if reply.status == HTTPStatus.CONFLICT:
                assert reply.body["error"]["code"] == "replace_in_progress", reply.body
                return
            assert reply.status == HTTPStatus.CREATED, reply.body
            assert post_file(reply.body, content, "next.md").status_code == HTTPStatus.NO_CONTENT
            self.tokens[reply.body["upload_id"]] = token
            self.expect(what)
            deliver(service, until_empty=False)

        @precondition(lambda self: any(kb.files for kb in self.kbs.values()))
        @rule(data=st.data(), what=trouble(DELETE_TROUBLE))
        def delete_file(self, data, what):
            kb_id = data.draw(st.sampled_from([k for k, kb in self.kbs.items() if kb.files]), label="kb")
            file_id = data.draw(st.sampled_from(list(self.kbs[kb_id].files)), label="file")
            self.expect(what)
            delete(service, f"/knowledge-bases/{kb_id}/files/{file_id}")
            del self.kbs[kb_id].files[file_id]
            self.gone_files.add(file_id)

        @precondition(lambda self: any(kb.folders for kb in self.kbs.values()))
        @rule(data=st.data(), what=trouble(DELETE_TROUBLE))
        def delete_folder(self, data, what):
            kb_id = data.draw(st.sampled_from([k for k, kb in self.kbs.items() if kb.folders]), label="kb")
            kb = self.kbs[kb_id]
            folder_id = data.draw(st.sampled_from(list(kb.folders)), label="folder")
            self.expect(what)
            delete(service, f"/knowledge-bases/{kb_id}/folders/{folder_id}")
            subtree = kb.under(folder_id)
            for gone in subtree:
                del kb.folders[gone]
                self.gone_folders[gone] = kb_id
            for file_id in [i for i, parent in kb.files.items() if parent in subtree]:
                del kb.files[file_id]
                self.gone_files.add(file_id)
            for upload_id in [i for i, parent in kb.uploads.items() if parent in subtree]:
                del kb.uploads[upload_id]
                self.dead_uploads.add(upload_id)
            self.gone_are_gone()

        @precondition(lambda self: self.kbs)
        @rule(data=st.data(), what=trouble(DELETE_TROUBLE))
        def delete_kb(self, data, what):
            kb_id = data.draw(st.sampled_from(list(self.kbs)), label="kb")
            self.expect(what)
            delete(service, f"/knowledge-bases/{kb_id}")
            kb = self.kbs.pop(kb_id)
            self.gone_kbs.add(kb_id)
            self.gone_files |= set(kb.files)
            self.dead_uploads |= set(kb.uploads)
            self.gone_folders.update(dict.fromkeys(kb.folders, kb_id))
            self.gone_are_gone()

        @rule(what=trouble(CLEANUP_TROUBLE))
        def cleanups_run(self, what):
            self.expect(what)
            self.executions.run_started()

        @rule(what=trouble(RECONCILE_TROUBLE))
        def reconcile_runs(self, what):
            self.expect(what)
            self.schedule.reconcile()
            deliver(service, until_empty=False)  # what it handed back to the ingest

        @rule()
        def memos_recovers(self):
            service.memos.clear_faults()

        # -- what must hold after every step ----------------------------------------------------------

        def listing(self, kb_id: str, folder_id: str | None) -> Any:
            query = {"folder_id": folder_id} if folder_id else None
            return service.call("GET", f"/knowledge-bases/{kb_id}/files", "alice", query=query)

        def gone_are_gone(self) -> None:
            for kb_id in self.gone_kbs:
                assert (
                    service.call("GET", f"/knowledge-bases/{kb_id}", "alice").status == HTTPStatus.NOT_FOUND
                )
                assert self.listing(kb_id, None).status == HTTPStatus.NOT_FOUND
            for folder_id, kb_id in self.gone_folders.items():
                if kb_id in self.kbs:
                    assert self.listing(kb_id, folder_id).status == HTTPStatus.NOT_FOUND

        @invariant()
        def nothing_deleted_is_visible_and_nothing_live_is_lost(self):
            assert kb_ids_listed(service) == set(self.kbs)
            recall = service.call("POST", "/recall", "alice", body={"query": "内容"})
            assert recall.status == HTTPStatus.OK, recall.body
            assert recall.body["scope_size"] == len(self.kbs)
            # (a deleted KB or folder that came back would be in these lists: the parent's listing has
            # exactly the live subfolders; ``gone_are_gone`` checks them by id after each delete and at the end)
            for kb_id, kb in self.kbs.items():
                for level in [None, *kb.folders]:
                    reply = self.listing(kb_id, level)
                    assert reply.status == HTTPStatus.OK, reply.body
                    assert {f["id"] for f in reply.body["folders"]} == {
                        f for f, p in kb.folders.items() if p == level
                    }
                    listed = {e["id"]: e for e in reply.body["files"] if e["id"].startswith("fi_")}
                    for file_id, entry in listed.items():
                        assert file_id not in self.gone_files, f"deleted file {file_id} is listed"
                        assert entry["reason"] != GONE_FROM_MEMOS, (
                            f"live file {file_id} is missing from MemOS"
                        )
                        if file_id not in kb.files:  # an upload became a file: adopt it
                            assert entry["upload_id"] in kb.uploads, f"unexpected file {entry}"
                            assert kb.uploads.pop(entry["upload_id"]) == level
                            kb.files[file_id] = level
                    assert {f for f, p in kb.files.items() if p == level} <= set(listed), (
                        "a live file vanished"
                    )

        def teardown(self):
            killer.disarm()
            settle(service, self.executions, self.schedule)
            assert_consistent(service)
            self.nothing_deleted_is_visible_and_nothing_live_is_lost()
            self.gone_are_gone()
            # no upload became two files, nor a file of something deleted
            made = [i["upload_id"] for i in table_items(service) if i["SK"].startswith("FILE#")]
            assert len(made) == len(set(made)), f"an upload became two files: {made}"
            assert not set(made) & self.dead_uploads
            # and every live file answers with the words of its recorded version only: none of a deleted or
            # never recorded file, none of a replaced version or of a replace that failed
            if self.kbs:
                live = [token for upload_id, token in self.tokens.items() if upload_id in made]
                dead = [token for upload_id, token in self.tokens.items() if upload_id not in made]
                problems = recall_problems(service, present=live, absent=dead)
                assert not problems, "\n  ".join(problems)

    run_state_machine_as_test(
        Deletions,
        settings=settings(
            max_examples=15,
            stateful_step_count=10,
            deadline=None,
            derandomize=True,  # fixed examples keep CI time predictable
            # At most ten steps: a failing sequence is short enough to read as found, and shrinking one
            # through moto and the emulator takes minutes.
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
        ),
    )
