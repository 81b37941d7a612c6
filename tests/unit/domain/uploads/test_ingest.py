"""``memmy_kb.domain.uploads.ingest``: the upload's state machine, transition by transition, on the fakes.

pending -> submitting (verify, hold) -> submitted (MemOS add, record), and every way off that path:
rejected, released for a retry, left submitting when MemOS's answer is unknown, taken back.
"""

from __future__ import annotations

import base64
import hashlib

import pytest

from memmy_kb.domain.engine import MemosUnavailable
from memmy_kb.domain.knowledge_bases.naming import memos_file_name
from memmy_kb.domain.storage import ObjectChanged, verified_object_key
from memmy_kb.domain.uploads import delivery, ingest
from memmy_kb.domain.uploads.ingest import (
    FOLDER_GONE,
    KB_GONE,
    LARGER,
    MEMOS_DOWN,
    SHA256_MISMATCH,
    SMALLER,
    Ingestion,
    RetryLater,
)
from memmy_kb.domain.uploads.verification import REASONS
from memmy_kb.records import KbCapacity, KnowledgeBaseRecord, UploadRecord
from tests.support.factories import T0, UNCAPPED, folder_record, kb_record, owner_grant_for, upload_record
from tests.support.fakes import FakeKnowledgeEngine, FakeStores, FakeUploadObjects, memos_error

TEXT = "# 会议纪要\n\nThe release checklist is reviewed on Mondays.\n".encode()
KEY = "uploads/kb_1/up_1"
ROOM = KbCapacity(max_files=10, max_bytes=10_000)


@pytest.fixture
def objects() -> FakeUploadObjects:
    return FakeUploadObjects()


@pytest.fixture
def kb(stores: FakeStores, memos: FakeKnowledgeEngine) -> KnowledgeBaseRecord:
    record = kb_record("kb_1", memos_kb_id=memos.create_knowledgebase("memmy:kb_1"))
    stores.table.seed(record, owner_grant_for(record), folder_record("fo_docs"))
    return record


def pending(
    stores: FakeStores,
    objects: FakeUploadObjects,
    kb: KnowledgeBaseRecord,
    data: bytes = TEXT,
    *,
    filename: str = "notes.md",
    declared: int | None = None,
    folder_id: str | None = None,
) -> UploadRecord:
    """An issued upload whose bytes the client has POSTed."""
    upload = upload_record(
        "up_1", filename=filename, size_bytes=len(data) if declared is None else declared, folder_id=folder_id, created_at=T0
    ).model_copy(update={"memos_kb_id": kb.memos_kb_id})
    stores.table.seed(upload)
    objects.put(KEY, data)
    return upload


def config(*, inline_max_bytes: int = 1024, final_attempt: bool = False) -> ingest.IngestConfig:
    return ingest.IngestConfig(
        inline_max_bytes=inline_max_bytes,
        get_url_ttl_seconds=120,
        final_attempt=final_attempt,
        capacity=ROOM,
        activity_retention_days=30,
    )


def run(
    stores: FakeStores, objects: FakeUploadObjects, memos: FakeKnowledgeEngine, key: str = KEY, **options: object
) -> ingest.IngestOutcome:
    return delivery.ingest_object(
        stores.kbs, stores.contents, objects, memos, key, config=config(**options), clock=lambda: T0  # type: ignore[arg-type]
    )


def state(stores: FakeStores) -> UploadRecord:
    upload = stores.contents.get_upload("kb_1", "up_1")
    assert upload is not None
    return upload


# -- the path: verify, hold, submit, record -----------------------------------------------------------


def test_given_a_small_pending_upload_when_ingested_then_memos_gets_its_bytes_inline_and_the_file_is_recorded(
    stores: FakeStores, objects: FakeUploadObjects, memos: FakeKnowledgeEngine, kb: KnowledgeBaseRecord
) -> None:
    pending(stores, objects, kb, folder_id="fo_docs")

    outcome = run(stores, objects, memos)

    assert (outcome.result, outcome.upload_id) == ("submitted", "up_1")
    [sent] = memos.inputs
    assert sent.name == memos_file_name("notes.md", "up_1")
    assert sent.content == "data:text/markdown;base64," + base64.b64encode(TEXT).decode()
    [file] = stores.contents.query_kb_items("kb_1")[1]
    assert (file.name, file.folder_id, file.size_bytes) == ("notes.md", "fo_docs", len(TEXT))
    assert file.memos_file_id in memos.knowledge_bases[kb.memos_kb_id].files
    assert (state(stores).state, state(stores).file_id) == ("submitted", file.file_id)
    assert stores.kbs.get_kb("kb_1").file_count == 1  # type: ignore[union-attr]
    assert (objects.calls["read_start"], objects.calls["head"]) == (1, 0)  # one GET, no HEAD


