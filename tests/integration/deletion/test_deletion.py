"""Deletion and repair through the real handlers on moto and the MemOS emulator.

The delete function makes a KB, file or folder invisible at once (one transaction with its outbox item);
the cleanup function (the state machine's task, invoked here as Step Functions would) cleans up MemOS, S3
and the table; the reconciler restarts what did not finish and repairs what a crash leaves behind. The ASL
itself runs through moto's interpreter in tests/integration/local/test_local_stack_stepfunctions.py. The rules
alone (retries of a racing share, error mapping, interrupted sweeps, creates of unknown outcome) are unit
tests on the fakes in tests/unit/domain; these check them through the handlers and the adapters.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from http import HTTPStatus
from typing import Any

import boto3
import pytest

from memmy_kb import composition as deps
from memmy_kb.adapters.dynamodb.cleanups import DynamoCleanupStore
from memmy_kb.adapters.dynamodb.keys import cleanup_key, kb_key
from memmy_kb.adapters.dynamodb.table import dump
from memmy_kb.composition import reset_composition
from memmy_kb.domain.deletion.cleanup import CleanupFailed
from memmy_kb.domain.deletion.delete import FOLDER_GONE
from memmy_kb.records import CleanupRecord, utc_now
from tests.support import seed
from tests.support.events import claims_for
from tests.support.factories import UNCAPPED
from tests.support.iam import record_aws_calls
from tests.support.polling import wait_until
from tests.support.repair import LATER, drop_queued_events, reconciler
from tests.support.uploads import (
    REGION,
    create_kb,
    drain_ingest,
    get_upload,
    object_exists,
    post_file,
    request_upload,
    s3,
    upload,
)

ADD = "/add/knowledgebase-file"
DELETE_FILES = "/delete/knowledgebase-file"


def memos_kbs(service) -> dict[str, list[str]]:
    """MemOS KB id -> its file ids, as the emulator holds them."""
    return {kb["id"]: [f["id"] for f in kb["files"]] for kb in service.memos.state()["knowledge_bases"]}


def cleanups(service) -> DynamoCleanupStore:
    return DynamoCleanupStore(service.stores.table)


def run_cleanup(service, cleanup_id: str) -> bool:
    """What the state machine's cleanup task (its ``CleanUp`` state) does: call the cleanup function until it says done."""
    return any(service.invoke("CleanupFunction", {"cleanup_id": cleanup_id})["done"] for _ in range(10))


def kb_partition(service, kb_id: str) -> list[dict[str, Any]]:
    client = boto3.client("dynamodb", region_name=REGION)
    return client.query(
        TableName=service.refs["Table"],
        KeyConditionExpression="PK = :pk",
        ExpressionAttributeValues={":pk": {"S": f"KB#{kb_id}"}},
        ConsistentRead=True,
    )["Items"]


def executions(service, cleanup_id: str) -> list[str]:
    """Names of the executions started for ``cleanup_id`` (moto keeps other tests' executions too)."""
    client = boto3.client("stepfunctions", region_name=REGION)
    listed = client.list_executions(stateMachineArn=service.refs["CleanupStateMachine"])["executions"]
    return sorted(e["name"] for e in listed if e["name"].startswith(cleanup_id))


def shared_kb(service) -> tuple[str, str]:
    for user in ("alice", "bob"):
        service.call("PUT", "/me", claims=claims_for(user, name=user.title()))
    kb_id = create_kb(service)
    assert service.call("POST", f"/knowledge-bases/{kb_id}/members", "alice", body={"identifier": "bob"}).status == 201
    file_id = seed.add_file(service, kb_id, "alice", "路线图.md", "# 路线图\n第三季度发布知识库共享。".encode())
    return kb_id, file_id


# -- deleting a KB ---------------------------------------------------------------------------------


