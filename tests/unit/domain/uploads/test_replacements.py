"""``memmy_kb.domain.uploads.replacements``: issuing a file's next version, and when a replace in flight gives way."""

from __future__ import annotations

from datetime import timedelta
from http import HTTPStatus

import pytest

from memmy_kb.domain.engine import FileStatus, MemosError
from memmy_kb.domain.uploads import replacements
from memmy_kb.domain.uploads.replacements import IssuedReplacement, ReplacementRequest, Unchanged
from memmy_kb.records import FileRecord, KbCapacity, UploadState
from tests.support.domain import refused
from tests.support.factories import (
    T0,
    UNCAPPED,
    file_record,
    kb_record,
    owner_grant_for,
    reader_grant_for,
    replacement_record,
)
from tests.support.fakes import FakeKnowledgeEngine, FakeStores, FakeUploadObjects

TTL = 600
HASH = "ab" * 32


@pytest.fixture
def file(stores: FakeStores) -> FileRecord:
    kb = kb_record("kb_1", owner_id="alice").model_copy(update={"bytes_used": 10, "file_count": 1})
    record = file_record("fi_1", size_bytes=10).model_copy(update={"sha256": HASH})
    stores.table.seed(kb, owner_grant_for(kb), reader_grant_for(kb, "bob"), record)
    return record


def ask(
    stores: FakeStores,
    user: str = "alice",
    *,
    now_minutes: int = 0,
    capacity: KbCapacity = UNCAPPED,
    memos: FakeKnowledgeEngine | None = None,
    **request: object,
) -> IssuedReplacement | Unchanged:
    fields: dict[str, object] = {"kb_id": "kb_1", "file_id": "fi_1", "size_bytes": 30} | request
    return replacements.request_replacement(
        stores.kbs,
        stores.contents,
        FakeUploadObjects(),
        memos or FakeKnowledgeEngine(),
        user_id=user,
        request=ReplacementRequest(**fields),  # type: ignore[arg-type]
        post_ttl_seconds=TTL,
        capacity=capacity,
        clock=lambda: T0 + timedelta(minutes=now_minutes),
        new_id=lambda: f"up_{now_minutes:04d}",
    )


def test_given_a_file_when_its_owner_replaces_it_then_a_pending_replace_of_that_version_is_recorded(
    stores: FakeStores, file: FileRecord
) -> None:
    issued = ask(stores, if_version=1, sha256="cd" * 32)

    assert isinstance(issued, IssuedReplacement)
    upload = issued.upload
    assert (upload.replaces, upload.if_version, upload.replaced_size, upload.growth) == ("fi_1", 1, 10, 20)
    assert (upload.filename, upload.folder_id, upload.sha256) == (file.name, None, "cd" * 32)
    assert stores.contents.get_file("kb_1", "fi_1").replacing == upload.upload_id  # type: ignore[union-attr]


def memos_holding(file: FileRecord, status: FileStatus) -> FakeKnowledgeEngine:
    """MemOS holding the file's current version in ``status``."""
    memos = FakeKnowledgeEngine()
    memos_kb = memos.create_knowledgebase("kb_1")
    memos.add_file(memos_kb, file.name, status, file_id=file.memos_file_id)
    return memos


@pytest.mark.parametrize("status", [FileStatus.AVAILABLE, FileStatus.PROCESSING])
def test_given_the_current_versions_hash_when_replacing_then_unchanged_and_nothing_recorded(
    stores: FakeStores, file: FileRecord, status: FileStatus
) -> None:
    assert ask(stores, sha256=HASH, memos=memos_holding(file, status)) == Unchanged(file)
    assert stores.table.uploads == {}


def test_given_a_current_version_memos_failed_when_its_same_bytes_are_offered_then_a_new_replace(
    stores: FakeStores, file: FileRecord
) -> None:
    # Given version 2 of the file, whose bytes MemOS failed: the version before it answers recall
    failed = file.model_copy(update={"version": 2})
    stores.table.seed(failed)

    # When the same bytes are offered again
    issued = ask(stores, sha256=HASH, if_version=2, memos=memos_holding(failed, FileStatus.FAILED))

    # Then they take a new replace of that version (not "unchanged": they could never be sent again)
    assert isinstance(issued, IssuedReplacement)
    assert (issued.upload.sha256, issued.upload.if_version) == (HASH, 2)


