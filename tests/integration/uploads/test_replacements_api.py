"""POST /knowledge-bases/{kb_id}/files/{file_id}/replacements through the real handler, on moto: a file's
next version issued like an upload, and each refusal (docs/uploads.md, "Replacing a file")."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from http import HTTPStatus
from typing import Any

import pytest

from memmy_kb.adapters.dynamodb.keys import upload_key
from memmy_kb.composition import reset_composition
from memmy_kb.records import FileRecord, utc_now
from tests.support.aws import Reply, Service
from tests.support.iam import record_aws_calls
from tests.support.uploads import create_kb, drain_ingest, get_upload, repository, upload

V1 = "# 价目表\n\n企业版每年一万元。\n".encode()
V2 = "# 价目表\n\n企业版每年两万元，含培训。\n".encode()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def replace(service: Service, kb_id: str, file_id: str, user: str = "alice", **body: Any) -> Reply:
    return service.call(
        "POST", f"/knowledge-bases/{kb_id}/files/{file_id}/replacements", user, body={"size_bytes": 10, **body}
    )


def a_file(service: Service, name: str = "价目表.md", data: bytes = V1) -> tuple[str, FileRecord]:
    """A KB with one file uploaded and ingested (version 1, its hash recorded)."""
    kb_id = create_kb(service)
    upload(service, kb_id, name, data)
    drain_ingest(service)
    [file] = repository(service).query_kb_items(kb_id)[1]
    return kb_id, file


def test_the_owner_gets_a_presigned_post_for_the_files_next_version_and_the_file_is_marked(service):
    kb_id, file = a_file(service)

    reply = replace(service, kb_id, file.file_id, size_bytes=len(V2), sha256=sha(V2), if_version=1)

    assert reply.status == HTTPStatus.CREATED, reply.body
    ticket = reply.body
    assert (ticket["status"], ticket["file_id"], ticket["replaces_version"]) == ("issued", file.file_id, 1)
    assert ticket["fields"]["key"] == f"uploads/{kb_id}/{ticket['upload_id']}"
    assert ticket["fields"]["Content-Type"] == "text/markdown"  # the file's own name decides
    pending = get_upload(service, kb_id, ticket["upload_id"])
    assert (pending.replaces, pending.if_version, pending.replaced_size, pending.filename, pending.folder_id) == (
        file.file_id, 1, len(V1), "价目表.md", None,
    )
    assert pending.sha256 == sha(V2)
    assert repository(service).get_file(kb_id, file.file_id).replacing == ticket["upload_id"]  # type: ignore[union-attr]


def test_a_second_replace_while_one_is_in_flight_is_409_replace_in_progress(service):
    kb_id, file = a_file(service)
    assert replace(service, kb_id, file.file_id).status == HTTPStatus.CREATED

    again = replace(service, kb_id, file.file_id)

    assert (again.status, again.body["error"]["code"]) == (HTTPStatus.CONFLICT, "replace_in_progress")


def test_a_stale_version_is_409_version_conflict_naming_the_current_one(service):
    kb_id, file = a_file(service)

    reply = replace(service, kb_id, file.file_id, if_version=2)

    assert (reply.status, reply.body["error"]["code"]) == (HTTPStatus.CONFLICT, "version_conflict")
    assert reply.body["error"]["details"] == {"version": 1}
    assert repository(service).query_kb_items(kb_id)[2][0].replaces is None  # only the first upload


def test_the_current_versions_bytes_are_unchanged_and_nothing_is_written(service):
    kb_id, file = a_file(service)

    with record_aws_calls() as calls:
        reply = replace(service, kb_id, file.file_id, size_bytes=len(V1), sha256=sha(V1).upper(), if_version=1)

    assert reply.status == HTTPStatus.OK, reply.body
    assert reply.body == {"status": "unchanged", "file_id": file.file_id, "version": 1}
    assert [f"{name}:{op}" for name, op, _ in calls] == ["dynamodb:GetItem", "dynamodb:GetItem"]  # grant, FILE
    assert repository(service).get_file(kb_id, file.file_id).replacing is None  # type: ignore[union-attr]
    assert len(repository(service).query_kb_items(kb_id)[2]) == 1


def test_issuing_a_replace_costs_two_reads_and_one_transaction(service):
    # Round trips counted, not timed (docs/architecture.md, "Uploads and ingest").
    kb_id, file = a_file(service)

    with record_aws_calls() as calls:
        reply = replace(service, kb_id, file.file_id, size_bytes=len(V2), if_version=1)

    assert reply.status == HTTPStatus.CREATED, reply.body
    assert [f"{name}:{op}" for name, op, _ in calls] == [
        "dynamodb:GetItem",  # the caller's grant (owner check, the KB's MemOS id)
        "dynamodb:GetItem",  # the file (its version, hash, name, size and replace in flight)
        "dynamodb:TransactWriteItems",  # the replace + the file marked + META's owner and room
    ]
    [transaction] = [params["TransactItems"] for _, op, params in calls if op == "TransactWriteItems"]
    assert [next(iter(action)) for action in transaction] == ["Put", "Update", "ConditionCheck"]


@pytest.mark.parametrize(
    ("file_id", "body", "status", "code"),
    [
        ("fi_0000000000000000", {}, HTTPStatus.NOT_FOUND, "file_not_found"),
        (None, {"size_bytes": 100 * 1024 * 1024 + 1}, HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "file_too_large"),
        (None, {"size_bytes": 0}, HTTPStatus.UNPROCESSABLE_ENTITY, "validation_error"),
        (None, {"if_version": 0}, HTTPStatus.UNPROCESSABLE_ENTITY, "validation_error"),
        (None, {"sha256": "nothex"}, HTTPStatus.UNPROCESSABLE_ENTITY, "validation_error"),
        (None, {"content_type": "application/pdf"}, HTTPStatus.UNPROCESSABLE_ENTITY, "content_type_mismatch"),
    ],
    ids=["no-such-file", "too-large", "empty", "version-0", "bad-hash", "type-of-another-format"],
)
def test_bad_replaces_are_refused_with_their_code_and_nothing_written(service, file_id, body, status, code):
    kb_id, file = a_file(service)

    reply = replace(service, kb_id, file_id or file.file_id, **body)

    assert (reply.status, reply.body["error"]["code"]) == (status, code), reply.body
    assert repository(service).get_file(kb_id, file.file_id).replacing is None  # type: ignore[union-attr]


def test_a_growth_the_kb_has_no_room_for_is_413_and_a_shrink_always_fits(service, monkeypatch):
    kb_id, file = a_file(service)
    monkeypatch.setenv("MAX_BYTES_PER_KB", str(len(V1) + 5))
    reset_composition()

    too_big = replace(service, kb_id, file.file_id, size_bytes=len(V1) + 6)
    fits = replace(service, kb_id, file.file_id, size_bytes=len(V1) + 5)

    assert (too_big.status, too_big.body["error"]["code"]) == (
        HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "kb_storage_limit_reached",
    )
    assert fits.status == HTTPStatus.CREATED, fits.body


def test_a_replace_whose_post_expired_unused_gives_way_to_a_new_one(service):
    kb_id, file = a_file(service)
    first = replace(service, kb_id, file.file_id).body["upload_id"]
    long_ago = (utc_now() - timedelta(hours=2)).isoformat()
    table = service.stores.table
    table.client.update_item(
        TableName=table.name,
        Key={k: {"S": v} for k, v in upload_key(kb_id, first).items()},
        UpdateExpression="SET created_at = :then",
        ExpressionAttributeValues={":then": {"S": long_ago}},
    )

    second = replace(service, kb_id, file.file_id)

    assert second.status == HTTPStatus.CREATED, second.body
    assert repository(service).get_file(kb_id, file.file_id).replacing == second.body["upload_id"]  # type: ignore[union-attr]


def test_an_idempotency_key_replays_the_same_ticket(service):
    kb_id, file = a_file(service)
    headers = {"Idempotency-Key": "replace-1"}
    path = f"/knowledge-bases/{kb_id}/files/{file.file_id}/replacements"

    first = service.call("POST", path, "alice", body={"size_bytes": 10}, headers=headers)
    again = service.call("POST", path, "alice", body={"size_bytes": 10}, headers=headers)

    assert first.status == again.status == HTTPStatus.CREATED
    assert again.body["upload_id"] == first.body["upload_id"]


def test_one_file_reads_with_its_version_and_its_replace_in_flight_for_owner_and_reader(service):
    kb_id, file = a_file(service)
    service.call("PUT", "/me", "bob")
    assert service.call("POST", f"/knowledge-bases/{kb_id}/members", "alice", body={"identifier": "bob"}).status == 201
    upload_id = replace(service, kb_id, file.file_id).body["upload_id"]

    for user in ("alice", "bob"):
        reply = service.call("GET", f"/knowledge-bases/{kb_id}/files/{file.file_id}", user)
        assert reply.status == HTTPStatus.OK, reply.body
        assert (reply.body["id"], reply.body["version"], reply.body["sha256"]) == (file.file_id, 1, sha(V1))
        assert reply.body["replacement"] == {
            "upload_id": upload_id, "status": "uploading", "reason": None, "reason_code": None
        }
    missing = service.call("GET", f"/knowledge-bases/{kb_id}/files/fi_0000000000000000", "alice")
    assert (missing.status, missing.body["error"]["code"]) == (HTTPStatus.NOT_FOUND, "file_not_found")