def test_a_deleted_kb_leaves_every_list_and_recall_at_once_and_the_cleanup_empties_memos_s3_and_the_table(service):
    kb_id, _ = shared_kb(service)
    memos_kb_id = service.stores.kbs.get_kb(kb_id).memos_kb_id
    upload_id = upload(service, kb_id, "a.md", b"# hello")  # an object in S3, not yet ingested

    reply = service.call("DELETE", f"/knowledge-bases/{kb_id}", "alice")

    # Then, before any cleanup ran: gone for the owner and the reader, in lists and in recall
    assert reply.status == HTTPStatus.ACCEPTED
    cleanup_id = reply.body["cleanup_id"]
    for user in ("alice", "bob"):
        assert service.call("GET", "/knowledge-bases", user).body["items"] == []
        assert service.call("GET", f"/knowledge-bases/{kb_id}", user).status == HTTPStatus.NOT_FOUND
        recall = service.call("POST", "/recall", user, body={"query": "知识库共享"})
        assert (recall.body["scope_size"], recall.body["items"]) == (0, [])
    assert service.stores.kbs.get_grant("bob", kb_id) is None
    head, _ = cleanups(service).get_cleanup(cleanup_id)
    assert (head.target, head.kb_id, head.memos_kb_id, head.state) == ("kb", kb_id, memos_kb_id, "pending")
    assert executions(service, cleanup_id) == [cleanup_id]  # started under the cleanup id

    # When the state machine's task runs
    assert run_cleanup(service, cleanup_id)

    # Then MemOS holds neither the KB nor its files, S3 none of its objects, the table none of its items
    assert memos_kb_id not in memos_kbs(service)
    assert not object_exists(service, f"uploads/{kb_id}/")
    assert kb_partition(service, kb_id) == []
    # And an upload event arriving afterwards deletes its bytes instead of leaving them
    drain_ingest(service)
    assert not object_exists(service, f"uploads/{kb_id}/{upload_id}")
    assert service.memos.calls(ADD) == 1  # only the seeded file ever reached MemOS


def test_a_cleanup_whose_start_failed_is_still_accepted_and_the_reconciler_starts_it(service):
    kb_id, _ = shared_kb(service)

    class Unreachable:
        def start(self, *args: Any) -> None:
            raise ConnectionError("Step Functions unreachable")

    # The delete route's executions cannot be started; the reconciler's (built by the factory) can.
    service.override(deps.get_cleanup_executions, Unreachable)

    reply = service.call("DELETE", f"/knowledge-bases/{kb_id}", "alice")

    assert reply.status == HTTPStatus.ACCEPTED
    cleanup_id = reply.body["cleanup_id"]
    assert executions(service, cleanup_id) == []
    report = reconciler(service).run()
    assert report.counts["CleanupRestarted"] == 1
    assert executions(service, cleanup_id) == [f"{cleanup_id}-2"]
    head, _ = cleanups(service).get_cleanup(cleanup_id)
    assert head.attempts == 2
    # Not again until its backoff has passed
    assert "CleanupRestarted" not in reconciler(service).run().counts


# -- deleting files and folders ----------------------------------------------------------------------


def test_a_deleted_file_leaves_the_list_at_once_and_its_memos_file_and_objects_go_in_the_background(service):
    kb_id = create_kb(service)
    keep = seed.add_file(service, kb_id, "alice", "keep.md", b"# keep")
    upload_id = upload(service, kb_id, "gone.md", b"# gone")
    drain_ingest(service)
    listing = service.call("GET", f"/knowledge-bases/{kb_id}/files", "alice").body["files"]
    gone = next(f for f in listing if f["name"] == "gone.md")
    memos_id = service.stores.contents.get_file(kb_id, gone["id"]).memos_file_id

    reply = service.call("DELETE", f"/knowledge-bases/{kb_id}/files/{gone['id']}", "alice")

    assert reply.status == HTTPStatus.ACCEPTED
    assert [f["id"] for f in service.call("GET", f"/knowledge-bases/{kb_id}/files", "alice").body["files"]] == [keep]
    assert service.call("DELETE", f"/knowledge-bases/{kb_id}/files/{gone['id']}", "alice").status == 404
    assert run_cleanup(service, reply.body["cleanup_id"])
    memos_kb_id = service.stores.kbs.get_kb(kb_id).memos_kb_id
    assert memos_id not in memos_kbs(service)[memos_kb_id]
    assert len(memos_kbs(service)[memos_kb_id]) == 1
    assert not object_exists(service, f"uploads/{kb_id}/{upload_id}")


