"""``memmy_kb.domain.uploads.replace_ingest``: a replace from its verified bytes to MemOS's update and the record of
the file's next version, and every way off that path, on the fakes."""

from __future__ import annotations

import hashlib

import pytest

from memmy_kb.domain.engine import FileStatus, MemosNotFound, MemosUnavailable
from memmy_kb.domain.knowledge_bases.files import GONE_FROM_MEMOS
from memmy_kb.domain.knowledge_bases.naming import memos_file_name
from memmy_kb.domain.storage import upload_object_key, verified_object_key
from memmy_kb.domain.uploads import delivery, ingest
from memmy_kb.domain.uploads.ingest import KB_GONE, MEMOS_UNSUPPORTED, SHA256_MISMATCH, RetryLater
from memmy_kb.domain.uploads.replace_ingest import FILE_GONE, SUPERSEDED
from memmy_kb.domain.uploads.verification import NOT_UTF8
from memmy_kb.records import FileRecord, KbCapacity, KnowledgeBaseRecord, UploadRecord
from tests.support.factories import T0, kb_record, owner_grant_for, replacement_record
from tests.support.fakes import FakeKnowledgeEngine, FakeStores, FakeUploadObjects, memos_error

V1 = "# 价目表\n\n旧价格：一百元。\n".encode()
V2 = "# 价目表\n\n新价格：两百元，含培训和全年支持服务。\n".encode()
KEY = "uploads/kb_1/up_2"
ROOM = KbCapacity(max_files=10, max_bytes=10_000)


@pytest.fixture
def objects() -> FakeUploadObjects:
    return FakeUploadObjects()


@pytest.fixture
def kb(stores: FakeStores, memos: FakeKnowledgeEngine) -> KnowledgeBaseRecord:
    record = kb_record("kb_1", memos_kb_id=memos.create_knowledgebase("memmy:kb_1"))
    stores.table.seed(record.model_copy(update={"file_count": 1, "bytes_used": len(V1)}), owner_grant_for(record))
    return record


@pytest.fixture
def file(stores: FakeStores, objects: FakeUploadObjects, memos: FakeKnowledgeEngine, kb: KnowledgeBaseRecord) -> FileRecord:
    """价目表.md at version 1, processed in MemOS, its upload's object still in the bucket."""
    engine_file = memos.add_file(kb.memos_kb_id, memos_file_name("价目表.md", "up_1"), FileStatus.AVAILABLE)
    record = FileRecord(
        kb_id="kb_1", file_id="fi_1", memos_file_id=engine_file.id, name="价目表.md", size_bytes=len(V1),
        upload_id="up_1", uploaded_at=T0, sha256=hashlib.sha256(V1).hexdigest(), updated_at=T0,
    )
    stores.table.seed(record)
    objects.put(upload_object_key("kb_1", "up_1"), V1)
    return record


def replace(stores: FakeStores, objects: FakeUploadObjects, file: FileRecord, data: bytes = V2, **update: object) -> UploadRecord:
    """A replace of ``file`` issued (the file marked) and its bytes POSTed."""
    upload = replacement_record("up_2", file, size_bytes=len(data), created_at=T0).model_copy(update=update)
    stores.contents.put_replacement(upload, take_over=None, capacity=ROOM)
    objects.put(KEY, data)
    return upload


def run(stores: FakeStores, objects: FakeUploadObjects, memos: FakeKnowledgeEngine, **options: object) -> ingest.IngestOutcome:
    config = ingest.IngestConfig(
        inline_max_bytes=int(options.pop("inline_max_bytes", 1024)),  # type: ignore[call-overload]
        get_url_ttl_seconds=120,
        capacity=ROOM,
        activity_retention_days=30,
        final_attempt=bool(options.pop("final_attempt", False)),
    )
    return delivery.ingest_object(stores.kbs, stores.contents, objects, memos, KEY, config=config, clock=lambda: T0)


