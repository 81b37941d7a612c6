"""A file replaced in place, through the real queue: the replace's presigned POST on moto -> S3 -> SQS ->
IngestFunction -> MemOS's update on the emulator -> the file at its next version; recall switching from the
old words to the new only once MemOS has processed them (docs/uploads.md, "Replacing a file")."""

from __future__ import annotations

import hashlib
from http import HTTPStatus
from typing import Any

from memmy_kb.domain.knowledge_bases.files import GONE_FROM_MEMOS, VERSION_FAILED
from memmy_kb.domain.uploads.replace_ingest import FILE_GONE
from memmy_kb.records import utc_now
from memmy_local.lambdas.runners import sqs_event
from tests.support.aws import Service
from tests.support.factories import UNCAPPED
from tests.support.iam import record_aws_calls
from tests.support.polling import wait_until
from tests.support.uploads import (
    REGION,
    create_kb,
    drain_ingest,
    get_upload,
    object_exists,
    post_file,
    repository,
    sqs,
    upload,
)

UPDATE = "/update/knowledgebase-file"
V1 = "# 报价单\n\n企业版的价格是每年 penguin 一万元。\n".encode()
V2 = "# 报价单\n\n企业版的价格调整为每年 walrus 两万元。\n".encode()


def uploaded(service: Service, data: bytes = V1, name: str = "报价单.md") -> tuple[str, str]:
    """A KB and its one file, ingested and processed by MemOS: (kb id, file id)."""
    kb_id = create_kb(service)
    upload(service, kb_id, name, data)
    drain_ingest(service)
    [file] = repository(service).query_kb_items(kb_id)[1]
    wait_until(lambda: listed(service, kb_id)["status"] == "available", timeout=20, message="version 1 to be processed")
    return kb_id, file.file_id


def start_replace(service: Service, kb_id: str, file_id: str, data: bytes, **body: Any) -> dict[str, Any]:
    reply = service.call(
        "POST",
        f"/knowledge-bases/{kb_id}/files/{file_id}/replacements",
        "alice",
        body={"size_bytes": len(data), "sha256": hashlib.sha256(data).hexdigest(), **body},
    )
    assert reply.status == HTTPStatus.CREATED, reply.body
    assert post_file(reply.body, data).status_code == HTTPStatus.NO_CONTENT
    ticket: dict[str, Any] = reply.body
    return ticket


def listed(service: Service, kb_id: str) -> dict[str, Any]:
    [entry] = service.call("GET", f"/knowledge-bases/{kb_id}/files", "alice").body["files"]
    return entry  # type: ignore[no-any-return]


def recalls(service: Service, word: str) -> bool:
    reply = service.call("POST", "/recall", "alice", body={"query": word})
    assert reply.status == HTTPStatus.OK, reply.body
    return any(word in item["content"] for item in reply.body["items"])


def test_a_replaced_file_keeps_its_id_and_answers_with_the_old_words_until_the_new_ones_are_processed(service):
    kb_id, file_id = uploaded(service)
    service.memos.pause_processing()

    ticket = start_replace(service, kb_id, file_id, V2, if_version=1)
    drain_ingest(service)

    # recorded at version 2, MemOS still processing it: the old words answer, the new not yet
    entry = listed(service, kb_id)
    assert (entry["id"], entry["version"], entry["status"], entry["name"]) == (file_id, 2, "processing", "报价单.md")
    assert entry["sha256"] == hashlib.sha256(V2).hexdigest()
    assert entry["upload_id"] == ticket["upload_id"]
    assert recalls(service, "penguin")
    assert not recalls(service, "walrus")
    # once MemOS has processed it, only the new words answer
    service.memos.pause_processing(False)
    wait_until(lambda: listed(service, kb_id)["status"] == "available", timeout=20, message="version 2 to be processed")
    assert recalls(service, "walrus")
    assert not recalls(service, "penguin")
    # one file in MemOS and in the table, the replaced version's bytes gone
    [memos_file] = [f for kb in service.memos.state()["knowledge_bases"] for f in kb["files"]]
    assert memos_file["version"] == 2
    assert [f.file_id for f in repository(service).query_kb_items(kb_id)[1]] == [file_id]
    first = next(u for u in repository(service).query_kb_items(kb_id)[2] if u.replaces is None)
    assert not object_exists(service, f"uploads/{kb_id}/{first.upload_id}")
    meta = service.stores.kbs.get_kb(kb_id)
    assert meta is not None
    assert (meta.file_count, meta.bytes_used) == (1, len(V2))


