"""The file list (live status from MemOS), folders and moving files, through the real handlers."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from http import HTTPStatus

import pytest

from memmy_kb.adapters.dynamodb.keys import file_key, kb_key, upload_key
from memmy_kb.adapters.dynamodb.table import dump
from memmy_kb.records import FileRecord, UploadRecord
from tests.support import seed
from tests.support.events import claims_for
from tests.support.polling import wait_until


@pytest.fixture
def kb(service):
    for user in ("alice", "bob"):
        service.call("PUT", "/me", claims=claims_for(user, name=user.title()))
    kb = service.call("POST", "/knowledge-bases", "alice", body={"name": "资料"}).body
    assert (
        service.call(
            "POST", f"/knowledge-bases/{kb['id']}/members", "alice", body={"identifier": "bob"}
        ).status
        == 201
    )
    return kb["id"]


def repo(service):
    return service.stores


def add_file(service, kb_id: str, name: str, content: bytes, folder_id: str | None = None) -> str:
    return seed.add_file(service, kb_id, "alice", name, content, folder_id)


def wait_for_memos(service) -> None:
    def settled() -> bool:
        kbs = service.memos.state()["knowledge_bases"]
        return not any(f["status"] == "running" for k in kbs for f in k["files"])

    wait_until(settled, timeout=10, interval=0.02, message="MemOS to finish processing")


def put_upload(service, kb_id: str, upload_id: str, *, state: str, started: datetime, **fields) -> None:
    """An upload record as the upload route and the ingest leave it."""
    record = UploadRecord(
        kb_id=kb_id,
        upload_id=upload_id,
        owner_id="alice",
        object_key=f"uploads/{kb_id}/{upload_id}",
        filename=fields.pop("filename", f"{upload_id}.pdf"),
        size_bytes=10,
        content_type=fields.pop("content_type", "application/pdf"),
        state=state,
        created_at=started,
        **fields,
    )
    seed.put_item(service, {**upload_key(kb_id, upload_id), "type": "upload", **record.model_dump()})


def listing(service, kb_id, user="alice", folder_id=None):
    query = {"folder_id": folder_id} if folder_id else None
    return service.call("GET", f"/knowledge-bases/{kb_id}/files", user, query=query)


def test_status_comes_live_from_memos_in_one_call(service, kb):
    good = add_file(service, kb, "手册.md", "# 手册\n内容".encode())
    bad = add_file(service, kb, "broken.pdf", b"not a pdf at all")
    wait_for_memos(service)
    before = service.memos.calls("/get/knowledgebase-file")
    reply = listing(service, kb, "bob")
    assert reply.status == HTTPStatus.OK
    assert service.memos.calls("/get/knowledgebase-file") == before + 1
    files = {f["id"]: f for f in reply.body["files"]}
    assert (files[good]["name"], files[good]["status"], files[good]["size_bytes"]) == (
        "手册.md",
        "available",
        len("# 手册\n内容".encode()),
    )
    assert files[bad]["status"] == "failed"
    assert files[bad]["reason"]
    assert reply.body.get("refresh_after_seconds") is None


def test_processing_files_ask_for_a_refresh(service, kb):
    memos_kb = repo(service).kbs.get_grant("alice", kb).memos_kb_id
    # A file the emulator will not process for an hour: it stays "running" in MemOS.
    slow = service.memos.emulator.store.add_file(
        memos_kb,
        name="slow.md",
        type_="document",
        size_bytes=3,
        content=b"abc",
        url=None,
        ready_at=time.time() + 3600,
    )
    record = FileRecord(
        kb_id=kb,
        file_id="fi_slow",
        memos_file_id=slow.id,
        name="slow.md",
        size_bytes=3,
        upload_id="up_s",
        uploaded_at=datetime.now(UTC),
    )
    seed.put_item(service, {**file_key(kb, "fi_slow"), "type": "file", **record.model_dump()})
    body = listing(service, kb).body
    assert [(f["id"], f["status"]) for f in body["files"]] == [("fi_slow", "processing")]
    assert body["refresh_after_seconds"] == 3


def put_pending_rejected_and_submitted(service, kb):
    """Uploads ``up_1`` pending, ``up_2`` rejected as not a PDF, ``up_3`` submitted."""
    now = datetime.now(UTC)
    expires = int(now.timestamp()) + 600
    put_upload(service, kb, "up_1", state="pending", started=now, expires_at=expires)
    put_upload(
        service,
        kb,
        "up_2",
        state="rejected",
        started=now,
        expires_at=expires,
        reason="The file is not a valid PDF.",
    )
    put_upload(service, kb, "up_3", state="submitted", started=now, expires_at=expires)


def test_uploads_in_flight_and_rejected_show_in_the_list(service, kb):
    put_pending_rejected_and_submitted(service, kb)
    body = listing(service, kb).body
    shown = {f["id"]: (f["status"], f.get("reason")) for f in body["files"]}
    assert shown == {"up_1": ("uploading", None), "up_2": ("failed", "The file is not a valid PDF.")}
    assert body["refresh_after_seconds"] == 3


def test_memos_down_is_503(service, kb):
    add_file(service, kb, "a.md", b"# a\nb")
    service.memos.add_fault("/get/knowledgebase-file", code=50004)
    reply = listing(service, kb)
    assert (reply.status, reply.body["error"]["code"]) == (
        HTTPStatus.SERVICE_UNAVAILABLE,
        "memos_unavailable",
    )


def test_an_empty_kb_makes_no_memos_call(service, kb):
    assert listing(service, kb).body == {"folders": [], "files": [], "refresh_after_seconds": None}
    assert service.memos.calls("/get/knowledgebase-file") == 0


def test_folders_levels_and_moves(service, kb):
    def mk(name, parent=None):
        reply = service.call(
            "POST", f"/knowledge-bases/{kb}/folders", "alice", body={"name": name, "parent_id": parent}
        )
        assert reply.status == HTTPStatus.CREATED, reply.body
        return reply.body["id"]

    # Given two folders at the root, one inside the first, and a file in it and one at the root
    docs, specs = mk("文档"), mk("规格")
    v1 = mk("v1", docs)
    in_docs = add_file(service, kb, "a.md", b"# a\nb", folder_id=docs)
    at_root = add_file(service, kb, "root.md", b"# r\ns")
    wait_for_memos(service)
    # Then each level lists its own folders and files
    root = listing(service, kb).body
    assert sorted(f["name"] for f in root["folders"]) == sorted(["文档", "规格"])
    assert [f["id"] for f in root["files"]] == [at_root]
    inside = listing(service, kb, "bob", docs).body
    assert ([f["id"] for f in inside["folders"]], [f["id"] for f in inside["files"]]) == ([v1], [in_docs])

    # When the file is moved to the other folder and back to the root, then it is where it was moved
    moved = service.call(
        "PATCH", f"/knowledge-bases/{kb}/files/{in_docs}", "alice", body={"folder_id": specs}
    )
    assert (moved.status, moved.body["folder_id"], moved.body["status"]) == (
        HTTPStatus.OK,
        specs,
        "available",
    )
    assert [f["id"] for f in listing(service, kb, folder_id=specs).body["files"]] == [in_docs]
    to_root = service.call(
        "PATCH", f"/knowledge-bases/{kb}/files/{in_docs}", "alice", body={"folder_id": None}
    )
    assert to_root.body["folder_id"] is None

    # When the inner folder is renamed, moved and moved to the top, then it keeps its name and takes its parent
    renamed = service.call("PATCH", f"/knowledge-bases/{kb}/folders/{v1}", "alice", body={"name": "v2"})
    assert (renamed.body["name"], renamed.body["parent_id"]) == ("v2", docs)
    moved_folder = service.call(
        "PATCH", f"/knowledge-bases/{kb}/folders/{v1}", "alice", body={"parent_id": specs}
    )
    assert (moved_folder.body["name"], moved_folder.body["parent_id"]) == ("v2", specs)
    to_top = service.call("PATCH", f"/knowledge-bases/{kb}/folders/{v1}", "alice", body={"parent_id": None})
    assert to_top.body["parent_id"] is None


def test_a_folder_cannot_move_into_its_own_subtree(service, kb):
    a = service.call("POST", f"/knowledge-bases/{kb}/folders", "alice", body={"name": "a"}).body["id"]
    b = service.call(
        "POST", f"/knowledge-bases/{kb}/folders", "alice", body={"name": "b", "parent_id": a}
    ).body["id"]
    c = service.call(
        "POST", f"/knowledge-bases/{kb}/folders", "alice", body={"name": "c", "parent_id": b}
    ).body["id"]
    for target in (a, b, c):
        reply = service.call(
            "PATCH", f"/knowledge-bases/{kb}/folders/{a}", "alice", body={"parent_id": target}
        )
        assert (reply.status, reply.body["error"]["code"]) == (HTTPStatus.CONFLICT, "folder_cycle")
    assert (
        service.call("PATCH", f"/knowledge-bases/{kb}/folders/{c}", "alice", body={"parent_id": None}).status
        == HTTPStatus.OK
    )


@pytest.mark.parametrize(
    ("method", "path", "body", "code"),
    [
        ("GET", "/files", None, "folder_not_found"),
        ("POST", "/folders", {"name": "x", "parent_id": "fo_missing"}, "folder_not_found"),
        ("PATCH", "/folders/fo_missing", {"name": "x"}, "folder_not_found"),
        ("PATCH", "/files/fi_missing", {"folder_id": None}, "file_not_found"),
    ],
)
def test_missing_folders_and_files_are_404(service, kb, method, path, body, code):
    query = {"folder_id": "fo_missing"} if method == "GET" else None
    reply = service.call(method, f"/knowledge-bases/{kb}{path}", "alice", body=body, query=query)
    assert (reply.status, reply.body["error"]["code"]) == (HTTPStatus.NOT_FOUND, code)


def test_moving_into_a_missing_folder_is_404(service, kb):
    file_id = add_file(service, kb, "a.md", b"# a\nb")
    reply = service.call(
        "PATCH", f"/knowledge-bases/{kb}/files/{file_id}", "alice", body={"folder_id": "fo_missing"}
    )
    assert (reply.status, reply.body["error"]["code"]) == (HTTPStatus.NOT_FOUND, "folder_not_found")


def test_readers_cannot_organise(service, kb):
    folder = service.call("POST", f"/knowledge-bases/{kb}/folders", "alice", body={"name": "a"}).body["id"]
    file_id = add_file(service, kb, "a.md", b"# a\nb")
    for method, path, body in (
        ("POST", "/folders", {"name": "b"}),
        ("PATCH", f"/folders/{folder}", {"name": "b"}),
        ("PATCH", f"/files/{file_id}", {"folder_id": folder}),
    ):
        reply = service.call(method, f"/knowledge-bases/{kb}{path}", "bob", body=body)
        assert (reply.status, reply.body["error"]["code"]) == (HTTPStatus.FORBIDDEN, "owner_only")


def test_organising_never_calls_memos_writes(service, kb):
    file_id = add_file(service, kb, "a.md", b"# a\nb")
    writes = (
        "/add/knowledgebase-file",
        "/delete/knowledgebase-file",
        "/delete/knowledgebase",
        "/create/knowledgebase",
    )
    before = {e: service.memos.calls(e) for e in writes}
    folder = service.call("POST", f"/knowledge-bases/{kb}/folders", "alice", body={"name": "a"}).body["id"]
    service.call("PATCH", f"/knowledge-bases/{kb}/folders/{folder}", "alice", body={"name": "b"})
    service.call("PATCH", f"/knowledge-bases/{kb}/files/{file_id}", "alice", body={"folder_id": folder})
    assert {e: service.memos.calls(e) for e in writes} == before


def test_an_upload_stuck_submitting_is_shown_failed_after_the_grace(service, kb):
    now = datetime.now(UTC)
    for upload_id, started in (("up_new", now), ("up_old", now - timedelta(hours=1))):
        put_upload(
            service,
            kb,
            upload_id,
            state="submitting",
            started=started,
            submitting_at=started,
            expires_at=int(now.timestamp()) + 86400,
            filename=f"{upload_id}.md",
            content_type="text/markdown",
        )
    shown = {f["id"]: (f["status"], f["reason"]) for f in listing(service, kb).body["files"]}
    assert shown["up_new"] == ("uploading", None)
    assert shown["up_old"][0] == "failed"
    assert "upload the file again" in shown["up_old"][1]


def test_a_name_memos_keeps_is_cleaned_before_another_person_sees_it(service, kb):
    # Given a file whose name in MemOS hides a bidi override (MemOS keeps whatever it was given)
    add_file(service, kb, "exe\u202efdp.pdf", b"%PDF-1.4 x")
    wait_for_memos(service)
    # When the reader lists the KB, then the name shows what is there
    (entry,) = service.call("GET", f"/knowledge-bases/{kb}/files", "bob").body["files"]
    assert entry["name"] == "exe fdp.pdf"


def test_a_failed_upload_carries_its_reason_code_and_only_the_owner_dismisses_it_once_failed(service, kb):
    put_pending_rejected_and_submitted(service, kb)
    failed = next(f for f in listing(service, kb).body["files"] if f["id"] == "up_2")
    assert (failed["reason"], failed["reason_code"]) == ("The file is not a valid PDF.", "invalid_pdf")

    def dismiss(upload_id, user="alice"):
        return service.call("DELETE", f"/knowledge-bases/{kb}/uploads/{upload_id}", user)

    reader, stranger = dismiss("up_2", "bob"), dismiss("up_2", "carol")
    assert (reader.status, reader.body["error"]["code"]) == (HTTPStatus.FORBIDDEN, "owner_only")
    assert (stranger.status, stranger.body["error"]["code"]) == (HTTPStatus.NOT_FOUND, "kb_not_found")
    for busy in ("up_1", "up_3"):
        refused = dismiss(busy)
        assert (refused.status, refused.body["error"]["code"]) == (HTTPStatus.CONFLICT, "upload_not_failed")
    assert dismiss("up_2").status == HTTPStatus.NO_CONTENT
    assert [f["id"] for f in listing(service, kb).body["files"]] == ["up_1"]
    # Again, or one that never was: the same answer
    assert dismiss("up_2").status == HTTPStatus.NO_CONTENT
    assert dismiss("up_never").status == HTTPStatus.NO_CONTENT
    assert repo(service).contents.get_upload(kb, "up_1") is not None


def test_each_kb_lists_its_file_count_and_storage_in_one_read(service, kb):
    content = "# 手册\n内容".encode()
    add_file(service, kb, "手册.md", content)
    # The ingest counts each file it records on META (the seeded file above skips the ingest)
    service.stores.table.client.update_item(
        TableName=service.stores.table.name,
        Key=dump(kb_key(kb)),
        UpdateExpression="ADD file_count :one, bytes_used :size",
        ExpressionAttributeValues=dump({":one": 1, ":size": len(content)}),
    )
    listed = service.call("GET", "/knowledge-bases", "bob").body["items"]
    one = service.call("GET", f"/knowledge-bases/{kb}", "alice").body
    assert [(k["file_count"], k["bytes_used"]) for k in listed if k["id"] == kb] == [(1, len(content))]
    assert (one["file_count"], one["bytes_used"]) == (1, len(content))