def test_a_deleted_folder_takes_its_subtree_and_rejects_uploads_still_in_flight_into_it(service):
    kb_id = create_kb(service)
    top = service.call("POST", f"/knowledge-bases/{kb_id}/folders", "alice", body={"name": "top"}).body["id"]
    sub = service.call(
        "POST", f"/knowledge-bases/{kb_id}/folders", "alice", body={"name": "sub", "parent_id": top}
    ).body["id"]
    other = service.call("POST", f"/knowledge-bases/{kb_id}/folders", "alice", body={"name": "other"}).body["id"]
    in_top = seed.add_file(service, kb_id, "alice", "a.md", b"# a", folder_id=top)
    in_sub = seed.add_file(service, kb_id, "alice", "b.md", b"# b", folder_id=sub)
    kept = seed.add_file(service, kb_id, "alice", "c.md", b"# c", folder_id=other)
    ticket = request_upload(service, kb_id, "late.md", 7, folder_id=sub).body
    assert post_file(ticket, b"# later").status_code == 204

    reply = service.call("DELETE", f"/knowledge-bases/{kb_id}/folders/{top}", "alice")

    assert reply.status == HTTPStatus.ACCEPTED
    folders, files, _ = service.stores.contents.query_kb_items(kb_id)
    assert [f.folder_id for f in folders] == [other]
    assert [f.file_id for f in files] == [kept]
    late = get_upload(service, kb_id, ticket["upload_id"])
    assert (late.state, late.reason) == ("rejected", FOLDER_GONE)
    listing = service.call("GET", f"/knowledge-bases/{kb_id}/files", "alice").body
    assert [f["id"] for f in listing["folders"]] == [other]
    # When the cleanup runs, the subtree's MemOS files and the rejected upload's bytes are gone
    assert run_cleanup(service, reply.body["cleanup_id"])
    memos_kb_id = service.stores.kbs.get_kb(kb_id).memos_kb_id
    assert memos_kbs(service)[memos_kb_id] == [service.stores.contents.get_file(kb_id, kept).memos_file_id]
    assert not object_exists(service, f"uploads/{kb_id}/{ticket['upload_id']}")
    assert cleanups(service).get_cleanup(reply.body["cleanup_id"])[1] == []  # parts cleaned up
    drain_ingest(service)
    assert service.memos.calls(ADD) == 3  # the late upload never reached MemOS
    assert {in_top, in_sub} & {f.file_id for f in service.stores.contents.query_kb_items(kb_id)[1]} == set()


# -- the cleanup's failures --------------------------------------------------------------------------


def test_memos_refusing_the_key_fails_the_round_for_the_catch(service):
    kb_id, _ = shared_kb(service)
    cleanup_id = service.call("DELETE", f"/knowledge-bases/{kb_id}", "alice").body["cleanup_id"]
    service.memos.add_fault(DELETE_FILES, code=40132)

    with pytest.raises(CleanupFailed):
        service.invoke("CleanupFunction", {"cleanup_id": cleanup_id})


def test_a_cleanup_whose_item_is_gone_is_done(service):
    assert service.invoke("CleanupFunction", {"cleanup_id": "cl_000000000000000000000000"}) == {"done": True}


# -- the reconciler ------------------------------------------------------------------------------------


def test_the_scheduled_reconcile_restarts_a_failed_cleanup_with_a_new_execution(service):
    now = utc_now()
    failed = CleanupRecord(
        cleanup_id="cl_failed", target="files", kb_id="kb_x", memos_kb_id="m", owner_id="alice",
        state="failed", attempts=3, created_at=now - LATER, next_attempt_at=now - timedelta(minutes=1),
        last_error="CleanupFailed",
    )
    item = {**cleanup_key("cl_failed"), "GSI2PK": "CLEANUP#failed", "GSI2SK": failed.next_attempt_at.isoformat(), **failed.model_dump()}
    service.stores.table.client.put_item(TableName=service.refs["Table"], Item=dump(item))

    counts = service.invoke("ReconcileFunction", {"source": "aws.scheduler"})

    assert counts["CleanupRestarted"] == 1
    assert executions(service, "cl_failed") == ["cl_failed-4"]
    head, _ = cleanups(service).get_cleanup("cl_failed")
    assert (head.state, head.attempts) == ("pending", 4)


def test_the_scheduled_reconcile_sweeps_an_object_that_arrived_after_its_kbs_cleanup(service):
    # Given an upload issued before its KB was deleted, whose bytes arrive after the whole cleanup ran
    # and whose event never reaches the ingest
    kb_id = create_kb(service)
    ticket = request_upload(service, kb_id, "late.md", len(b"# late"))
    live_kb = create_kb(service)
    in_flight = upload(service, live_kb, "b.md", b"# in flight")  # pending: never swept
    reply = service.call("DELETE", f"/knowledge-bases/{kb_id}", "alice")
    assert run_cleanup(service, reply.body["cleanup_id"])
    assert post_file(ticket.body, b"# late", "late.md").status_code == 204
    drop_queued_events(service)
    late = f"uploads/{kb_id}/{ticket.body['upload_id']}"
    assert object_exists(service, late)

    counts = service.invoke("ReconcileFunction", {"source": "aws.scheduler"})

    assert counts["UploadObjectsRemoved"] == 1
    assert not object_exists(service, late)
    assert object_exists(service, f"uploads/{live_kb}/{in_flight}")


