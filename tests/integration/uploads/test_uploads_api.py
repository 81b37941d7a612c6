"""POST /knowledge-bases/{kb_id}/uploads through the real handler, on moto (who may, what is validated)."""

from __future__ import annotations

import base64
import json
import unicodedata
from http import HTTPStatus

import pytest

from memmy_kb.domain.knowledge_bases.sibling_names import NAME_TAKEN
from memmy_kb.records import FolderRecord, utc_now
from tests.support.uploads import (
    create_kb,
    drain_ingest,
    get_upload,
    post_file,
    raw_upload_item,
    repository,
    request_upload,
    sqs,
)

MB = 1024 * 1024


def policy_of(ticket: dict) -> dict:
    return json.loads(base64.b64decode(ticket["fields"]["policy"]))


def test_the_owner_gets_a_presigned_post_for_an_opaque_key_and_a_pending_upload(service):
    kb_id = create_kb(service)

    reply = request_upload(service, kb_id, "  MemOS产品介绍.md ", 1234)

    assert reply.status == HTTPStatus.CREATED, reply.body
    ticket = reply.body
    upload_id = ticket["upload_id"]
    assert upload_id.startswith("up_")
    key = f"uploads/{kb_id}/{upload_id}"
    assert ticket["fields"]["key"] == key
    assert "产品" not in json.dumps(ticket["fields"], ensure_ascii=False)
    assert ticket["fields"]["Content-Type"] == "text/markdown"
    assert ["content-length-range", 1234, 1234] in policy_of(ticket)["conditions"]
    upload = get_upload(service, kb_id, upload_id)
    assert (upload.state, upload.filename, upload.size_bytes, upload.owner_id, upload.object_key) == (
        "pending",
        "MemOS产品介绍.md",
        1234,
        "alice",
        key,
    )
    assert raw_upload_item(service, kb_id, upload_id)["GSI2PK"] == "UPLOAD#pending"


def test_a_post_to_the_presigned_url_stores_the_object_and_notifies_the_queue(service):
    kb_id = create_kb(service)
    ticket = request_upload(service, kb_id, "a.txt", 5).body

    response = post_file(ticket, b"hello")

    assert response.status_code == HTTPStatus.NO_CONTENT
    messages = sqs(service).receive_message(QueueUrl=service.refs["UploadQueue"], MaxNumberOfMessages=10)
    bodies = [json.loads(m["Body"]) for m in messages["Messages"]]
    records = [r for b in bodies for r in b.get("Records", [])]
    assert [r["eventName"] for r in records] == ["ObjectCreated:Post"]


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        (
            {"filename": "setup.exe", "size_bytes": 10},
            HTTPStatus.UNSUPPORTED_MEDIA_TYPE,
            "unsupported_file_type",
        ),
        (
            {"filename": "page.html", "size_bytes": 5 * MB + 1},  # converted in one piece: 5 MB at most
            HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
            "file_too_large",
        ),
        (
            {"filename": "big.pdf", "size_bytes": 100 * MB + 1},
            HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
            "file_too_large",
        ),
        ({"filename": "empty.txt", "size_bytes": 0}, HTTPStatus.UNPROCESSABLE_ENTITY, "validation_error"),
        ({"filename": "neg.txt", "size_bytes": -1}, HTTPStatus.UNPROCESSABLE_ENTITY, "validation_error"),
        (
            {"filename": "../etc/passwd.txt", "size_bytes": 10},
            HTTPStatus.UNPROCESSABLE_ENTITY,
            "validation_error",
        ),
        ({"filename": "a\\b.txt", "size_bytes": 10}, HTTPStatus.UNPROCESSABLE_ENTITY, "validation_error"),
        ({"filename": "bell\x07.txt", "size_bytes": 10}, HTTPStatus.UNPROCESSABLE_ENTITY, "validation_error"),
        (
            {"filename": "exe\u202efdp.pdf", "size_bytes": 10},
            HTTPStatus.UNPROCESSABLE_ENTITY,
            "validation_error",
        ),
        ({"filename": "   ", "size_bytes": 10}, HTTPStatus.UNPROCESSABLE_ENTITY, "validation_error"),
        (
            {"filename": "x" * 252 + ".txt", "size_bytes": 10},
            HTTPStatus.UNPROCESSABLE_ENTITY,
            "validation_error",
        ),
        (
            {"filename": "a.pdf", "size_bytes": 10, "content_type": "text/html"},
            HTTPStatus.UNPROCESSABLE_ENTITY,
            "content_type_mismatch",
        ),
        (
            {"filename": "a.pdf", "size_bytes": 10, "folder_id": "fo_nope"},
            HTTPStatus.NOT_FOUND,
            "folder_not_found",
        ),
        ({"filename": "a.txt", "size_bytes": 10, "sha256": "ab" * 31}, HTTPStatus.UNPROCESSABLE_ENTITY, "validation_error"),
        ({"filename": "a.txt", "size_bytes": 10, "sha256": "zz" * 32}, HTTPStatus.UNPROCESSABLE_ENTITY, "validation_error"),
    ],
)
def test_invalid_uploads_are_refused_with_their_code_and_nothing_recorded(service, body, status, code):
    kb_id = create_kb(service)

    reply = service.call("POST", f"/knowledge-bases/{kb_id}/uploads", "alice", body=body)

    assert (reply.status, reply.body["error"]["code"]) == (status, code), reply.body
    assert repository(service).query_kb_items(kb_id)[2] == []


