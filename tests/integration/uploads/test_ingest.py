"""The ingest through the real queue: presigned POST on moto -> S3 notification -> SQS -> IngestFunction.

Each bad upload must be rejected with its reason and leave nothing behind: the object deleted, no FILE
item, nothing sent to MemOS (the emulator's call counts say so).
"""

from __future__ import annotations

import io
import json
import zipfile

import boto3
import pytest
import requests
from botocore.client import BaseClient

from memmy_kb.adapters.dynamodb.keys import folder_key, grant_key, kb_key
from memmy_kb.adapters.memos.client import MemosClient
from memmy_kb.adapters.s3 import UploadStorage
from memmy_kb.composition import reset_composition
from memmy_kb.domain.storage import ConditionFailed, ObjectInfo
from memmy_kb.domain.uploads import ingest, verification
from memmy_kb.domain.uploads.verification import NOT_UTF8, REASONS, XML_DOCTYPE
from memmy_kb.records import FolderRecord, utc_now
from memmy_local.lambdas.runners import sqs_event
from tests.support.docgen import make_doc, make_docx, make_docx_with_document, make_md, make_pdf
from tests.support.events import claims_for
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
    raw_upload_item,
    repository,
    request_upload,
    s3,
    sqs,
    upload,
)

ADD = "/add/knowledgebase-file"
ENTITY_BOMB = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [
  <!ENTITY lol "lol">
  <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
  <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
]>
<lolz>&lol3;</lolz>
"""


def zip_of(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def memos_files(service) -> list[dict]:
    return [f for kb in service.memos.state()["knowledge_bases"] for f in kb["files"]]


def wait_until_processed(service, count: int, timeout: float = 15) -> list[dict]:
    def processed() -> list[dict] | None:
        files = memos_files(service)
        return files if len(files) == count and all(f["status"] != "running" for f in files) else None

    return wait_until(
        processed, timeout=timeout, message=lambda: f"{count} MemOS files to be processed: {memos_files(service)}"
    )


def file_items(service, kb_id: str):
    return repository(service).query_kb_items(kb_id)[1]


# -- the happy path ------------------------------------------------------------------------------


def test_a_markdown_file_and_a_pdf_reach_memos_and_are_recorded(service):
    kb_id = create_kb(service)
    md = make_md([("MemOS 产品介绍", "MemOS 是一个面向大模型的记忆操作系统。")])
    pdf = make_pdf(["Memmy knowledge base", "知识库让智能体引用团队文档。"])
    md_id = upload(service, kb_id, "MemOS产品介绍.md", md)
    pdf_id = upload(service, kb_id, "产品手册.pdf", pdf)

    run = drain_ingest(service)

    assert run.failed == []
    files = {f.upload_id: f for f in file_items(service, kb_id)}
    assert set(files) == {md_id, pdf_id}
    assert (files[md_id].name, files[md_id].size_bytes) == ("MemOS产品介绍.md", len(md))
    for upload_id in (md_id, pdf_id):
        stored = get_upload(service, kb_id, upload_id)
        assert (stored.state, stored.file_id, stored.memos_file_id) == (
            "submitted",
            files[upload_id].file_id,
            files[upload_id].memos_file_id,
        )
        assert "GSI2PK" not in raw_upload_item(service, kb_id, upload_id)
    processed = wait_until_processed(service, 2)
    # MemOS knows each file under its name with the upload's id in it (how the reconciler finds it)
    assert {(f["name"], f["status"]) for f in processed} == {
        (f"MemOS产品介绍 [{md_id}].md", "completed"),
        (f"产品手册 [{pdf_id}].pdf", "completed"),
    }
    assert {f["id"] for f in processed} == {f.memos_file_id for f in files.values()}


@pytest.mark.parametrize(
    ("filename", "data"),
    [
        ("说明.docx", make_docx([("标题", "正文")])),
        ("legacy.doc", make_doc("Legacy Word text")),
        ("data.json", json.dumps({"名字": "Memmy", "tags": ["a", 1, None]}, ensure_ascii=False).encode()),
        ("notes.txt", "纯文本笔记\n".encode()),
        ("doc.xml", b'<?xml version="1.0" encoding="UTF-8"?><doc><p>hello</p></doc>'),
        ("guide.rst", "使用指南\n========\n\n先登录。\n".encode()),
        ("README", "纯文本，没有扩展名\n".encode()),
    ],
)
def test_every_supported_format_is_accepted(service, filename, data):
    kb_id = create_kb(service)
    upload_id = upload(service, kb_id, filename, data)

    drain_ingest(service)

    assert get_upload(service, kb_id, upload_id).state == "submitted"
    assert wait_until_processed(service, 1)[0]["status"] == "completed"


def test_an_html_upload_reaches_memos_as_markdown_and_answers_recall_as_text(service):
    page = (
        "<!doctype html><html><head><title>差旅</title><style>p {margin: 0}</style></head><body>"
        "<h1>差旅报销指南</h1><p>差旅报销需要<b>增值税发票</b>和机票行程单。HOTEL7 住宿标准每晚五百元。</p>"
        "<script>document.cookie</script></body></html>"
    ).encode()
    service.call("PUT", "/me", claims=claims_for("alice", name="Alice"))
    kb_id = create_kb(service)
    upload_id = upload(service, kb_id, "差旅指南.html", page)

    assert drain_ingest(service).failed == []

    [file] = file_items(service, kb_id)
    assert (file.name, file.size_bytes) == ("差旅指南.html", len(page))
    [processed] = wait_until_processed(service, 1)
    assert (processed["name"], processed["status"]) == (f"差旅指南 [{upload_id}].md", "completed")
    reply = service.call("POST", "/recall", "alice", body={"query": "差旅报销需要哪些发票"})
    assert reply.status == 200, reply.body
    [item] = [i for i in reply.body["items"] if "HOTEL7" in i["content"]]
    assert "增值税发票" in item["content"]
    assert not any(tag in item["content"] for tag in ("<p>", "<b>", "<script>", "document.cookie", "margin"))


def test_a_large_file_goes_to_memos_as_a_presigned_url_of_a_verified_copy(service, monkeypatch):
    # Given an inline limit below the file's size
    monkeypatch.setenv("INLINE_UPLOAD_MAX_BYTES", "1024")
    reset_composition()
    sent = []
    original = MemosClient.add_knowledgebase_files

    def recording(self, kb_id, files):
        sent.extend(files)
        return original(self, kb_id, files)

    monkeypatch.setattr(MemosClient, "add_knowledgebase_files", recording)
    kb_id = create_kb(service)
    data = ("大文件的一行内容。\n" * 400).encode()
    upload_id = upload(service, kb_id, "big.txt", data)

    drain_ingest(service)

    # Then MemOS got a URL (not the bytes) that serves exactly the verified copy
    (file_input,) = sent
    assert file_input.content.startswith("http")
    assert f"verified/{kb_id}/{upload_id}" in file_input.content
    assert "X-Amz-Algorithm=AWS4-HMAC-SHA256" in file_input.content
    assert requests.get(file_input.content, timeout=10).content == data
    assert get_upload(service, kb_id, upload_id).state == "submitted"


# -- the bad-upload corpus ------------------------------------------------------------------------

CORPUS = [
    pytest.param("setup.pdf", b"MZ\x90\x00\x03" + bytes(500), None, REASONS["pdf"], id="renamed-executable"),
    pytest.param("elf.pdf", b"\x7fELF\x02\x01\x01" + bytes(200), None, REASONS["pdf"], id="elf-as-pdf"),
    pytest.param("report.docx", zip_of({"readme.txt": b"hi"}), None, REASONS["docx"], id="zip-as-docx"),
    pytest.param("old.doc", b"PK\x03\x04" + bytes(600), None, REASONS["doc"], id="zip-as-doc"),
    pytest.param("notes.txt", "文字".encode() + b"\xff\xfe" + b"more", None, NOT_UTF8, id="invalid-utf8"),
    pytest.param("readme.md", b"ok \xc3\x28", None, NOT_UTF8, id="invalid-utf8-md"),
    pytest.param(
        "data.json", b'{"name": "Memmy", "tags": ["a", "b",]}', None, REASONS["json"], id="broken-json"
    ),
    pytest.param("bomb.xml", ENTITY_BOMB, None, XML_DOCTYPE, id="xml-entity-bomb"),
    pytest.param("broken.xml", b"<a><b></a>", None, REASONS["xml"], id="malformed-xml"),
    pytest.param("cut.pdf", b"%PDF-1.7\n1 0 obj\n<< >>\nendobj\n", None, verification.PDF_NO_TRAILER, id="pdf-without-trailer"),
    pytest.param("old.doc", bytes.fromhex("D0CF11E0A1B11AE1") + bytes(504), None, verification.DOC_BAD_HEADER, id="doc-bad-header"),
    pytest.param("bomb.docx", make_docx_with_document(b"\0" * (20 * 1024 * 1024)), None, verification.DOCX_BOMB, id="docx-zip-bomb"),
    pytest.param("junk.docx", make_docx_with_document(b"not xml <<<"), None, verification.DOCX_BAD_XML, id="docx-not-xml"),
    pytest.param(
        "include.xml",
        b'<a xmlns:xi="http://www.w3.org/2001/XInclude"><xi:include href="file:///etc/passwd"/></a>',
        None,
        verification.XML_EXTERNAL,
        id="xml-xinclude",
    ),
    pytest.param("style.xml", b'<?xml-stylesheet href="http://x/s.xsl"?><a/>', None, verification.XML_EXTERNAL, id="xml-stylesheet"),
    pytest.param("empty.txt", b"", 10, ingest.SMALLER, id="zero-byte-object"),
    pytest.param("big.txt", b"x" * 50, 5, ingest.LARGER, id="larger-than-declared"),
]


@pytest.mark.parametrize(("filename", "data", "declared", "reason"), CORPUS)
def test_a_bad_upload_is_rejected_with_its_reason_and_leaves_nothing_behind(
    service, filename, data, declared, reason
):
    kb_id = create_kb(service)
    upload_id = upload(service, kb_id, filename, data, declared=declared)
    key = f"uploads/{kb_id}/{upload_id}"
    assert object_exists(service, key)

    run = drain_ingest(service)

    assert run.failed == []
    stored = get_upload(service, kb_id, upload_id)
    assert (stored.state, stored.reason) == ("rejected", reason)
    assert "GSI2PK" not in raw_upload_item(service, kb_id, upload_id)
    assert not object_exists(service, key)
    assert file_items(service, kb_id) == []
    assert service.memos.calls(ADD) == 0
    assert memos_files(service) == []


def test_an_upload_to_a_kb_deleted_meanwhile_is_rejected_and_deleted(service):
    kb_id = create_kb(service)
    upload_id = upload(service, kb_id, "a.md", b"# hello")
    # KB deletion comes with a later issue: remove META and the owner's grant as it will.
    dynamodb = boto3.resource("dynamodb", region_name=REGION).Table(service.refs["Table"])
    dynamodb.delete_item(Key=kb_key(kb_id))
    dynamodb.delete_item(Key=grant_key("alice", kb_id))

    drain_ingest(service)

    stored = get_upload(service, kb_id, upload_id)
    assert (stored.state, stored.reason) == ("rejected", ingest.KB_GONE)
    assert not object_exists(service, f"uploads/{kb_id}/{upload_id}")
    assert service.memos.calls(ADD) == 0


def test_a_duplicate_s3_event_changes_nothing(service):
    kb_id = create_kb(service)
    upload(service, kb_id, "a.md", b"# hello")
    client = sqs(service)
    queue = service.refs["UploadQueue"]
    bodies = [
        m["Body"]
        for m in client.receive_message(QueueUrl=queue, MaxNumberOfMessages=10, VisibilityTimeout=0)[
            "Messages"
        ]
        if "Records" in json.loads(m["Body"])
    ]
    assert len(bodies) == 1
    client.send_message(QueueUrl=queue, MessageBody=bodies[0])

    run = drain_ingest(service)

    assert run.failed == []
    assert len(file_items(service, kb_id)) == 1
    assert service.memos.calls(ADD) == 1


def test_an_event_for_an_unknown_key_is_ignored(service):
    client = s3(service)
    client.put_object(Bucket=service.refs["UploadBucket"], Key="uploads/kb_00/up_00", Body=b"x")
    client.put_object(Bucket=service.refs["UploadBucket"], Key="uploads/not-ours.txt", Body=b"x")

    run = drain_ingest(service)

    assert run.failed == []
    assert service.memos.calls(ADD) == 0


def test_a_message_that_is_not_an_s3_event_is_reported_failed(service):
    sqs(service).send_message(QueueUrl=service.refs["UploadQueue"], MessageBody="not json")

    run = drain_ingest(service)

    assert len(run.failed) == 1


# -- MemOS failures ------------------------------------------------------------------------------


def test_memos_unavailable_returns_the_upload_to_pending_and_the_retry_submits_it_once(service):
    kb_id = create_kb(service)
    upload_id = upload(service, kb_id, "a.md", b"# hello")
    service.memos.add_fault(ADD, code=50004, times=1)

    first = drain_ingest(service)

    assert len(first.failed) == 1
    assert get_upload(service, kb_id, upload_id).state == "pending"
    assert raw_upload_item(service, kb_id, upload_id)["GSI2PK"] == "UPLOAD#pending"
    assert object_exists(service, f"uploads/{kb_id}/{upload_id}")

    second = drain_ingest(service)

    assert second.failed == []
    assert get_upload(service, kb_id, upload_id).state == "submitted"
    assert len(memos_files(service)) == 1
    assert service.memos.calls(ADD) == 2


def test_memos_down_on_the_last_delivery_rejects_instead_of_vanishing(service):
    kb_id = create_kb(service)
    upload_id = upload(service, kb_id, "a.md", b"# hello")
    service.memos.add_fault(ADD, code=50004)  # down for good

    for _ in range(4):
        assert len(drain_ingest(service).failed) == 1
        assert get_upload(service, kb_id, upload_id).state == "pending"
    last = drain_ingest(service)  # the queue's fifth and last delivery

    assert last.failed == []
    rejected = get_upload(service, kb_id, upload_id)
    assert (rejected.state, rejected.reason) == ("rejected", ingest.MEMOS_DOWN)
    assert not object_exists(service, f"uploads/{kb_id}/{upload_id}")
    assert memos_files(service) == []


def test_an_unknown_memos_outcome_leaves_the_upload_submitting_for_the_reconciler(service, monkeypatch):
    # Given a MemOS that stores the file but answers after the client gave up
    monkeypatch.setenv("MEMOS_TIMEOUT_SECONDS", "0.3")
    reset_composition()
    kb_id = create_kb(service)
    upload_id = upload(service, kb_id, "a.md", b"# hello")
    service.memos.add_fault(ADD, latency_ms=1000, times=1)

    run = drain_ingest(service)

    # Then the message is done, the upload stays submitting and is findable on GSI2; no FILE item yet
    assert run.failed == []
    stored = get_upload(service, kb_id, upload_id)
    assert stored.state == "submitting"
    assert stored.attempt_id
    assert stored.submitting_at
    index = boto3.client("dynamodb", region_name=REGION).query(
        TableName=service.refs["Table"],
        IndexName="GSI2",
        KeyConditionExpression="GSI2PK = :pk",
        ExpressionAttributeValues={":pk": {"S": "UPLOAD#submitting"}},
    )
    assert [item["SK"]["S"] for item in index["Items"]] == [f"UPLOAD#{upload_id}"]
    assert file_items(service, kb_id) == []
    # And a redelivered event does not add the file a second time
    s3(service).copy_object(
        Bucket=service.refs["UploadBucket"],
        Key=stored.object_key,
        CopySource={"Bucket": service.refs["UploadBucket"], "Key": stored.object_key},
        MetadataDirective="REPLACE",
    )
    drain_ingest(service)
    assert service.memos.calls(ADD) == 1
    # MemOS did store it: the orphan the reconciler will resolve through the GSI2 entry
    assert len(wait_until_processed(service, 1)) == 1


def test_a_file_memos_refuses_is_rejected_with_a_reason_and_deleted(service):
    kb_id = create_kb(service)
    upload_id = upload(service, kb_id, "a.md", b"# hello")
    service.memos.add_fault(ADD, code=40007, times=1)

    drain_ingest(service)

    stored = get_upload(service, kb_id, upload_id)
    assert (stored.state, stored.reason) == (
        "rejected",
        "The knowledge engine does not accept this type of file.",
    )
    assert not object_exists(service, f"uploads/{kb_id}/{upload_id}")
    assert file_items(service, kb_id) == []


def test_the_ingest_needs_no_permission_beyond_its_policy_for_a_large_rejected_file(service, monkeypatch):
    # A large file MemOS refuses: head, ranged reads, stream, copy, presign, delete of both keys.
    monkeypatch.setenv("INLINE_UPLOAD_MAX_BYTES", "1024")
    reset_composition()
    kb_id = create_kb(service)
    upload_id = upload(service, kb_id, "big.md", b"# title\n" + b"text " * 1000)
    service.memos.add_fault(ADD, code=50107, times=1)

    drain_ingest(service)

    assert get_upload(service, kb_id, upload_id).state == "rejected"
    assert not object_exists(service, f"verified/{kb_id}/{upload_id}")


# -- round trips ---------------------------------------------------------------------------------


def test_ingesting_a_small_file_costs_seven_aws_calls_and_one_memos_add(service):
    # Round trips counted, not timed (docs/architecture.md, "Uploads and ingest"): adding one fails here.
    kb_id = create_kb(service)
    upload_id = upload(service, kb_id, "a.md", b"# hello\n\nThe release checklist is reviewed on Mondays.\n")
    messages = sqs(service).receive_message(
        QueueUrl=service.refs["UploadQueue"], MessageSystemAttributeNames=["All"]
    )["Messages"]
    memos_before = service.memos.state()["calls"]

    with record_aws_calls() as calls:
        result = service.invoke("IngestFunction", sqs_event(messages, service.refs["UploadQueue.Arn"], REGION))

    assert result == {"batchItemFailures": []}
    assert [f"{name}:{operation}" for name, operation, _ in calls] == [
        "dynamodb:GetItem",  # the upload (filename, size, owner, MemOS KB id, state)
        "s3:GetObject",  # the bytes, with the real size and ETag (no HEAD)
        "dynamodb:TransactWriteItems",  # hold: pending -> submitting + the KB, owner and capacity checked
        # held: a file or upload of the folder with its name (one name per folder), in the KB's items
        # before and after its fingerprints (PRINT#), which are never read for it
        "dynamodb:Query",
        "dynamodb:Query",
        "dynamodb:TransactWriteItems",  # record: FILE + submitted + counts on META + activity entry
        "dynamodb:PutItem",  # the version's fingerprints
    ]
    hold, record = (params["TransactItems"] for _, operation, params in calls if operation == "TransactWriteItems")
    assert [next(iter(action)) for action in hold] == ["Update", "ConditionCheck"]
    assert [next(iter(action)) for action in record] == ["Put", "Update", "Update", "Put"]
    memos_after = service.memos.state()["calls"]
    assert {k: v - memos_before.get(k, 0) for k, v in memos_after.items() if v != memos_before.get(k, 0)} == {
        ADD: 1
    }
    assert get_upload(service, kb_id, upload_id).state == "submitted"


# -- races ---------------------------------------------------------------------------------------


def test_of_two_concurrent_deliveries_only_one_may_submit(service):
    kb_id = create_kb(service)
    upload_id = upload(service, kb_id, "a.md", b"# hello")
    repo = repository(service)
    now = get_upload(service, kb_id, upload_id).created_at

    repo.update_upload_submitting(kb_id, upload_id, attempt_id="one", now=now, keep_until=1, owner_id="alice", size=0, capacity=UNCAPPED)
    with pytest.raises(ConditionFailed):
        repo.update_upload_submitting(kb_id, upload_id, attempt_id="two", now=now, keep_until=1, owner_id="alice", size=0, capacity=UNCAPPED)

    assert get_upload(service, kb_id, upload_id).attempt_id == "one"
    with pytest.raises(ConditionFailed):
        repo.update_upload_released(kb_id, upload_id, attempt_id="two", expires_at=1)


def test_a_kb_deleted_while_memos_adds_the_file_gets_the_file_removed_from_memos(service, monkeypatch):
    kb_id = create_kb(service)
    upload_id = upload(service, kb_id, "a.md", b"# hello")
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    original = MemosClient.add_knowledgebase_files
    # Another function's calls: not recorded against the ingest's IAM policy.
    unrecorded_call = BaseClient._make_api_call

    def add_then_delete_the_kb(self, memos_kb_id, files):
        added = original(self, memos_kb_id, files)
        for key in (kb_key(kb_id), grant_key("alice", kb_id)):
            item_key = {name: {"S": value} for name, value in key.items()}
            unrecorded_call(dynamodb, "DeleteItem", {"TableName": service.refs["Table"], "Key": item_key})
        return added

    monkeypatch.setattr(MemosClient, "add_knowledgebase_files", add_then_delete_the_kb)

    drain_ingest(service)

    stored = get_upload(service, kb_id, upload_id)
    assert (stored.state, stored.reason) == ("rejected", ingest.KB_GONE)
    assert file_items(service, kb_id) == []
    assert memos_files(service) == []
    assert service.memos.calls("/delete/knowledgebase-file") == 1
    assert not object_exists(service, f"uploads/{kb_id}/{upload_id}")


def test_a_file_whose_folder_was_deleted_meanwhile_ends_rejected_and_leaves_nothing_in_memos(service):
    kb_id = create_kb(service)
    repo = repository(service)
    repo.put_folder(FolderRecord(kb_id=kb_id, folder_id="fo_gone", name="Gone", created_at=utc_now()))
    reply = request_upload(service, kb_id, "a.md", 7, folder_id="fo_gone")
    assert post_file(reply.body, b"# hello").status_code == 204
    boto3.resource("dynamodb", region_name=REGION).Table(service.refs["Table"]).delete_item(
        Key=folder_key(kb_id, "fo_gone")
    )

    drain_ingest(service)

    # Then no file is recorded, the upload says why, MemOS took the file back and the bytes are gone
    assert file_items(service, kb_id) == []
    stored = get_upload(service, kb_id, reply.body["upload_id"])
    assert (stored.state, stored.reason) == ("rejected", "The folder was deleted.")
    assert memos_files(service) == []
    assert service.memos.calls("/delete/knowledgebase-file") == 1


def test_an_object_replaced_while_it_is_read_is_retried_not_judged(service, monkeypatch):
    # Given a file read in several requests (over the inline size, so HEAD first; a small file is read by
    # one GET, which cannot mix versions), and the client re-POSTed another version before the read
    monkeypatch.setenv("INLINE_UPLOAD_MAX_BYTES", "4")
    reset_composition()
    kb_id = create_kb(service)
    upload_id = upload(service, kb_id, "a.md", b"# hello")
    original_head = UploadStorage.head

    def head_of_an_older_version(self, key):
        info = original_head(self, key)
        return info and ObjectInfo(key=info.key, size=info.size, etag='"0123456789abcdef0123456789abcdef"')

    monkeypatch.setattr(UploadStorage, "head", head_of_an_older_version)

    run = drain_ingest(service)

    # Then the read pinned to the old ETag fails, the message comes back and nothing is decided yet
    assert len(run.failed) == 1
    assert get_upload(service, kb_id, upload_id).state == "pending"
    assert service.memos.calls(ADD) == 0