def stored(stores: FakeStores) -> tuple[FileRecord, UploadRecord, int]:
    """The file, the replace and META's bytes."""
    file, upload, kb = stores.contents.get_file("kb_1", "fi_1"), stores.contents.get_upload("kb_1", "up_2"), stores.kbs.get_kb("kb_1")
    assert file is not None
    assert upload is not None
    assert kb is not None
    return file, upload, kb.bytes_used


@pytest.mark.parametrize("inline_max_bytes", [1024, 16], ids=["inline", "by-url"])
def test_given_a_replace_when_ingested_then_memos_updates_the_same_file_and_it_is_recorded_at_version_2(
    stores: FakeStores, objects: FakeUploadObjects, memos: FakeKnowledgeEngine, file: FileRecord, inline_max_bytes: int
) -> None:
    replace(stores, objects, file)

    outcome = run(stores, objects, memos, inline_max_bytes=inline_max_bytes)

    assert (outcome.result, outcome.upload_id) == ("submitted", "up_2")
    [(memos_file_id, sent)] = memos.updates
    assert (memos_file_id, sent.name) == (file.memos_file_id, memos_file_name("价目表.md", "up_2"))
    assert memos.calls["add_knowledgebase_files"] == 0
    now, upload, bytes_used = stored(stores)
    assert now == file.model_copy(
        update={"version": 2, "size_bytes": len(V2), "upload_id": "up_2", "sha256": hashlib.sha256(V2).hexdigest()}
    )
    assert (upload.state, upload.file_id) == ("submitted", "fi_1")
    assert (bytes_used, stores.kbs.get_kb("kb_1").file_count) == (len(V2), 1)  # type: ignore[union-attr]
    assert upload_object_key("kb_1", "up_1") not in objects.objects  # the replaced version's bytes are gone
    assert verified_object_key("kb_1", "up_1") not in objects.objects
    assert [e.kind for e in stores.table.activity.values()] == ["replaced"]


def test_given_a_replace_that_shrinks_the_file_when_recorded_then_meta_gives_the_bytes_back(
    stores: FakeStores, objects: FakeUploadObjects, memos: FakeKnowledgeEngine, file: FileRecord
) -> None:
    replace(stores, objects, file, b"# short\n")

    assert run(stores, objects, memos).result == "submitted"

    assert stored(stores)[2] == len(b"# short\n")


@pytest.mark.parametrize(
    ("data", "update", "reason"),
    [
        (b"\xff\xfe not utf-8", {}, NOT_UTF8),
        (V2, {"sha256": "00" * 32}, SHA256_MISMATCH),
    ],
    ids=["bad-bytes-for-the-files-name", "hash-mismatch"],
)
def test_given_bytes_the_checks_refuse_when_ingested_then_rejected_the_file_unmarked_and_memos_not_asked(
    stores: FakeStores, objects: FakeUploadObjects, memos: FakeKnowledgeEngine, file: FileRecord,
    data: bytes, update: dict[str, object], reason: str,
) -> None:
    replace(stores, objects, file, data, **update)

    outcome = run(stores, objects, memos)

    assert (outcome.result, outcome.reason) == ("rejected", reason)
    now, upload, bytes_used = stored(stores)
    assert (now, upload.state, bytes_used) == (file, "rejected", len(V1))
    assert memos.calls["update_knowledgebase_file"] == 0
    assert KEY not in objects.objects


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (MemosNotFound("file does not exist", endpoint="/update", code=40001), GONE_FROM_MEMOS),
        (memos_error(code=50107), MEMOS_UNSUPPORTED),
    ],
    ids=["memos-lost-the-file", "memos-refuses-the-type"],
)
def test_given_memos_refusing_the_update_when_ingested_then_rejected_with_a_reason_the_old_version_kept(
    stores: FakeStores, objects: FakeUploadObjects, memos: FakeKnowledgeEngine, file: FileRecord,
    error: Exception, reason: str,
) -> None:
    replace(stores, objects, file)
    memos.fail("update_knowledgebase_file", error)

    outcome = run(stores, objects, memos)

    assert (outcome.result, outcome.reason) == ("rejected", reason)
    now, upload, bytes_used = stored(stores)
    assert (now, upload.state, bytes_used) == (file, "rejected", len(V1))  # version 1, unmarked, growth back


