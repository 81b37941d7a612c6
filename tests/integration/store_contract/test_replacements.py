"""The ports' contract for a replace (``ContentStore``'s ``ReplacementWrites``), against the fakes and the
DynamoDB adapter alike, as the rest of the suite runs the other writes: each transition of a replace, the
``replacing`` marker it keeps, the version it moves and the bytes it holds on META."""

from __future__ import annotations

import pytest

from memmy_kb.domain.storage import ConditionFailed, ItemMissing
from memmy_kb.records import CleanupPart, FileRecord, KbCapacity, KnowledgeBaseRecord, UploadRecord
from tests.support.factories import T0, UNCAPPED, activity_for, at, file_record, kb_record, replacement_record
from tests.support.store_contract import Backend, cleanup_record, entry, refused, stored_kb

TIGHT = KbCapacity(max_files=10, max_bytes=100)


@pytest.fixture
def file(backend: Backend, kb: KnowledgeBaseRecord) -> FileRecord:
    """fi_1 of kb_1, 10 bytes at version 1, counted on META."""
    record = file_record("fi_1", size_bytes=10)
    backend.seed(record, kb.model_copy(update={"file_count": 1, "bytes_used": 10}))
    return record


def stored_file(backend: Backend, file_id: str = "fi_1") -> FileRecord:
    record = backend.contents.get_file("kb_1", file_id)
    assert record is not None
    return record


def stored_upload(backend: Backend, upload_id: str) -> UploadRecord:
    record = backend.contents.get_upload("kb_1", upload_id)
    assert record is not None
    return record


def issue(backend: Backend, file: FileRecord, upload_id: str = "up_2", size: int = 30, **options: object) -> UploadRecord:
    upload = replacement_record(upload_id, file, size_bytes=size, created_at=T0, expires_at=1_900_000_000)
    backend.contents.put_replacement(upload, take_over=options.get("take_over"), capacity=options.get("capacity", UNCAPPED))  # type: ignore[arg-type]
    return upload


def hold(backend: Backend, upload: UploadRecord, attempt_id: str = "att-1", capacity: KbCapacity = UNCAPPED) -> None:
    backend.contents.update_replacement_submitting(
        upload, attempt_id=attempt_id, now=at(30), keep_until=1_900_100_000, sha256="cd" * 32, capacity=capacity
    )


def record(backend: Backend, upload: UploadRecord, file: FileRecord, attempt_id: str = "att-1") -> None:
    backend.contents.put_file_version(
        file.model_copy(
            update={"version": file.version + 1, "size_bytes": upload.size_bytes, "upload_id": upload.upload_id,
                    "sha256": "cd" * 32, "updated_at": at(40)}
        ),
        owner_id="alice",
        attempt_id=attempt_id,
        replaced_version=file.version,
        shrink=min(0, upload.size_bytes - file.size_bytes),
        expires_at=1_900_200_000,
        activity=activity_for("replaced", "kb_1", "fi_1"),
    )


# -- issuing a replace --------------------------------------------------------------------------------


def test_given_a_file_when_a_replace_is_issued_then_it_is_pending_and_the_file_marked_and_a_second_refused(
    backend: Backend, file: FileRecord
) -> None:
    upload = issue(backend, file)

    assert stored_upload(backend, "up_2") == upload
    assert stored_file(backend).replacing == "up_2"
    assert refused(ConditionFailed, lambda: issue(backend, file, "up_3")) == "file"
    assert backend.contents.get_upload("kb_1", "up_3") is None
    assert stored_file(backend).replacing == "up_2"