def test_an_upload_whose_add_outcome_was_unknown_is_recorded_when_memos_has_it(service, monkeypatch):
    monkeypatch.setenv("MEMOS_TIMEOUT_SECONDS", "0.3")
    reset_composition()
    kb_id = create_kb(service)
    upload_id = upload(service, kb_id, "a.md", b"# hello")
    service.memos.add_fault(ADD, latency_ms=1000, times=1)
    drain_ingest(service)
    assert get_upload(service, kb_id, upload_id).state == "submitting"
    wait_until(lambda: sum(map(len, memos_kbs(service).values())) == 1, timeout=10, message="MemOS to store it")
    monkeypatch.delenv("MEMOS_TIMEOUT_SECONDS")
    reset_composition()

    report = reconciler(service).run()

    assert report.counts.get("UploadResolvedSubmitted") == 1
    stored = get_upload(service, kb_id, upload_id)
    (file,) = service.stores.contents.query_kb_items(kb_id)[1]
    assert (stored.state, stored.memos_file_id) == ("submitted", file.memos_file_id)
    assert service.memos.calls(ADD) == 1  # never added twice
    assert "ResidueFound" not in report.counts


def test_an_upload_whose_add_never_reached_memos_is_handed_to_the_ingest_again(service):
    kb_id = create_kb(service)
    upload_id = upload(service, kb_id, "a.md", b"# hello")
    drop_queued_events(service)  # the event was consumed...
    service.stores.contents.update_upload_submitting(  # ...by an ingest that died before MemOS answered
        kb_id, upload_id, attempt_id="dead", now=utc_now(), keep_until=2_000_000_000, owner_id="alice", size=0, capacity=UNCAPPED
    )

    report = reconciler(service).run()

    assert report.counts.get("UploadRequeued") == 1
    assert get_upload(service, kb_id, upload_id).state == "pending"
    drain_ingest(service)
    assert get_upload(service, kb_id, upload_id).state == "submitted"
    assert service.memos.calls(ADD) == 1


def test_pending_uploads_past_their_post_expire_with_their_bytes(service):
    kb_id = create_kb(service)
    ticket = request_upload(service, kb_id, "a.md", 7).body
    assert post_file(ticket, b"# later").status_code == 204
    drop_queued_events(service)  # its event was lost

    assert "UploadExpired" not in reconciler(service, later=timedelta(0)).run().counts
    report = reconciler(service, later=timedelta(hours=2)).run()

    assert report.counts.get("UploadExpired") == 1
    assert get_upload(service, kb_id, ticket["upload_id"]).state == "expired"
    assert not object_exists(service, f"uploads/{kb_id}/{ticket['upload_id']}")
    # and the listing no longer shows it as uploading
    assert service.call("GET", f"/knowledge-bases/{kb_id}/files", "alice").body["files"] == []


def test_memos_files_nothing_references_are_residue_and_removed(service):
    kb_id = create_kb(service)
    kept = seed.add_file(service, kb_id, "alice", "keep.md", b"# keep")
    memos_kb_id = service.stores.kbs.get_kb(kb_id).memos_kb_id
    seed.add_file(service, kb_id, "alice", "orphan.md", b"# orphan")
    orphan = next(f for f in service.stores.contents.query_kb_items(kb_id)[1] if f.file_id != kept)
    boto3.resource("dynamodb", region_name=REGION).Table(service.refs["Table"]).delete_item(
        Key={"PK": f"KB#{kb_id}", "SK": f"FILE#{orphan.file_id}"}
    )

    assert "ResidueFound" not in reconciler(service, later=timedelta(0)).run().counts  # too young
    report = reconciler(service).run()

    assert (report.counts.get("ResidueFound"), report.counts.get("ResidueRemoved")) == (1, 1)
    assert memos_kbs(service)[memos_kb_id] == [service.stores.contents.get_file(kb_id, kept).memos_file_id]