def test_given_memos_certainly_took_nothing_when_ingested_then_released_with_the_growth_back_and_still_marked(
    stores: FakeStores, objects: FakeUploadObjects, memos: FakeKnowledgeEngine, file: FileRecord
) -> None:
    replace(stores, objects, file)
    memos.fail("update_knowledgebase_file", memos_error(code=50004), times=1)

    with pytest.raises(RetryLater):
        run(stores, objects, memos)

    now, upload, bytes_used = stored(stores)
    assert (upload.state, now.replacing, bytes_used) == ("pending", "up_2", len(V1))
    assert run(stores, objects, memos).result == "submitted"  # the redelivery
    assert stored(stores)[0].version == 2


def test_given_the_updates_answer_lost_when_ingested_then_left_submitting_with_the_growth_held(
    stores: FakeStores, objects: FakeUploadObjects, memos: FakeKnowledgeEngine, file: FileRecord
) -> None:
    replace(stores, objects, file)
    memos.fail("update_knowledgebase_file", MemosUnavailable("read timed out", endpoint="/update"))

    assert run(stores, objects, memos).result == "unknown"

    now, upload, bytes_used = stored(stores)
    assert (upload.state, now.version, now.replacing, bytes_used) == ("submitting", 1, "up_2", len(V2))


@pytest.mark.parametrize(
    ("before_hold", "reason"),
    [("file-deleted", FILE_GONE), ("taken-over", SUPERSEDED), ("kb-deleted", KB_GONE)],
)
def test_given_the_file_or_kb_gone_or_the_replace_taken_over_before_the_hold_then_rejected_and_memos_not_asked(
    stores: FakeStores, objects: FakeUploadObjects, memos: FakeKnowledgeEngine, file: FileRecord,
    before_hold: str, reason: str,
) -> None:
    replace(stores, objects, file)
    if before_hold == "file-deleted":
        del stores.table.files[("kb_1", "fi_1")]
    elif before_hold == "taken-over":
        stores.table.seed(file.model_copy(update={"replacing": "up_3"}))
    else:
        del stores.table.kbs["kb_1"]

    outcome = run(stores, objects, memos)

    assert (outcome.result, outcome.reason) == ("rejected", reason)
    assert memos.calls["update_knowledgebase_file"] == 0


@pytest.mark.parametrize(("during_update", "reason"), [("file-deleted", FILE_GONE), ("kb-deleted", KB_GONE)])
def test_given_the_file_or_kb_deleted_while_memos_updates_then_rejected_and_the_memos_file_left_to_its_cleanup(
    stores: FakeStores, objects: FakeUploadObjects, memos: FakeKnowledgeEngine, file: FileRecord,
    during_update: str, reason: str,
) -> None:
    replace(stores, objects, file)
    real = memos.update_knowledgebase_file

    def deleted_meanwhile(file_id, file_input):  # type: ignore[no-untyped-def]
        updated = real(file_id, file_input)
        if during_update == "file-deleted":
            del stores.table.files[("kb_1", "fi_1")]
        else:
            del stores.table.kbs["kb_1"]
        return updated

    memos.update_knowledgebase_file = deleted_meanwhile  # type: ignore[method-assign]

    outcome = run(stores, objects, memos)

    assert (outcome.result, outcome.reason) == ("rejected", reason)
    assert memos.deleted_files == []  # the delete's cleanup removes it, new version and all
    assert stores.contents.get_upload("kb_1", "up_2").state == "rejected"  # type: ignore[union-attr]