def test_given_a_large_upload_when_ingested_then_memos_fetches_a_verified_copy_by_a_short_lived_url(
    stores: FakeStores, objects: FakeUploadObjects, memos: FakeKnowledgeEngine, kb: KnowledgeBaseRecord
) -> None:
    pending(stores, objects, kb)

    assert run(stores, objects, memos, inline_max_bytes=16).result == "submitted"

    verified = verified_object_key("kb_1", "up_1")
    assert objects.objects[verified] == TEXT
    [sent] = memos.inputs
    assert sent.content == objects.presign_get(verified, expires_in=120)


# -- content hashes ----------------------------------------------------------------------------------

PDF = b"%PDF-1.7\n" + b"1 0 obj << >> endobj\n" * 40 + b"startxref\n0\n%%EOF\n"


@pytest.mark.parametrize(
    ("filename", "data", "inline_max_bytes", "streams"),
    [
        ("notes.md", TEXT, 1024, 0),  # read whole by one GET: hashed in memory
        ("notes.md", TEXT, 16, 1),  # large text: hashed in the UTF-8 check's one stream
        ("report.pdf", PDF, 16, 1),  # large binary, checked by a few ranges: one stream for the hash
    ],
    ids=["small", "large-text", "large-pdf"],
)
def test_given_an_upload_when_ingested_then_the_file_records_the_sha256_of_its_bytes_in_one_pass(
    stores: FakeStores,
    objects: FakeUploadObjects,
    memos: FakeKnowledgeEngine,
    kb: KnowledgeBaseRecord,
    filename: str,
    data: bytes,
    inline_max_bytes: int,
    streams: int,
) -> None:
    pending(stores, objects, kb, data, filename=filename)

    assert run(stores, objects, memos, inline_max_bytes=inline_max_bytes).result == "submitted"

    [file] = stores.contents.query_kb_items("kb_1")[1]
    assert (file.sha256, file.version) == (hashlib.sha256(data).hexdigest(), 1)
    assert state(stores).content_sha256 == file.sha256
    assert objects.calls["iter_chunks"] == streams


@pytest.mark.parametrize("inline_max_bytes", [1024, 16], ids=["small", "large"])
def test_given_a_declared_sha256_when_the_bytes_differ_then_rejected_before_memos_and_when_equal_submitted(
    stores: FakeStores, objects: FakeUploadObjects, memos: FakeKnowledgeEngine, kb: KnowledgeBaseRecord,
    inline_max_bytes: int,
) -> None:
    upload = pending(stores, objects, kb)
    stores.table.seed(upload.model_copy(update={"sha256": hashlib.sha256(b"other bytes").hexdigest()}))

    assert run(stores, objects, memos, inline_max_bytes=inline_max_bytes).reason == SHA256_MISMATCH
    assert (state(stores).state, memos.calls["add_knowledgebase_files"]) == ("rejected", 0)

    stores.table.seed(upload.model_copy(update={"upload_id": "up_2", "sha256": hashlib.sha256(TEXT).hexdigest()}))
    objects.put("uploads/kb_1/up_2", TEXT)
    assert run(stores, objects, memos, "uploads/kb_1/up_2", inline_max_bytes=inline_max_bytes).result == "submitted"


@pytest.mark.parametrize(("declared", "reason"), [(len(TEXT) - 1, LARGER), (len(TEXT) + 1, SMALLER)])
def test_given_a_size_other_than_declared_when_ingested_then_rejected_with_the_reason_and_the_bytes_deleted(
    stores: FakeStores,
    objects: FakeUploadObjects,
    memos: FakeKnowledgeEngine,
    kb: KnowledgeBaseRecord,
    declared: int,
    reason: str,
) -> None:
    pending(stores, objects, kb, declared=declared)

    outcome = run(stores, objects, memos)

    assert (outcome.result, outcome.reason) == ("rejected", reason)
    assert (state(stores).state, state(stores).reason) == ("rejected", reason)
    assert objects.objects == {}
    assert memos.calls["add_knowledgebase_files"] == 0


def test_given_bytes_that_do_not_fit_the_extension_when_ingested_then_rejected_before_memos_is_asked(
    stores: FakeStores, objects: FakeUploadObjects, memos: FakeKnowledgeEngine, kb: KnowledgeBaseRecord
) -> None:
    pending(stores, objects, kb, filename="report.pdf")

    assert run(stores, objects, memos).reason == REASONS["pdf"]
    assert (memos.total_calls, stores.table.files) == (1, {})  # the KB's creation only