def test_ingesting_a_small_replace_costs_six_aws_calls_and_one_memos_update(service):
    # Round trips counted, not timed (docs/architecture.md, "Uploads and ingest").
    kb_id, file_id = uploaded(service)
    start_replace(service, kb_id, file_id, V2)
    messages = sqs(service).receive_message(
        QueueUrl=service.refs["UploadQueue"], MessageSystemAttributeNames=["All"]
    )["Messages"]
    memos_before = service.memos.state()["calls"]

    with record_aws_calls() as calls:
        result = service.invoke("IngestFunction", sqs_event(messages, service.refs["UploadQueue.Arn"], REGION))

    assert result == {"batchItemFailures": []}
    assert [f"{name}:{operation}" for name, operation, _ in calls] == [
        "dynamodb:GetItem",  # the replace (its file, the version replaced, the file's MemOS id)
        "s3:GetObject",  # the bytes, with the real size and ETag
        "dynamodb:TransactWriteItems",  # hold: the replace held + the growth on META + the file checked
        "dynamodb:TransactWriteItems",  # record: the file's next version + submitted + META + activity
        "s3:DeleteObject",  # the replaced version's object (a small one had no verified copy)
        "dynamodb:PutItem",  # the new version's fingerprints
    ]
    hold, record = (params["TransactItems"] for _, operation, params in calls if operation == "TransactWriteItems")
    assert [next(iter(action)) for action in hold] == ["Update", "Update", "ConditionCheck"]
    assert [next(iter(action)) for action in record] == ["Update", "Update", "ConditionCheck", "Put"]
    memos_after = service.memos.state()["calls"]
    assert {k: v - memos_before.get(k, 0) for k, v in memos_after.items() if v != memos_before.get(k, 0)} == {
        UPDATE: 1
    }


def test_a_version_memos_cannot_process_shows_failed_and_the_previous_one_keeps_answering(service):
    kb_id, file_id = uploaded(service, b"# Price\n\nThe penguin plan.\n", "price.md")
    bad = b"# Price\n\nThe walrus plan.\n"
    start_replace(service, kb_id, file_id, bad)
    # MemOS takes the update, and its processing fails
    original = service.memos.emulator.processor.store.complete_file

    def fails(file_id_: str, excerpts: Any, version: int = 1) -> None:
        service.memos.emulator.processor.store.fail_file(file_id_, "cannot parse", version)

    service.memos.emulator.processor.store.complete_file = fails  # type: ignore[method-assign]
    try:
        drain_ingest(service)
        wait_until(lambda: listed(service, kb_id)["status"] == "failed", timeout=20, message="version 2 to fail")
    finally:
        service.memos.emulator.processor.store.complete_file = original  # type: ignore[method-assign]

    entry = listed(service, kb_id)
    assert (entry["version"], entry["reason"], entry["reason_code"]) == (2, VERSION_FAILED, "engine_failed_version")
    assert recalls(service, "penguin")
    assert not recalls(service, "walrus")


