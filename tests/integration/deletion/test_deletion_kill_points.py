"""Deletion under crashes, kill point by kill point, and objects arriving late: after reconcile, Memmy,
MemOS and S3 agree again (the evidence and its helper, ``assert_consistent``: test_deletion_model.py's
docstring)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http import HTTPStatus
from typing import Any

import pytest
from botocore.client import BaseClient

from memmy_kb.adapters.dynamodb.cleanups import DynamoCleanupStore
from memmy_kb.adapters.dynamodb.contents import DynamoContentStore
from memmy_kb.adapters.dynamodb.keys import upload_key
from memmy_kb.adapters.dynamodb.table import dump
from memmy_kb.adapters.memos.client import MemosClient
from memmy_kb.adapters.s3 import UploadStorage
from memmy_kb.adapters.stepfunctions import CleanupStateMachine
from memmy_kb.composition import reset_composition
from memmy_kb.domain.engine import MemosUnavailable
from tests.support.aws_runtime import Executions, Schedule, deliver
from tests.support.consistency import (
    assert_consistent,
    bucket_keys,
    consistency_problems,
    settle,
    table_items,
)
from tests.support.crashes import Killer, Target
from tests.support.deletion_flows import (
    ADD,
    UPDATE,
    delete,
    kb_ids_listed,
    md,
    new_folder,
    on_two_backends,
    recall_problems,
    upload_bytes,
)
from tests.support.repair import drop_queued_events
from tests.support.uploads import create_kb, post_file, request_upload

__all__ = ["on_two_backends"]  # the autouse fixture: every case on two MemOS backends


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
    # Given a KB deleted while one of its uploads has its presigned POST and not yet its bytes
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

    # When the cleanup runs, and the bytes arrive just before its table step (ingested as the arrival says)
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