def test_given_a_stale_version_a_gone_file_another_owner_or_no_room_when_issued_then_each_is_named(
    backend: Backend, file: FileRecord
) -> None:
    stale = file.model_copy(update={"version": 2})
    assert refused(ConditionFailed, lambda: issue(backend, stale)) == "file"
    assert refused(ItemMissing, lambda: issue(backend, file_record("fi_gone"))) == "file"
    assert refused(ConditionFailed, lambda: issue(backend, file, size=200, capacity=TIGHT)) == "kb_bytes"
    assert issue(backend, file, "up_fits", size=100, capacity=TIGHT).upload_id == "up_fits"  # 10 + 90 <= 100
    backend.seed(kb_record("kb_1", owner_id="mallory"))
    assert refused(ItemMissing, lambda: issue(backend, file, "up_4")) == "kb"
    assert stored_file(backend).replacing == "up_fits"


@pytest.mark.parametrize(("holder_state", "taken"), [("pending", True), ("expired", True), ("submitting", False)])
def test_given_a_replace_in_flight_when_another_takes_it_over_then_only_a_holder_not_submitting_gives_way(
    backend: Backend, file: FileRecord, holder_state: str, taken: bool
) -> None:
    first = issue(backend, file)
    if holder_state == "submitting":
        hold(backend, first)
    elif holder_state == "expired":
        backend.contents.update_replacement_expired(first, expires_at=1)
        backend.seed(stored_file(backend).model_copy(update={"replacing": "up_2"}))  # the marker left behind

    attempt = lambda: issue(backend, file, "up_3", take_over="up_2")  # noqa: E731

    if taken:
        attempt()
        assert stored_file(backend).replacing == "up_3"
    else:
        assert refused(ConditionFailed, attempt) == "file"
        assert stored_file(backend).replacing == "up_2"


# -- the hold, the release, the rejections ------------------------------------------------------------


def test_given_a_pending_replace_when_held_then_submitting_with_its_hash_and_the_growth_held_on_meta(
    backend: Backend, file: FileRecord
) -> None:
    upload = issue(backend, file, size=30)

    hold(backend, upload)

    held = stored_upload(backend, "up_2")
    assert (held.state, held.attempt_id, held.content_sha256) == ("submitting", "att-1", "cd" * 32)
    assert stored_kb(backend).bytes_used == 30  # 10 + the growth of 20
    assert refused(ConditionFailed, lambda: hold(backend, upload, "att-2")) == "upload"


def test_given_the_file_gone_taken_over_or_the_kb_full_when_held_then_each_is_named_and_it_stays_pending(
    backend: Backend, file: FileRecord
) -> None:
    upload = issue(backend, file, size=30)
    assert refused(ConditionFailed, lambda: hold(backend, upload, capacity=TIGHT.model_copy(update={"max_bytes": 20}))) == "kb_bytes"
    backend.seed(stored_file(backend).model_copy(update={"replacing": "up_other"}))
    assert refused(ConditionFailed, lambda: hold(backend, upload)) == "file"
    gone = replacement_record("up_9", file_record("fi_gone"), created_at=T0, expires_at=1_900_000_000)
    backend.seed(gone)
    assert refused(ItemMissing, lambda: hold(backend, gone)) == "file"
    assert stored_upload(backend, "up_2").state == "pending"
    assert stored_kb(backend).bytes_used == 10


def test_given_a_held_replace_when_released_then_pending_again_its_growth_given_back_and_the_file_still_marked(
    backend: Backend, file: FileRecord
) -> None:
    upload = issue(backend, file, size=30)
    hold(backend, upload)

    backend.contents.update_replacement_released(upload, attempt_id="att-1", expires_at=1_900_300_000)

    assert stored_upload(backend, "up_2").state == "pending"
    assert stored_kb(backend).bytes_used == 10
    assert stored_file(backend).replacing == "up_2"
    assert refused(
        ConditionFailed, lambda: backend.contents.update_replacement_released(upload, attempt_id="att-1", expires_at=1)
    ) == "upload"