def test_the_limits_themselves_are_accepted(service):
    kb_id = create_kb(service)
    assert request_upload(service, kb_id, "x" * 251 + ".txt", 1).status == HTTPStatus.CREATED
    assert request_upload(service, kb_id, "big.pdf", 100 * MB).status == HTTPStatus.CREATED


@pytest.mark.parametrize(
    ("filename", "declared", "pinned"),
    [
        ("a.md", "text/x-markdown", "text/x-markdown"),
        ("a.xml", "Text/XML; charset=utf-8", "text/xml"),
        ("a.docx", None, "application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
        ("a.DOC", "application/octet-stream", "application/msword"),
        ("a.json", "", "application/json"),
    ],
)
def test_the_pinned_content_type_fits_the_extension(service, filename, declared, pinned):
    kb_id = create_kb(service)
    extra = {"content_type": declared} if declared is not None else {}

    ticket = request_upload(service, kb_id, filename, 10, **extra).body

    assert ticket["fields"]["Content-Type"] == pinned
    assert {"Content-Type": pinned} in policy_of(ticket)["conditions"]


def test_a_declared_sha256_is_kept_in_lower_case_for_the_ingest_to_hold_the_bytes_to(service):
    kb_id = create_kb(service)

    reply = request_upload(service, kb_id, "a.txt", 5, sha256="AB" * 32)

    assert reply.status == HTTPStatus.CREATED, reply.body
    assert get_upload(service, kb_id, reply.body["upload_id"]).sha256 == "ab" * 32


def test_an_upload_into_a_folder_records_the_folder(service):
    kb_id = create_kb(service)
    repository(service).put_folder(
        FolderRecord(kb_id=kb_id, folder_id="fo_docs", name="Docs", created_at=utc_now())
    )

    ticket = request_upload(service, kb_id, "a.txt", 3, folder_id="fo_docs").body

    assert get_upload(service, kb_id, ticket["upload_id"]).folder_id == "fo_docs"


def test_an_idempotency_key_replays_the_same_upload_and_refuses_another_body(service):
    kb_id = create_kb(service)
    headers = {"Idempotency-Key": "upload-1"}
    body = {"filename": "a.txt", "size_bytes": 3}

    first = service.call("POST", f"/knowledge-bases/{kb_id}/uploads", "alice", body=body, headers=headers)
    again = service.call("POST", f"/knowledge-bases/{kb_id}/uploads", "alice", body=body, headers=headers)
    other = service.call(
        "POST", f"/knowledge-bases/{kb_id}/uploads", "alice", body={**body, "size_bytes": 4}, headers=headers
    )

    assert first.status == again.status == HTTPStatus.CREATED
    assert again.body == first.body
    assert other.status == HTTPStatus.UNPROCESSABLE_ENTITY
    assert other.body["error"]["code"] == "idempotency_key_reused"
    assert len(repository(service).query_kb_items(kb_id)[2]) == 1


def test_twin_names_in_one_folder_make_one_file_the_second_asked_for_refused_with_the_first(service):
    kb_id = create_kb(service)
    nfc, nfd = unicodedata.normalize("NFC", "café.md"), unicodedata.normalize("NFD", "café.md")
    # Asked for at once (neither a file yet): both get a ticket; the ingest lets one become a file.
    tickets = [request_upload(service, kb_id, name, 5).body for name in ("lead.md", " lead.md")]
    for ticket in tickets:
        assert post_file(ticket, b"hello").status_code == HTTPStatus.NO_CONTENT
    drain_ingest(service)
    [file] = repository(service).query_kb_items(kb_id)[1]
    loser = next(t["upload_id"] for t in tickets if t["upload_id"] != file.upload_id)
    assert (get_upload(service, kb_id, loser).state, get_upload(service, kb_id, loser).reason) == (
        "rejected",
        NAME_TAKEN,
    )

    again = request_upload(service, kb_id, "lead.md ", 5)
    cafe = request_upload(service, kb_id, nfd, 5)

    assert again.status == HTTPStatus.CONFLICT
    assert again.body["error"]["code"] == "name_taken"
    assert again.body["error"]["details"] == {"kind": "file", "id": file.file_id, "name": "lead.md"}
    assert get_upload(service, kb_id, cafe.body["upload_id"]).filename == nfc


def test_readers_are_refused_and_strangers_see_no_kb(service):
    kb_id = create_kb(service)
    service.call("PUT", "/me", "bob")
    assert service.call(
        "POST", f"/knowledge-bases/{kb_id}/members", "alice", body={"identifier": "bob"}
    ).status == (HTTPStatus.CREATED)

    reader = request_upload(service, kb_id, "a.txt", 3, user="bob")
    stranger = request_upload(service, kb_id, "a.txt", 3, user="carol")
    missing = request_upload(service, "kb_000000000000000000000000", "a.txt", 3, user="carol")

    assert (reader.status, reader.body["error"]["code"]) == (HTTPStatus.FORBIDDEN, "owner_only")
    assert stranger.status == HTTPStatus.NOT_FOUND
    assert stranger.body == missing.body
    assert repository(service).query_kb_items(kb_id)[2] == []
