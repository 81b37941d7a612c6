"""``ContentStore``'s contract for uploads, on the fake and on DynamoDB: an upload's states, the file it
becomes, and the KB's capacity counted on META."""

from __future__ import annotations

import pytest

from memmy_kb.domain.storage import ConditionFailed, ItemMissing
from memmy_kb.records import ActivityRecord, FileRecord, KbCapacity, KnowledgeBaseRecord, UploadRecord
from tests.support.factories import (
    T0,
    UNCAPPED,
    activity_for,
    at,
    file_record,
    folder_record,
    kb_record,
    upload_record,
)
from tests.support.store_contract import Backend, refused

# == ContentStore: uploads ============================================================================


def test_given_the_owner_when_an_upload_is_put_then_it_reads_back_pending(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    upload = upload_record("up_1", folder_id="fo_docs", created_at=T0, expires_at=1_900_000_000)

    backend.contents.put_upload(upload, capacity=UNCAPPED)

    assert backend.contents.get_upload("kb_1", "up_1") == upload


@pytest.mark.parametrize("state", ["pending", "submitting", "submitted"])
def test_given_an_undecided_or_submitted_upload_when_deleted_as_decided_then_condition_failed_and_it_stays(
    backend: Backend, kb: KnowledgeBaseRecord, state: str
) -> None:
    backend.seed(upload_record("up_1", state=state))  # type: ignore[arg-type]

    assert refused(ConditionFailed, lambda: backend.contents.delete_decided_upload("kb_1", "up_1")) == "upload"
    assert backend.contents.get_upload("kb_1", "up_1") is not None


@pytest.mark.parametrize("state", ["rejected", "expired"])
def test_given_a_decided_upload_when_deleted_as_decided_then_it_is_gone_and_again_is_fine(
    backend: Backend, kb: KnowledgeBaseRecord, state: str
) -> None:
    backend.seed(upload_record("up_1", state=state))  # type: ignore[arg-type]

    backend.contents.delete_decided_upload("kb_1", "up_1")
    backend.contents.delete_decided_upload("kb_1", "up_1")
    backend.contents.delete_decided_upload("kb_1", "up_never")

    assert backend.contents.get_upload("kb_1", "up_1") is None


@pytest.mark.parametrize(
    ("kb_id", "owner"), [("kb_gone", "alice"), ("kb_1", "bob")], ids=["missing", "other-owner"]
)
def test_given_no_kb_or_another_owner_when_an_upload_is_put_then_item_missing_kb(
    backend: Backend, kb: KnowledgeBaseRecord, kb_id: str, owner: str
) -> None:
    upload = upload_record("up_1", kb_id=kb_id, owner_id=owner)

    assert refused(ItemMissing, lambda: backend.contents.put_upload(upload, capacity=UNCAPPED)) == "kb"
    assert backend.contents.get_upload(kb_id, "up_1") is None


def test_given_an_upload_id_in_use_when_put_again_then_item_missing_kb_and_the_first_is_kept(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    first = upload_record("up_1", filename="first.md", created_at=T0)
    backend.contents.put_upload(first, capacity=UNCAPPED)

    assert (
        refused(ItemMissing, lambda: backend.contents.put_upload(upload_record("up_1", filename="second.md"), capacity=UNCAPPED))
        == "kb"
    )
    assert backend.contents.get_upload("kb_1", "up_1") == first


@pytest.fixture
def pending(backend: Backend, kb: KnowledgeBaseRecord) -> UploadRecord:
    upload = upload_record("up_1", created_at=T0, expires_at=1_900_000_000)
    backend.contents.put_upload(upload, capacity=UNCAPPED)
    return upload


def submit(
    backend: Backend, attempt_id: str = "att-1", keep_until: int = 1_900_100_000, sha256: str | None = None
) -> UploadRecord:
    backend.contents.update_upload_submitting(
        "kb_1", "up_1", attempt_id=attempt_id, now=at(30), keep_until=keep_until, owner_id="alice", size=0,
        capacity=UNCAPPED, sha256=sha256,
    )
    held = backend.contents.get_upload("kb_1", "up_1")
    assert held is not None
    return held


def test_given_a_pending_upload_when_submitting_then_it_is_held_by_the_attempt(
    backend: Backend, pending: UploadRecord
) -> None:
    held = submit(backend)

    expected = pending.model_copy(
        update={
            "state": "submitting",
            "attempt_id": "att-1",
            "submitting_at": at(30),
            "expires_at": 1_900_100_000,
        }
    )
    assert held == expected
    assert backend.contents.get_upload("kb_1", "up_1") == expected


def test_given_the_hash_the_ingest_computed_when_submitting_then_the_upload_keeps_it(
    backend: Backend, pending: UploadRecord
) -> None:
    assert submit(backend, sha256="ab" * 32).content_sha256 == "ab" * 32


def test_given_an_upload_already_submitting_when_submitting_again_then_condition_failed_upload(
    backend: Backend, pending: UploadRecord
) -> None:
    first = submit(backend, "att-1")

    assert refused(ConditionFailed, lambda: submit(backend, "att-2")) == "upload"
    assert backend.contents.get_upload("kb_1", "up_1") == first


def test_given_no_upload_when_submitting_then_condition_failed_upload_and_none_is_created(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    assert refused(ConditionFailed, lambda: submit(backend)) == "upload"
    assert backend.contents.get_upload("kb_1", "up_1") is None


def test_given_a_held_upload_when_released_then_it_is_pending_again_without_holder(
    backend: Backend, pending: UploadRecord
) -> None:
    submit(backend)

    backend.contents.update_upload_released("kb_1", "up_1", attempt_id="att-1", expires_at=1_900_200_000)

    assert backend.contents.get_upload("kb_1", "up_1") == pending.model_copy(
        update={"expires_at": 1_900_200_000}
    )


@pytest.mark.parametrize("held", [True, False], ids=["other-attempt", "pending"])
def test_given_another_holder_or_none_when_released_then_condition_failed_upload(
    backend: Backend, pending: UploadRecord, held: bool
) -> None:
    if held:
        submit(backend, "att-1")
    before = backend.contents.get_upload("kb_1", "up_1")

    assert (
        refused(
            ConditionFailed,
            lambda: backend.contents.update_upload_released("kb_1", "up_1", attempt_id="att-2", expires_at=1),
        )
        == "upload"
    )
    assert backend.contents.get_upload("kb_1", "up_1") == before


def test_given_a_pending_upload_when_rejected_without_attempt_then_rejected_with_reason(
    backend: Backend, pending: UploadRecord
) -> None:
    backend.contents.update_upload_rejected("kb_1", "up_1", reason="Not a PDF.", expires_at=1_900_300_000, attempt_id=None)

    assert backend.contents.get_upload("kb_1", "up_1") == pending.model_copy(
        update={"state": "rejected", "reason": "Not a PDF.", "expires_at": 1_900_300_000}
    )


def test_given_a_held_upload_when_its_holder_rejects_it_then_rejected_and_the_holder_fields_remain(
    backend: Backend, pending: UploadRecord
) -> None:
    held = submit(backend)

    backend.contents.update_upload_rejected(
        "kb_1", "up_1", reason="MemOS refused it.", expires_at=5, attempt_id="att-1"
    )

    assert backend.contents.get_upload("kb_1", "up_1") == held.model_copy(
        update={"state": "rejected", "reason": "MemOS refused it.", "expires_at": 5}
    )


@pytest.mark.parametrize(
    ("submitted_by", "rejected_by"),
    [("att-1", None), (None, "att-1"), ("att-1", "att-2")],
    ids=["held-but-no-attempt", "pending-but-attempt", "other-attempt"],
)
def test_given_the_wrong_state_or_holder_when_rejecting_then_condition_failed_upload(
    backend: Backend, pending: UploadRecord, submitted_by: str | None, rejected_by: str | None
) -> None:
    if submitted_by:
        submit(backend, submitted_by)
    before = backend.contents.get_upload("kb_1", "up_1")

    assert (
        refused(
            ConditionFailed,
            lambda: backend.contents.update_upload_rejected(
                "kb_1", "up_1", reason="x", expires_at=1, attempt_id=rejected_by
            ),
        )
        == "upload"
    )
    assert backend.contents.get_upload("kb_1", "up_1") == before


def test_given_a_rejected_or_missing_upload_when_rejecting_again_then_condition_failed_upload(
    backend: Backend, pending: UploadRecord
) -> None:
    backend.contents.update_upload_rejected("kb_1", "up_1", reason="first", expires_at=1, attempt_id=None)

    assert (
        refused(
            ConditionFailed,
            lambda: backend.contents.update_upload_rejected("kb_1", "up_1", reason="second", expires_at=2, attempt_id=None),
        )
        == "upload"
    )
    assert backend.contents.get_upload("kb_1", "up_1").reason == "first"  # type: ignore[union-attr]
    assert (
        refused(
            ConditionFailed,
            lambda: backend.contents.update_upload_rejected("kb_1", "up_none", reason="x", expires_at=2, attempt_id=None),
        )
        == "upload"
    )


# -- put_file_for_upload ---------------------------------------------------------------------------


def held_upload(backend: Backend, *, kb_id: str = "kb_1", folder_id: str | None = None) -> UploadRecord:
    """An upload mid-ingest: submitting, held by att-1 (seeded, so that its KB need not exist)."""
    upload = upload_record(
        "up_1",
        kb_id=kb_id,
        folder_id=folder_id,
        state="submitting",
        attempt_id="att-1",
        submitting_at=at(30),
        created_at=T0,
        expires_at=1_900_000_000,
    )
    backend.seed(upload)
    return upload


def the_file(kb_id: str = "kb_1", folder_id: str | None = None) -> FileRecord:
    return file_record("fi_1", kb_id=kb_id, memos_file_id="mf-9", folder_id=folder_id, upload_id="up_1")


def put_file(
    backend: Backend, file: FileRecord, *, owner: str = "alice", attempt_id: str = "att-1"
) -> FileRecord:
    return backend.contents.put_file_for_upload(
        file, owner_id=owner, attempt_id=attempt_id, expires_at=1_900_900_000, capacity=UNCAPPED, activity=activity_for("uploaded", file.kb_id, file.file_id)
    )


def test_given_a_held_upload_when_its_file_is_put_then_the_file_is_stored_and_the_upload_submitted(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    backend.seed(folder_record("fo_docs"))
    upload = held_upload(backend, folder_id="fo_docs")
    file = the_file(folder_id="fo_docs")

    stored = put_file(backend, file)

    assert stored == file
    assert backend.contents.get_file("kb_1", "fi_1") == file
    assert backend.contents.get_upload("kb_1", "up_1") == upload.model_copy(
        update={"state": "submitted", "file_id": "fi_1", "memos_file_id": "mf-9", "expires_at": 1_900_900_000}
    )


def test_given_the_folder_was_deleted_when_the_file_is_put_then_item_missing_folder_and_nothing_is_written(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    upload = held_upload(backend, folder_id="fo_gone")

    assert refused(ItemMissing, lambda: put_file(backend, the_file(folder_id="fo_gone"))) == "folder"
    assert backend.contents.get_file("kb_1", "fi_1") is None
    assert backend.contents.get_upload("kb_1", "up_1") == upload


@pytest.mark.parametrize("folder_id", [None, "fo_gone"])
def test_given_no_kb_when_the_file_is_put_then_item_missing_kb_and_nothing_is_written(
    backend: Backend, folder_id: str | None
) -> None:
    upload = held_upload(backend, kb_id="kb_gone", folder_id=folder_id)

    assert (
        refused(ItemMissing, lambda: put_file(backend, the_file(kb_id="kb_gone", folder_id=folder_id)))
        == "kb"
    )
    assert backend.contents.get_file("kb_gone", "fi_1") is None
    assert backend.contents.get_upload("kb_gone", "up_1") == upload


def test_given_the_kb_changed_hands_when_the_file_is_put_then_item_missing_kb(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    held_upload(backend)

    assert refused(ItemMissing, lambda: put_file(backend, the_file(), owner="bob")) == "kb"
    assert backend.contents.get_file("kb_1", "fi_1") is None


@pytest.mark.parametrize("folder_id", [None, "fo_gone"])
def test_given_another_attempt_when_the_file_is_put_then_condition_failed_upload_and_no_file(
    backend: Backend, kb: KnowledgeBaseRecord, folder_id: str | None
) -> None:
    upload = held_upload(backend, folder_id=folder_id)

    assert refused(
        ConditionFailed, lambda: put_file(backend, the_file(folder_id=folder_id), attempt_id="att-2")
    ) == ("upload")
    assert backend.contents.get_file("kb_1", "fi_1") is None
    assert backend.contents.get_upload("kb_1", "up_1") == upload


def test_given_the_upload_is_not_submitting_when_the_file_is_put_then_condition_failed_upload(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    backend.contents.put_upload(upload_record("up_1"), capacity=UNCAPPED)

    assert refused(ConditionFailed, lambda: put_file(backend, the_file())) == "upload"
    assert backend.contents.get_file("kb_1", "fi_1") is None


def test_given_the_file_already_exists_when_put_again_then_condition_failed_upload(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    held_upload(backend)
    existing = file_record("fi_1", memos_file_id="mf-old", upload_id="up_0")
    backend.seed(existing)

    assert refused(ConditionFailed, lambda: put_file(backend, the_file())) == "upload"
    assert backend.contents.get_file("kb_1", "fi_1") == existing
    assert backend.contents.get_upload("kb_1", "up_1").state == "submitting"  # type: ignore[union-attr]


# -- capacity: files and bytes per KB, counted on META -------------------------------------------

ROOM = KbCapacity(max_files=2, max_bytes=100)


def test_given_room_when_files_are_put_then_meta_counts_them_and_a_repeat_counts_nothing(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    held_upload(backend)
    backend.contents.put_file_for_upload(
        file_record("fi_1", size_bytes=60, upload_id="up_1"),
        owner_id="alice", attempt_id="att-1", expires_at=1, capacity=ROOM,
        activity=activity_for("uploaded", "kb_1", "file"),
    )

    with pytest.raises(ConditionFailed):
        backend.contents.put_file_for_upload(
            file_record("fi_2", size_bytes=60, upload_id="up_1"),
            owner_id="alice", attempt_id="att-1", expires_at=1, capacity=ROOM,
            activity=activity_for("uploaded", "kb_1", "file"),
        )
    stored = backend.kbs.get_kb("kb_1")
    assert stored is not None
    assert (stored.file_count, stored.bytes_used) == (1, 60)


@pytest.mark.parametrize(
    ("count", "used", "size", "which"),
    [(2, 10, 1, "kb_files"), (1, 60, 41, "kb_bytes")],
    ids=["files", "bytes"],
)
def test_given_a_full_kb_when_an_upload_is_put_held_or_recorded_then_condition_failed_names_the_cap(
    backend: Backend, count: int, used: int, size: int, which: str
) -> None:
    backend.seed(kb_record("kb_1").model_copy(update={"file_count": count, "bytes_used": used}))
    assert refused(ConditionFailed, lambda: backend.contents.put_upload(
        upload_record("up_9", size_bytes=size), capacity=ROOM
    )) == which
    held_upload(backend)
    pending = upload_record("up_2", size_bytes=size)
    backend.seed(pending)
    assert refused(ConditionFailed, lambda: backend.contents.update_upload_submitting(
        "kb_1", "up_2", attempt_id="a", now=at(30), keep_until=1, owner_id="alice", size=size, capacity=ROOM
    )) == which
    assert refused(ConditionFailed, lambda: backend.contents.put_file_for_upload(
        file_record("fi_1", size_bytes=size, upload_id="up_1"),
        owner_id="alice", attempt_id="att-1", expires_at=1, capacity=ROOM,
        activity=activity_for("uploaded", "kb_1", "file"),
    )) == which
    assert backend.contents.get_upload("kb_1", "up_9") is None
    assert backend.contents.get_upload("kb_1", "up_2") == pending
    assert backend.contents.get_file("kb_1", "fi_1") is None
    stored = backend.kbs.get_kb("kb_1")
    assert stored is not None
    assert (stored.file_count, stored.bytes_used) == (count, used)


def test_given_no_kb_or_another_owner_when_held_then_item_missing_kb_and_it_stays_pending(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    pending = upload_record("up_2")
    backend.seed(pending, upload_record("up_3", kb_id="kb_gone"))
    hold = backend.contents.update_upload_submitting
    assert refused(ItemMissing, lambda: hold(
        "kb_1", "up_2", attempt_id="a", now=at(30), keep_until=1, owner_id="bob", size=0, capacity=ROOM
    )) == "kb"
    assert refused(ItemMissing, lambda: hold(
        "kb_gone", "up_3", attempt_id="a", now=at(30), keep_until=1, owner_id="alice", size=0, capacity=ROOM
    )) == "kb"
    assert backend.contents.get_upload("kb_1", "up_2") == pending


def test_given_a_recorded_upload_when_its_file_is_put_then_the_activity_entry_rides_with_it(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    held_upload(backend)
    entry = ActivityRecord(
        kb_id="kb_1", activity_id="ac_1", kind="uploaded", actor_id="alice", subject="fi_1", at=at(31), expires_at=9
    )
    backend.contents.put_file_for_upload(the_file(), owner_id="alice", attempt_id="att-1", expires_at=1, activity=entry, capacity=UNCAPPED)

    assert backend.activity.query_activity("kb_1", limit=10, cursor=None, now=0)[0] == [entry]