@pytest.mark.parametrize("held", [True, False], ids=["from-submitting", "from-pending"])
def test_given_a_replace_when_rejected_then_the_file_is_unmarked_and_a_held_growth_given_back(
    backend: Backend, file: FileRecord, held: bool
) -> None:
    upload = issue(backend, file, size=30)
    if held:
        hold(backend, upload)

    backend.contents.update_replacement_rejected(
        upload, reason="No.", expires_at=1_900_300_000, attempt_id="att-1" if held else None
    )

    assert (stored_upload(backend, "up_2").state, stored_upload(backend, "up_2").reason) == ("rejected", "No.")
    assert stored_file(backend).replacing is None
    assert stored_kb(backend).bytes_used == 10
    again = lambda: backend.contents.update_replacement_rejected(upload, reason="No.", expires_at=1, attempt_id=None)  # noqa: E731
    assert refused(ConditionFailed, again) == "upload"


def test_given_the_marker_moved_on_or_the_kb_gone_when_rejected_then_the_upload_still_ends_and_nothing_else_moves(
    backend: Backend, file: FileRecord
) -> None:
    upload = issue(backend, file, size=30)
    hold(backend, upload)
    backend.seed(stored_file(backend).model_copy(update={"replacing": "up_other"}))

    backend.contents.update_replacement_rejected(upload, reason="No.", expires_at=1, attempt_id="att-1")

    assert stored_upload(backend, "up_2").state == "rejected"
    assert stored_file(backend).replacing == "up_other"
    orphan = replacement_record("up_8", file_record("fi_8", kb_id="kb_none"), created_at=T0, expires_at=1)
    backend.seed(orphan.model_copy(update={"state": "submitting", "attempt_id": "a"}))
    backend.contents.update_replacement_rejected(orphan, reason="Gone.", expires_at=1, attempt_id="a")
    gone = backend.contents.get_upload("kb_none", "up_8")
    assert gone is not None
    assert gone.state == "rejected"


def test_given_an_unused_replace_when_expired_then_the_file_is_unmarked(backend: Backend, file: FileRecord) -> None:
    upload = issue(backend, file)

    backend.contents.update_replacement_expired(upload, expires_at=1_900_300_000)

    assert stored_upload(backend, "up_2").state == "expired"
    assert stored_file(backend).replacing is None
    assert refused(ConditionFailed, lambda: backend.contents.update_replacement_expired(upload, expires_at=1)) == "upload"


def test_given_a_marker_when_cleared_for_its_upload_then_gone_and_for_another_then_kept(
    backend: Backend, file: FileRecord
) -> None:
    issue(backend, file)

    assert backend.contents.clear_replacing("kb_1", "fi_1", "up_other") is False
    assert stored_file(backend).replacing == "up_2"
    assert backend.contents.clear_replacing("kb_1", "fi_1", "up_2") is True
    assert stored_file(backend).replacing is None
    assert backend.contents.clear_replacing("kb_1", "fi_gone", "up_2") is False


# -- the record -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("size", "bytes_after"), [(30, 30), (4, 4)], ids=["grows", "shrinks"])
def test_given_a_held_replace_when_recorded_then_the_file_is_at_its_next_version_and_the_upload_submitted(
    backend: Backend, file: FileRecord, size: int, bytes_after: int
) -> None:
    upload = issue(backend, file, size=size)
    hold(backend, upload)

    record(backend, upload, file)

    assert stored_file(backend) == file.model_copy(
        update={"version": 2, "size_bytes": size, "upload_id": "up_2", "sha256": "cd" * 32, "updated_at": at(40)}
    )
    submitted = stored_upload(backend, "up_2")
    assert (submitted.state, submitted.file_id, submitted.memos_file_id) == ("submitted", "fi_1", file.memos_file_id)
    assert (stored_kb(backend).file_count, stored_kb(backend).bytes_used) == (1, bytes_after)
    assert [e.kind for e in backend.activity.query_activity("kb_1", limit=10, cursor=None, now=0)[0]] == ["replaced"]
    assert refused(ConditionFailed, lambda: record(backend, upload, file)) == "upload"