def test_given_a_repeated_event_when_ingested_again_then_it_is_ignored_and_memos_added_once(
    stores: FakeStores, objects: FakeUploadObjects, memos: FakeKnowledgeEngine, kb: KnowledgeBaseRecord
) -> None:
    pending(stores, objects, kb)
    run(stores, objects, memos)

    assert run(stores, objects, memos).result == "ignored"
    assert memos.calls["add_knowledgebase_files"] == 1


def test_given_another_delivery_holds_the_upload_when_holding_then_false_and_its_hold_stands(
    stores: FakeStores, objects: FakeUploadObjects, memos: FakeKnowledgeEngine, kb: KnowledgeBaseRecord
) -> None:
    upload = pending(stores, objects, kb)
    ids = iter(["att-first", "att-second"])
    first, second = (
        Ingestion(stores.kbs, stores.contents, objects, memos, upload, config(), new_id=lambda: next(ids))
        for _ in range(2)
    )

    assert (first.hold(), second.hold()) == (True, False)
    assert (state(stores).state, state(stores).attempt_id) == ("submitting", "att-first")
    assert second.attempt_id is None


def test_given_the_kb_deleted_before_the_hold_when_ingested_then_rejected_as_gone(
    stores: FakeStores, objects: FakeUploadObjects, memos: FakeKnowledgeEngine, kb: KnowledgeBaseRecord
) -> None:
    pending(stores, objects, kb)
    del stores.table.kbs["kb_1"]

    assert run(stores, objects, memos).reason == KB_GONE
    assert memos.calls["add_knowledgebase_files"] == 0


# -- MemOS's answers -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "reason"),
    [(50107, "The knowledge engine does not accept this type of file."), (40003, ingest.MEMOS_REFUSED), (50120, KB_GONE)],
)
def test_given_memos_refuses_the_file_when_ingested_then_rejected_with_a_reason_the_user_can_read(
    stores: FakeStores,
    objects: FakeUploadObjects,
    memos: FakeKnowledgeEngine,
    kb: KnowledgeBaseRecord,
    code: int,
    reason: str,
) -> None:
    pending(stores, objects, kb)
    memos.fail("add_knowledgebase_files", memos_error(code=code), times=1)

    outcome = run(stores, objects, memos)

    assert (outcome.result, outcome.reason) == ("rejected", reason)
    assert state(stores).state == "rejected"
    assert objects.objects == {}


@pytest.mark.parametrize(
    "error",
    [
        MemosUnavailable("connection refused", endpoint="/add", request_sent=False),
        memos_error(code=50004),  # MemOS answered with its own error: it stored nothing
    ],
    ids=["never-sent", "answered-failure"],
)
def test_given_memos_certainly_stored_nothing_when_ingested_then_released_to_pending_for_a_retry(
    stores: FakeStores, objects: FakeUploadObjects, memos: FakeKnowledgeEngine, kb: KnowledgeBaseRecord, error: Exception
) -> None:
    pending(stores, objects, kb)
    memos.fail("add_knowledgebase_files", error, times=1)

    with pytest.raises(RetryLater):
        run(stores, objects, memos)

    assert (state(stores).state, state(stores).attempt_id) == ("pending", None)
    assert KEY in objects.objects
    assert run(stores, objects, memos).result == "submitted"  # the redelivered message
    assert len(stores.table.files) == 1


def test_given_memos_down_on_the_last_delivery_when_ingested_then_rejected_instead_of_waiting_again(
    stores: FakeStores, objects: FakeUploadObjects, memos: FakeKnowledgeEngine, kb: KnowledgeBaseRecord
) -> None:
    pending(stores, objects, kb)
    memos.fail("add_knowledgebase_files", memos_error(code=50004), times=1)

    outcome = run(stores, objects, memos, final_attempt=True)

    assert (outcome.result, outcome.reason) == ("rejected", MEMOS_DOWN)


def test_given_memos_answer_lost_when_ingested_then_the_outcome_is_unknown_and_the_upload_left_submitting(
    stores: FakeStores, objects: FakeUploadObjects, memos: FakeKnowledgeEngine, kb: KnowledgeBaseRecord
) -> None:
    pending(stores, objects, kb)
    memos.fail("add_knowledgebase_files", MemosUnavailable("read timeout", endpoint="/add"), times=1)

    outcome = run(stores, objects, memos, final_attempt=True)

    assert outcome.result == "unknown"
    held = state(stores)
    assert (held.state, held.submitting_at) == ("submitting", T0)
    assert held.attempt_id is not None
    assert KEY in objects.objects  # the reconciler may still requeue it
    assert stores.table.files == {}