def test_a_keyed_create_whose_memos_outcome_is_unknown_keeps_its_intent_and_frees_the_key(service, monkeypatch):
    # The Idempotency-Key record rides in the intent's transaction; releasing it must not take the intent.
    monkeypatch.setenv("MEMOS_TIMEOUT_SECONDS", "0.3")
    reset_composition()
    service.memos.add_fault("/create/knowledgebase", latency_ms=1000, times=5)
    keyed = {"Idempotency-Key": "k-1"}
    reply = service.call("POST", "/knowledge-bases", "alice", body={"name": "x"}, headers=keyed)
    assert reply.status == HTTPStatus.SERVICE_UNAVAILABLE
    monkeypatch.delenv("MEMOS_TIMEOUT_SECONDS")
    reset_composition()

    # Then the same key may be used again at once (a new create), and the lost one is still reported
    assert service.call("POST", "/knowledge-bases", "alice", body={"name": "x"}, headers=keyed).status == 201
    assert reconciler(service).run().counts.get("KbCreateOutcomeUnknown") == 1


def test_a_successful_create_leaves_no_intent(service):
    create_kb(service)
    assert "KbCreateOutcomeUnknown" not in reconciler(service).run().counts


def test_meta_keeps_its_readers_for_the_delete(service):
    kb_id, _ = shared_kb(service)
    item = service.stores.table.get(kb_key(kb_id))
    assert (item["readers"], item["member_version"]) == ({"bob"}, 1)
    assert service.call("DELETE", f"/knowledge-bases/{kb_id}/members/bob", "alice").status == 204
    item = service.stores.table.get(kb_key(kb_id))
    assert ("readers" not in item, item["member_version"]) == (True, 2)
    assert s3(service) is not None


def test_two_reconcile_runs_resolving_one_upload_record_it_once_and_keep_its_memos_file(service, monkeypatch):
    monkeypatch.setenv("MEMOS_TIMEOUT_SECONDS", "0.3")
    reset_composition()
    kb_id = create_kb(service)
    upload_id = upload(service, kb_id, "a.md", b"# hello")
    service.memos.add_fault(ADD, latency_ms=1000, times=1)
    drain_ingest(service)
    wait_until(lambda: sum(map(len, memos_kbs(service).values())) == 1, timeout=10, message="MemOS to store it")
    monkeypatch.delenv("MEMOS_TIMEOUT_SECONDS")
    reset_composition()
    # Given a second run that read the upload as submitting just before the first one recorded it
    stale = get_upload(service, kb_id, upload_id)
    first = reconciler(service).run()
    second = reconciler(service)
    real_get_upload = second.contents.get_upload
    reads = iter([stale])
    monkeypatch.setattr(second.contents, "get_upload", lambda *ids: next(reads, None) or real_get_upload(*ids))
    second._resolve(stale)  # the race's second half, driven directly

    # Then the file is recorded once, and MemOS still holds the file it points to
    assert first.counts.get("UploadResolvedSubmitted") == 1
    (file,) = service.stores.contents.query_kb_items(kb_id)[1]
    memos_kb_id = service.stores.kbs.get_kb(kb_id).memos_kb_id
    assert memos_kbs(service)[memos_kb_id] == [file.memos_file_id]
    assert service.memos.calls(DELETE_FILES) == 0


def aws_calls_of(action: Callable[[], Any]) -> list[str]:
    with record_aws_calls() as calls:
        action()
    return [f"{service}:{operation}" for service, operation, _ in calls]


def test_deleting_costs_a_fixed_few_calls_and_never_waits_for_memos(service):
    # Round trips counted, not timed: a change that adds a call fails here.
    kb_id, file_id = shared_kb(service)
    folder_id = service.call("POST", f"/knowledge-bases/{kb_id}/folders", "alice", body={"name": "f"}).body["id"]
    memos_calls = sum(service.memos.calls(e) for e in (DELETE_FILES, "/delete/knowledgebase"))
    reads, write, start = "dynamodb:GetItem", "dynamodb:TransactWriteItems", "stepfunctions:StartExecution"

    assert aws_calls_of(lambda: service.call("DELETE", f"/knowledge-bases/{kb_id}/files/{file_id}", "alice")) == [
        reads, reads, write, start,  # grant, file; FILE + outbox; the execution
    ]
    assert aws_calls_of(
        lambda: service.call("DELETE", f"/knowledge-bases/{kb_id}/folders/{folder_id}", "alice")
    ) == [
        reads, reads, write, "dynamodb:Query", "dynamodb:Query", start,
    ]  # ...+ one sweep pass finding nothing left (the KB's items before and after its fingerprints)
    assert aws_calls_of(lambda: service.call("DELETE", f"/knowledge-bases/{kb_id}", "alice")) == [
        reads, reads, write, start,  # grant, META (with its readers); META + 2 grants + outbox; the execution
    ]
    assert sum(service.memos.calls(e) for e in (DELETE_FILES, "/delete/knowledgebase")) == memos_calls