def test_given_the_file_gone_another_holder_or_the_kb_gone_when_recorded_then_each_is_named_and_nothing_moves(
    backend: Backend, file: FileRecord
) -> None:
    upload = issue(backend, file, size=30)
    hold(backend, upload)

    assert refused(ConditionFailed, lambda: record(backend, upload, file, attempt_id="att-other")) == "upload"
    assert refused(ItemMissing, lambda: record(backend, upload, file_record("fi_gone"))) == "file"
    backend.seed(kb_record("kb_1", owner_id="mallory"))
    assert refused(ItemMissing, lambda: record(backend, upload, file)) == "kb"
    assert (stored_file(backend).version, stored_upload(backend, "up_2").state) == (1, "submitting")


# -- a delete that read the file before a replace recorded its next version ---------------------------


def recorded_at_version_2(backend: Backend, file: FileRecord) -> None:
    """fi_1 moved from version 1 (10 bytes) to 2 (30 bytes) by a replace; META counts the 30."""
    upload = issue(backend, file, size=30)
    hold(backend, upload)
    record(backend, upload, file)
    assert (stored_file(backend).version, stored_kb(backend).bytes_used) == (2, 30)


def test_given_a_file_read_before_its_next_version_was_recorded_when_deleted_then_refused_and_nothing_written(
    backend: Backend, file: FileRecord
) -> None:
    recorded_at_version_2(backend, file)

    delete = lambda: backend.cleanups.delete_file_with_outbox(  # noqa: E731
        file, "alice", cleanup_record(), activity=entry("file_deleted", "fi_1", 1)
    )

    # The version read is not there now: deleting it would take its 10 bytes off the KB, not the 30
    assert refused(ItemMissing, delete) == "file"
    assert stored_file(backend).version == 2
    assert (stored_kb(backend).file_count, stored_kb(backend).bytes_used) == (1, 30)
    assert backend.cleanups.get_cleanup("cl_1") == (None, [])


def test_given_a_file_read_before_its_next_version_was_recorded_when_swept_then_the_version_there_goes_off_the_kb(
    backend: Backend, file: FileRecord
) -> None:
    recorded_at_version_2(backend, file)
    part = CleanupPart(cleanup_id="cl_1", part_id="p1", memos_file_ids=[file.memos_file_id])

    backend.cleanups.delete_files_with_part(part, [file])

    assert backend.contents.get_file("kb_1", "fi_1") is None
    assert (stored_kb(backend).file_count, stored_kb(backend).bytes_used) == (0, 0)
    assert backend.cleanups.get_cleanup("cl_1") == (None, [part])


# -- the owner dismissing a replace not yet sent ---------------------------------------------------------


def test_given_a_pending_replace_when_dismissed_then_it_is_gone_and_the_file_unmarked_and_a_held_one_refused(
    backend: Backend, file: FileRecord
) -> None:
    upload = issue(backend, file, size=30)

    backend.contents.delete_pending_replacement(upload)

    assert backend.contents.get_upload("kb_1", "up_2") is None
    assert stored_file(backend).replacing is None
    assert stored_kb(backend).bytes_used == 10
    held = issue(backend, file, "up_3", size=30)
    hold(backend, held)
    assert refused(ConditionFailed, lambda: backend.contents.delete_pending_replacement(held)) == "upload"
    assert (stored_upload(backend, "up_3").state, stored_file(backend).replacing) == ("submitting", "up_3")
    assert refused(ConditionFailed, lambda: backend.contents.delete_pending_replacement(upload)) == "upload"


def test_given_the_marker_moved_on_when_a_pending_replace_is_dismissed_then_it_goes_and_the_marker_stays(
    backend: Backend, file: FileRecord
) -> None:
    upload = issue(backend, file)
    backend.seed(stored_file(backend).model_copy(update={"replacing": "up_other"}))

    backend.contents.delete_pending_replacement(upload)

    assert backend.contents.get_upload("kb_1", "up_2") is None
    assert stored_file(backend).replacing == "up_other"