# -- record, take back, reject --------------------------------------------------------------------------


def held(
    stores: FakeStores, objects: FakeUploadObjects, memos: FakeKnowledgeEngine, kb: KnowledgeBaseRecord, **kwargs: object
) -> tuple[Ingestion, str]:
    """An upload held by this run, its file already added to MemOS."""
    upload = pending(stores, objects, kb, **kwargs)  # type: ignore[arg-type]
    ingestion = Ingestion(stores.kbs, stores.contents, objects, memos, upload, config(), clock=lambda: T0)
    assert ingestion.hold()
    added = memos.add_file(kb.memos_kb_id, memos_file_name(upload.filename, upload.upload_id))
    return ingestion, added.id


@pytest.mark.parametrize(("gone", "reason"), [("kb", KB_GONE), ("folder", FOLDER_GONE)])
def test_given_the_kb_or_folder_deleted_while_memos_added_when_recording_then_the_file_is_taken_back(
    stores: FakeStores,
    objects: FakeUploadObjects,
    memos: FakeKnowledgeEngine,
    kb: KnowledgeBaseRecord,
    gone: str,
    reason: str,
) -> None:
    ingestion, memos_file_id = held(stores, objects, memos, kb, folder_id="fo_docs")
    if gone == "kb":
        del stores.table.kbs["kb_1"]
    else:
        del stores.table.folders[("kb_1", "fo_docs")]

    outcome = ingestion.record(memos_file_id)

    assert (outcome.result, outcome.reason) == ("rejected", reason)
    assert memos.deleted_files == [memos_file_id]
    assert (stores.table.files, objects.objects) == ({}, {})


def test_given_the_upload_taken_over_while_memos_added_when_recording_then_its_file_is_taken_back_quietly(
    stores: FakeStores, objects: FakeUploadObjects, memos: FakeKnowledgeEngine, kb: KnowledgeBaseRecord
) -> None:
    ingestion, memos_file_id = held(stores, objects, memos, kb, folder_id="fo_docs")
    # A folder delete's sweep rejected the upload meanwhile (it holds no attempt of ours now).
    stores.contents.update_upload_rejected("kb_1", "up_1", reason=FOLDER_GONE, expires_at=1, attempt_id=ingestion.attempt_id)

    outcome = ingestion.record(memos_file_id)

    assert outcome.result == "ignored"
    assert memos.deleted_files == [memos_file_id]
    assert (state(stores).state, state(stores).reason) == ("rejected", FOLDER_GONE)


def test_given_the_reconciler_recorded_it_first_when_recording_then_ignored_and_the_memos_file_kept(
    stores: FakeStores, objects: FakeUploadObjects, memos: FakeKnowledgeEngine, kb: KnowledgeBaseRecord
) -> None:
    ingestion, memos_file_id = held(stores, objects, memos, kb)
    reconciler_run = Ingestion(
        stores.kbs, stores.contents, objects, memos, state(stores), config(), attempt_id=ingestion.attempt_id
    )
    assert reconciler_run.record(memos_file_id).result == "submitted"

    assert ingestion.record(memos_file_id).result == "ignored"
    assert memos.deleted_files == []
    assert len(stores.table.files) == 1


def test_given_memos_failing_the_take_back_when_recording_then_the_outcome_is_unknown_for_the_reconciler(
    stores: FakeStores, objects: FakeUploadObjects, memos: FakeKnowledgeEngine, kb: KnowledgeBaseRecord
) -> None:
    ingestion, memos_file_id = held(stores, objects, memos, kb)
    del stores.table.kbs["kb_1"]
    memos.fail("delete_knowledgebase_files", memos_error(code=50004), times=1)

    assert ingestion.record(memos_file_id).result == "unknown"
    assert memo_ids(memos, kb) == [memos_file_id]  # residue the reconciler's scan removes


def memo_ids(memos: FakeKnowledgeEngine, kb: KnowledgeBaseRecord) -> list[str]:
    return list(memos.knowledge_bases[kb.memos_kb_id].files)


def test_given_an_upload_decided_elsewhere_when_released_or_rejected_then_nothing_changes(
    stores: FakeStores, objects: FakeUploadObjects, memos: FakeKnowledgeEngine, kb: KnowledgeBaseRecord
) -> None:
    ingestion, _ = held(stores, objects, memos, kb)
    stores.contents.update_upload_released("kb_1", "up_1", attempt_id=ingestion.attempt_id or "", expires_at=1)
    stores.contents.update_upload_submitting("kb_1", "up_1", attempt_id="att-other", now=T0, keep_until=1, owner_id="alice", size=0, capacity=UNCAPPED)

    ingestion.release()
    assert ingestion.reject("too late").result == "ignored"

    assert (state(stores).state, state(stores).attempt_id) == ("submitting", "att-other")
    assert KEY in objects.objects