def test_a_file_deleted_while_its_replace_waits_ends_the_replace_and_leaves_nothing(service):
    kb_id, file_id = uploaded(service)
    ticket = start_replace(service, kb_id, file_id, V2)
    assert service.call("DELETE", f"/knowledge-bases/{kb_id}/files/{file_id}", "alice").status == HTTPStatus.ACCEPTED

    drain_ingest(service)

    replace = get_upload(service, kb_id, ticket["upload_id"])
    assert (replace.state, replace.reason) == ("rejected", FILE_GONE)
    assert not object_exists(service, f"uploads/{kb_id}/{ticket['upload_id']}")
    assert service.memos.calls(UPDATE) == 0


def test_a_file_memos_no_longer_holds_ends_the_replace_with_its_reason_and_keeps_the_record(service):
    kb_id, file_id = uploaded(service)
    file = repository(service).get_file(kb_id, file_id)
    assert file is not None
    service.memos.emulator.store.delete_files("memmy", [file.memos_file_id])
    ticket = start_replace(service, kb_id, file_id, V2)

    drain_ingest(service)

    replace = get_upload(service, kb_id, ticket["upload_id"])
    assert (replace.state, replace.reason) == ("rejected", GONE_FROM_MEMOS)
    assert repository(service).get_file(kb_id, file_id) == file  # still version 1, unmarked
    entry = listed(service, kb_id)
    assert entry["replacement"]["status"] == "failed"
    assert entry["replacement"]["reason_code"] == "engine_lost_file"


def test_the_owner_dismisses_a_replace_not_yet_sent_and_its_late_bytes_are_dropped_not_sent(service):
    # A replace whose POST is still valid would hold the file for ten minutes: the owner (or the folder
    # sync) dismisses it with the same DELETE as a failed upload, and may replace the file again at once.
    kb_id, file_id = uploaded(service)
    service.call("PUT", "/me", "bob")
    assert service.call("POST", f"/knowledge-bases/{kb_id}/members", "alice", body={"identifier": "bob"}).status == 201
    path = f"/knowledge-bases/{kb_id}/files/{file_id}/replacements"
    ticket = service.call("POST", path, "alice", body={"size_bytes": len(V2)}).body
    dismiss = f"/knowledge-bases/{kb_id}/uploads/{ticket['upload_id']}"

    assert service.call("DELETE", dismiss, "bob").status == HTTPStatus.FORBIDDEN
    assert service.call("DELETE", dismiss, "alice").status == HTTPStatus.NO_CONTENT

    assert repository(service).get_file(kb_id, file_id).replacing is None  # type: ignore[union-attr]
    assert listed(service, kb_id)["replacement"] is None
    # the first ticket's bytes, sent after all, are dropped unsent; a new replace runs as usual
    assert post_file(ticket, V2).status_code == HTTPStatus.NO_CONTENT
    drain_ingest(service)
    assert not object_exists(service, f"uploads/{kb_id}/{ticket['upload_id']}")
    assert UPDATE not in service.memos.state()["calls"]
    assert listed(service, kb_id)["version"] == 1
    second = start_replace(service, kb_id, file_id, V2)
    drain_ingest(service)
    assert (listed(service, kb_id)["version"], listed(service, kb_id)["upload_id"]) == (2, second["upload_id"])


def test_a_replace_already_handed_to_memos_cannot_be_dismissed(service):
    kb_id, file_id = uploaded(service)
    path = f"/knowledge-bases/{kb_id}/files/{file_id}/replacements"
    ticket = service.call("POST", path, "alice", body={"size_bytes": len(V2)}).body
    repository(service).update_replacement_submitting(  # held by an ingest that is sending it
        get_upload(service, kb_id, ticket["upload_id"]),
        attempt_id="att-1", now=utc_now(), keep_until=2_000_000_000, sha256=None, capacity=UNCAPPED,
    )

    reply = service.call("DELETE", f"/knowledge-bases/{kb_id}/uploads/{ticket['upload_id']}", "alice")

    assert (reply.status, reply.body["error"]["code"]) == (HTTPStatus.CONFLICT, "upload_not_failed")
    assert repository(service).get_file(kb_id, file_id).replacing == ticket["upload_id"]  # type: ignore[union-attr]