def test_given_memos_unavailable_when_the_same_bytes_are_offered_then_503_and_nothing_recorded(
    stores: FakeStores, file: FileRecord
) -> None:
    memos = memos_holding(file, FileStatus.AVAILABLE)
    memos.fail("get_knowledgebase_files", MemosError("down", endpoint="/get/knowledgebase-file"))

    assert refused(lambda: ask(stores, sha256=HASH, memos=memos)) == (HTTPStatus.SERVICE_UNAVAILABLE, "memos_unavailable")
    assert stores.table.uploads == {}


@pytest.mark.parametrize(
    ("user", "request_fields", "answer"),
    [
        ("bob", {}, (HTTPStatus.FORBIDDEN, "owner_only")),
        ("carol", {}, (HTTPStatus.NOT_FOUND, "kb_not_found")),
        ("alice", {"file_id": "fi_none"}, (HTTPStatus.NOT_FOUND, "file_not_found")),
        ("alice", {"if_version": 2}, (HTTPStatus.CONFLICT, "version_conflict")),
        ("alice", {"size_bytes": 100 * 1024 * 1024 + 1}, (HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "file_too_large")),
    ],
    ids=["reader", "stranger", "no-file", "stale-version", "too-large"],
)
def test_given_a_refused_replace_then_its_answer_and_nothing_recorded(
    stores: FakeStores, file: FileRecord, user: str, request_fields: dict[str, object], answer: tuple[int, str]
) -> None:
    assert refused(lambda: ask(stores, user, **request_fields)) == answer
    assert stores.table.uploads == {}


def test_given_no_room_for_the_growth_when_replacing_then_413_and_a_shrink_fits(
    stores: FakeStores, file: FileRecord
) -> None:
    tight = KbCapacity(max_files=10, max_bytes=25)
    assert refused(lambda: ask(stores, capacity=tight)) == (HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "kb_storage_limit_reached")
    assert isinstance(ask(stores, capacity=tight, size_bytes=5), IssuedReplacement)


@pytest.mark.parametrize(
    ("holder_state", "minutes_later", "gives_way"),
    [
        ("pending", 5, False),  # its POST is still valid: the client may be sending the bytes
        ("pending", 11, True),  # its POST expired unused
        ("submitting", 60, False),  # in MemOS's hands
        ("rejected", 1, True),
        ("expired", 1, True),
        (None, 1, True),  # its record is gone
    ],
)
def test_given_a_replace_in_flight_when_another_is_asked_then_it_gives_way_only_once_it_cannot_complete(
    stores: FakeStores, file: FileRecord, holder_state: UploadState | None, minutes_later: int, gives_way: bool
) -> None:
    holder = replacement_record("up_old", file, created_at=T0)
    stores.table.seed(file.model_copy(update={"replacing": "up_old"}))
    if holder_state is not None:
        stores.table.seed(holder.model_copy(update={"state": holder_state}))

    if gives_way:
        issued = ask(stores, now_minutes=minutes_later)
        assert isinstance(issued, IssuedReplacement)
        assert stores.contents.get_file("kb_1", "fi_1").replacing == issued.upload.upload_id  # type: ignore[union-attr]
    else:
        assert refused(lambda: ask(stores, now_minutes=minutes_later)) == (HTTPStatus.CONFLICT, "replace_in_progress")


def test_given_a_replace_in_flight_with_the_same_bytes_when_asked_then_in_progress_not_unchanged(
    stores: FakeStores, file: FileRecord
) -> None:
    ask(stores)
    assert refused(lambda: ask(stores, sha256=HASH)) == (HTTPStatus.CONFLICT, "replace_in_progress")


def test_given_the_file_moving_on_between_read_and_write_then_version_conflict(
    stores: FakeStores, file: FileRecord
) -> None:
    real_put = stores.contents.put_replacement

    def newer_version_lands_first(upload, **kwargs):  # type: ignore[no-untyped-def]
        stores.table.seed(file.model_copy(update={"version": 2}))
        return real_put(upload, **kwargs)

    stores.contents.put_replacement = newer_version_lands_first  # type: ignore[method-assign]

    assert refused(lambda: ask(stores)) == (HTTPStatus.CONFLICT, "version_conflict")