@pytest.mark.parametrize(
    ("now", "deleted"),
    [
        pytest.param(None, True, id="gone-with-its-kb"),
        pytest.param("rejected", True, id="rejected"),
        pytest.param("expired", True, id="expired"),
        pytest.param("pending", False, id="pending-another-delivery"),
        pytest.param("submitting", False, id="submitting-another-delivery"),
        pytest.param("submitted", False, id="submitted"),
    ],
)
def test_given_a_refused_rejection_when_the_upload_is_gone_or_final_then_its_bytes_are_deleted_else_kept(
    stores: FakeStores, objects: FakeUploadObjects, memos: FakeKnowledgeEngine, kb: KnowledgeBaseRecord,
    now: str | None, deleted: bool,
) -> None:
    # Given this run's rejection refused because the upload changed meanwhile (``now``: its state then)
    upload = pending(stores, objects, kb)
    objects.put(verified_object_key("kb_1", "up_1"), TEXT)
    ingestion = Ingestion(stores.kbs, stores.contents, objects, memos, upload, config(), clock=lambda: T0)
    if now is None:
        del stores.table.uploads[("kb_1", "up_1")]
    else:
        update = {"state": now, "attempt_id": "att-other" if now == "submitting" else None}
        stores.table.uploads[("kb_1", "up_1")] = upload.model_copy(update=update)
    ingestion.attempt_id = "att-mine"  # held once, lost since (pending: a release happened meanwhile)

    assert ingestion.reject(KB_GONE).result == "ignored"

    expected = {} if deleted else {KEY: TEXT, verified_object_key("kb_1", "up_1"): TEXT}
    assert objects.objects == expected


def test_given_the_kbs_cleanup_removing_the_upload_during_the_hold_when_ingested_then_no_bytes_remain(
    stores: FakeStores, objects: FakeUploadObjects, memos: FakeKnowledgeEngine, kb: KnowledgeBaseRecord,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given the object arrived after the cleanup emptied S3; the cleanup's table step lands during the hold
    pending(stores, objects, kb)
    original = stores.contents.update_upload_submitting

    def table_deleted_meanwhile(*args: object, **kwargs: object) -> None:
        del stores.table.kbs["kb_1"]
        del stores.table.uploads[("kb_1", "up_1")]
        original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(stores.contents, "update_upload_submitting", table_deleted_meanwhile)

    assert run(stores, objects, memos).result == "ignored"
    assert objects.objects == {}
    assert memos.calls["add_knowledgebase_files"] == 0


# -- events that find nothing to do -------------------------------------------------------------------


def test_given_an_object_without_an_upload_record_when_ingested_then_ours_are_deleted_and_others_left(
    stores: FakeStores, objects: FakeUploadObjects, memos: FakeKnowledgeEngine
) -> None:
    objects.put("uploads/kb_1/up_00ff", b"x")
    objects.put("uploads/not-ours.txt", b"x")

    assert run(stores, objects, memos, "uploads/kb_1/up_00ff").result == "ignored"
    assert run(stores, objects, memos, "uploads/not-ours.txt").result == "ignored"
    assert sorted(objects.objects) == ["uploads/not-ours.txt"]


def test_given_a_rejected_upload_when_its_event_comes_again_then_both_copies_of_its_bytes_are_deleted(
    stores: FakeStores, objects: FakeUploadObjects, memos: FakeKnowledgeEngine, kb: KnowledgeBaseRecord
) -> None:
    stores.table.seed(upload_record("up_1", state="rejected", reason="bad", created_at=T0))
    objects.put(KEY, TEXT)
    objects.put(verified_object_key("kb_1", "up_1"), TEXT)

    assert run(stores, objects, memos).result == "ignored"
    assert objects.objects == {}


def test_given_the_object_gone_or_replaced_while_read_when_ingested_then_ignored_or_retried_and_still_pending(
    stores: FakeStores, objects: FakeUploadObjects, memos: FakeKnowledgeEngine, kb: KnowledgeBaseRecord
) -> None:
    pending(stores, objects, kb)
    objects.fail("copy", ObjectChanged(KEY))

    with pytest.raises(RetryLater):
        run(stores, objects, memos, inline_max_bytes=16)
    assert state(stores).state == "pending"
    objects.delete(KEY)
    assert run(stores, objects, memos).result == "ignored"
    assert state(stores).state == "pending"
