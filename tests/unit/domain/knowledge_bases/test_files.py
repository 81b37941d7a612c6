"""``memmy_kb.domain.knowledge_bases.files``: listing with live status, moving files, a KB whose backend is gone, files with a
replace (folders: test_folders.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from http import HTTPStatus

import pytest

from memmy_kb.domain.engine import FileStatus
from memmy_kb.domain.knowledge_bases import files as files_logic
from memmy_kb.domain.knowledge_bases.files import FileEntry, Listing
from tests.support.domain import kb, refused
from tests.support.factories import (
    T0,
    file_record,
    folder_record,
    kb_record,
    owner_grant_for,
    replacement_record,
    upload_record,
)
from tests.support.fakes import FakeContentStore, FakeKnowledgeEngine, FakeStores, memos_error

NOT_FOUND = (HTTPStatus.NOT_FOUND, "kb_not_found")
OWNER_ONLY = (HTTPStatus.FORBIDDEN, "owner_only")
FOLDER_NOT_FOUND = (HTTPStatus.NOT_FOUND, "folder_not_found")

__all__ = ["kb"]  # the fixture: kb_1, alice's, read by bob


def memos_kb(kb: FakeStores) -> str:
    record = kb.kbs.get_kb("kb_1")
    assert record is not None
    return record.memos_kb_id


def add_file(
    kb: FakeStores,
    memos: FakeKnowledgeEngine,
    file_id: str,
    status: FileStatus = FileStatus.AVAILABLE,
    *,
    name: str | None = None,
    folder_id: str | None = None,
) -> str:
    """A file as the ingest leaves it: in MemOS (in ``status``) and as our FILE item."""
    live = memos.add_file(memos_kb(kb), name or f"{file_id}.md", status)
    kb.table.seed(
        file_record(file_id, memos_file_id=live.id, name=name or f"{file_id}.md", folder_id=folder_id)
    )
    return file_id


def listing(
    kb: FakeStores, memos: FakeKnowledgeEngine, user: str = "alice", folder_id: str | None = None
) -> Listing:
    return files_logic.list_files(kb.kbs, kb.contents, memos, user, "kb_1", folder_id)


def shown(result: Listing) -> dict[str, tuple[str, str | None]]:
    return {f.id: (f.status, f.reason) for f in result.files}


# -- listing ---------------------------------------------------------------------------------------


def test_given_files_in_each_memos_state_when_listed_then_their_status_maps_one_to_one(
    kb: FakeStores, memos: FakeKnowledgeEngine
) -> None:
    add_file(kb, memos, "fi_a", FileStatus.AVAILABLE)
    add_file(kb, memos, "fi_b", FileStatus.PROCESSING)
    add_file(kb, memos, "fi_c", FileStatus.FAILED)

    result = listing(kb, memos, "bob")

    assert shown(result) == {
        "fi_a": ("available", None),
        "fi_b": ("processing", None),
        "fi_c": ("failed", files_logic.MEMOS_FAILED),
    }
    assert memos.calls["get_knowledgebase_files"] == 1
    assert result.refresh_after_seconds == files_logic.REFRESH_AFTER_SECONDS == 3


def test_given_a_file_memos_no_longer_holds_when_listed_then_it_shows_failed_gone(
    kb: FakeStores, memos: FakeKnowledgeEngine
) -> None:
    kb.table.seed(file_record("fi_lost", memos_file_id="mf-unknown", name="lost.md", size_bytes=7))

    assert listing(kb, memos).files == [
        FileEntry(
            id="fi_lost",
            name="lost.md",
            status="failed",
            size_bytes=7,
            folder_id=None,
            reason=files_logic.GONE_FROM_MEMOS,
            upload_id="up-fi_lost",
            version=1,
            updated_at=listing_file_time(kb, "fi_lost"),
        )
    ]


def test_given_memos_renamed_a_file_when_listed_then_the_live_name_is_shown(
    kb: FakeStores, memos: FakeKnowledgeEngine
) -> None:
    live = memos.add_file(memos_kb(kb), "手册（最终版）.md", FileStatus.AVAILABLE)
    kb.table.seed(file_record("fi_1", memos_file_id=live.id, name="手册.md"))

    assert [f.name for f in listing(kb, memos).files] == ["手册（最终版）.md"]


def test_given_only_settled_files_when_listed_then_no_refresh_is_asked(
    kb: FakeStores, memos: FakeKnowledgeEngine
) -> None:
    add_file(kb, memos, "fi_a", FileStatus.AVAILABLE)
    add_file(kb, memos, "fi_b", FileStatus.FAILED)

    assert listing(kb, memos).refresh_after_seconds is None


def test_given_uploads_in_every_state_when_listed_then_in_flight_show_uploading_and_rejected_failed(
    kb: FakeStores, memos: FakeKnowledgeEngine
) -> None:
    now = datetime.now(UTC)
    kb.table.seed(
        upload_record("up_pending"),
        upload_record("up_expired", expires_at=int(now.timestamp()) - 1),
        upload_record("up_rejected", state="rejected", reason="The file is not a valid PDF."),
        upload_record("up_submitted", state="submitted"),
        upload_record("up_gone", state="expired"),
        upload_record(
            "up_fresh", state="submitting", attempt_id="a1", submitting_at=now - timedelta(minutes=14)
        ),
        upload_record(
            "up_stale", state="submitting", attempt_id="a2", submitting_at=now - timedelta(minutes=16)
        ),
    )

    result = listing(kb, memos)

    assert shown(result) == {
        "up_pending": ("uploading", None),
        "up_rejected": ("failed", "The file is not a valid PDF."),
        "up_fresh": ("uploading", None),
        "up_stale": ("failed", files_logic.UNCONFIRMED),
    }
    assert result.refresh_after_seconds == 3
    assert memos.total_calls == 0  # uploads are ours: no MemOS call for them


def test_given_an_upload_read_mid_transaction_as_both_file_and_submitting_when_listed_then_it_is_listed_once(
    kb: FakeStores, memos: FakeKnowledgeEngine
) -> None:
    # The record transaction writes the FILE item and marks its upload submitted; a Query between the two
    # (read-committed per item) sees the file and the upload still submitting: one entry, the file.
    add_file(kb, memos, "fi_a", name="note-08.md")
    kb.table.seed(
        upload_record(
            "up-fi_a",
            filename="note-08.md",
            state="submitting",
            attempt_id="a1",
            submitting_at=datetime.now(UTC),
        ),
        upload_record("up_other", filename="note-09.md"),
    )

    result = listing(kb, memos)

    assert [(f.id, f.name) for f in result.files] == [("fi_a", "note-08.md"), ("up_other", "note-09.md")]


def test_given_a_submitting_upload_without_start_time_when_listed_then_its_creation_decides_staleness(
    kb: FakeStores, memos: FakeKnowledgeEngine
) -> None:
    old = datetime.now(UTC) - timedelta(hours=1)
    kb.table.seed(upload_record("up_old", state="submitting", created_at=old))

    assert shown(listing(kb, memos)) == {"up_old": ("failed", files_logic.UNCONFIRMED)}


def test_given_only_failed_uploads_when_listed_then_no_refresh_is_asked(
    kb: FakeStores, memos: FakeKnowledgeEngine
) -> None:
    kb.table.seed(upload_record("up_rejected", state="rejected", reason="Too big."))

    assert listing(kb, memos).refresh_after_seconds is None


def test_given_an_empty_kb_when_listed_then_nothing_and_no_memos_call(
    kb: FakeStores, memos: FakeKnowledgeEngine
) -> None:
    result = listing(kb, memos)

    assert (result.folders, result.files, result.refresh_after_seconds) == ([], [], None)
    assert memos.total_calls == 0


def test_given_memos_is_down_when_listing_files_then_503_memos_unavailable(
    kb: FakeStores, memos: FakeKnowledgeEngine
) -> None:
    add_file(kb, memos, "fi_a")
    memos.fail("get_knowledgebase_files", memos_error(code=50004))

    assert refused(lambda: listing(kb, memos)) == (HTTPStatus.SERVICE_UNAVAILABLE, "memos_unavailable")


def test_given_45_files_when_listed_then_memos_is_asked_in_batches_of_20(
    kb: FakeStores, memos: FakeKnowledgeEngine
) -> None:
    for i in range(45):
        add_file(kb, memos, f"fi_{i:02d}")

    result = listing(kb, memos)

    assert len(result.files) == 45
    assert memos.calls["get_knowledgebase_files"] == 3
    assert {f.status for f in result.files} == {"available"}


def test_given_folders_and_files_when_a_level_is_listed_then_only_its_entries_sorted_by_name(
    kb: FakeStores, memos: FakeKnowledgeEngine
) -> None:
    kb.table.seed(
        folder_record("fo_docs", name="文档"),
        folder_record("fo_b", name="b"),
        folder_record("fo_a", name="A"),
        folder_record("fo_v1", name="v1", parent_id="fo_docs"),
        upload_record("up_1", filename="c-upload.md", folder_id="fo_docs"),
    )
    add_file(kb, memos, "fi_root", name="root.md")
    add_file(kb, memos, "fi_b", name="B.md", folder_id="fo_docs")
    add_file(kb, memos, "fi_a", name="a.md", folder_id="fo_docs")

    root = listing(kb, memos)
    inside = listing(kb, memos, "bob", "fo_docs")

    assert [f.folder_id for f in root.folders] == ["fo_a", "fo_b", "fo_docs"]
    assert [f.id for f in root.files] == ["fi_root"]
    assert [f.folder_id for f in inside.folders] == ["fo_v1"]
    assert [(f.id, f.folder_id) for f in inside.files] == [
        ("fi_a", "fo_docs"),
        ("fi_b", "fo_docs"),
        ("up_1", "fo_docs"),
    ]


def test_given_an_unknown_folder_when_listed_then_404_folder_not_found(
    kb: FakeStores, memos: FakeKnowledgeEngine
) -> None:
    assert refused(lambda: listing(kb, memos, folder_id="fo_missing")) == FOLDER_NOT_FOUND


def test_given_a_stranger_when_listing_then_404_and_no_memos_call(
    kb: FakeStores, memos: FakeKnowledgeEngine
) -> None:
    add_file(kb, memos, "fi_a")

    assert refused(lambda: listing(kb, memos, "carol")) == NOT_FOUND
    assert memos.total_calls == 0


# -- moving files ----------------------------------------------------------------------------------


def move(
    kb: FakeStores, memos: FakeKnowledgeEngine, file_id: str, folder_id: str | None, user: str = "alice"
) -> FileEntry:
    return files_logic.move_file(kb.kbs, kb.contents, memos, user, "kb_1", file_id, folder_id)


def test_given_a_file_when_the_owner_moves_it_then_only_our_mapping_changes(
    kb: FakeStores, memos: FakeKnowledgeEngine
) -> None:
    kb.table.seed(folder_record("fo_specs"))
    add_file(kb, memos, "fi_a", FileStatus.PROCESSING)
    memos.calls.clear()

    entry = move(kb, memos, "fi_a", "fo_specs")

    assert (entry.id, entry.folder_id, entry.status) == ("fi_a", "fo_specs", "processing")
    assert kb.contents.get_file("kb_1", "fi_a").folder_id == "fo_specs"  # type: ignore[union-attr]
    assert dict(memos.calls) == {"get_knowledgebase_files": 1}


def test_given_a_file_in_a_folder_when_moved_to_the_root_then_its_folder_is_none(
    kb: FakeStores, memos: FakeKnowledgeEngine
) -> None:
    kb.table.seed(folder_record("fo_docs"))
    add_file(kb, memos, "fi_a", folder_id="fo_docs")

    assert move(kb, memos, "fi_a", None).folder_id is None
    assert [f.id for f in listing(kb, memos).files] == ["fi_a"]


def test_given_a_reader_when_moving_a_file_then_403_and_it_stays(
    kb: FakeStores, memos: FakeKnowledgeEngine
) -> None:
    kb.table.seed(folder_record("fo_docs"))
    add_file(kb, memos, "fi_a")

    assert refused(lambda: move(kb, memos, "fi_a", "fo_docs", user="bob")) == OWNER_ONLY
    assert kb.contents.get_file("kb_1", "fi_a").folder_id is None  # type: ignore[union-attr]


def test_given_a_missing_file_when_moved_then_404_file_not_found(
    kb: FakeStores, memos: FakeKnowledgeEngine
) -> None:
    assert refused(lambda: move(kb, memos, "fi_missing", None)) == (HTTPStatus.NOT_FOUND, "file_not_found")


def test_given_a_missing_folder_when_moving_into_it_then_404_folder_not_found(
    kb: FakeStores, memos: FakeKnowledgeEngine
) -> None:
    add_file(kb, memos, "fi_a")

    assert refused(lambda: move(kb, memos, "fi_a", "fo_missing")) == FOLDER_NOT_FOUND


class FolderDeletedMeanwhile(FakeContentStore):
    """The destination folder is deleted between the move's read and its write."""

    def update_file_folder(self, kb_id: str, file_id: str, folder_id: str | None) -> None:
        if folder_id is not None:
            del self.table.folders[(kb_id, folder_id)]
        super().update_file_folder(kb_id, file_id, folder_id)


def test_given_the_folder_vanishes_during_the_move_when_moving_then_404_file_not_found(
    kb: FakeStores, memos: FakeKnowledgeEngine
) -> None:
    kb.table.seed(folder_record("fo_docs"))
    add_file(kb, memos, "fi_a")
    racing = FolderDeletedMeanwhile(kb.table)

    assert refused(
        lambda: files_logic.move_file(kb.kbs, racing, memos, "alice", "kb_1", "fi_a", "fo_docs")
    ) == (
        HTTPStatus.NOT_FOUND,
        "file_not_found",
    )
    assert kb.contents.get_file("kb_1", "fi_a").folder_id is None  # type: ignore[union-attr]


# -- a KB on a MemOS backend the secret no longer lists ----------------------------------------------


def test_given_a_kb_on_a_backend_the_secret_no_longer_lists_when_listed_then_503_and_a_level_without_files_still_lists(
    stores: FakeStores,
) -> None:
    from memmy_kb.domain.engine import MemosBackendUnknown
    from tests.support.fakes import FakeEngines

    engines = FakeEngines(a=1)
    record = kb_record("kb_1", owner_id="alice", memos_kb_id="mk_1", memos_backend="retired")
    stores.table.seed(record, owner_grant_for(record), folder_record("fo_empty", name="empty"))
    stores.table.seed(file_record("fi_a", memos_file_id="mf_a", name="a.md"))

    assert refused(lambda: files_logic.list_files(stores.kbs, stores.contents, engines, "alice", "kb_1", None)) == (
        HTTPStatus.SERVICE_UNAVAILABLE,
        "memos_unavailable",
    )
    empty = files_logic.list_files(stores.kbs, stores.contents, engines, "alice", "kb_1", "fo_empty")
    assert (empty.folders, empty.files) == ([], [])
    with pytest.raises(MemosBackendUnknown):  # no other backend is asked in its stead
        engines.engine("retired")


def listing_file_time(kb: FakeStores, file_id: str) -> object:
    """When a seeded file took its current version (its upload time, for a file never replaced)."""
    return kb.table.files[("kb_1", file_id)].uploaded_at


# -- files with a replace -----------------------------------------------------------------------------


def test_given_a_replace_in_flight_when_listed_then_it_shows_beside_its_file_and_not_as_an_entry_of_its_own(
    kb: FakeStores, memos: FakeKnowledgeEngine
) -> None:
    add_file(kb, memos, "fi_a")
    file = kb.contents.get_file("kb_1", "fi_a")
    assert file is not None
    kb.table.seed(
        file.model_copy(update={"replacing": "up_new"}),
        replacement_record("up_new", file, expires_at=int(datetime.now(UTC).timestamp()) + 600),
    )

    result = listing(kb, memos)

    [entry] = result.files
    assert (entry.id, entry.status, entry.version) == ("fi_a", "available", 1)
    assert entry.replacement == files_logic.Replacement("up_new", "uploading")
    assert result.refresh_after_seconds == files_logic.REFRESH_AFTER_SECONDS


def test_given_a_replace_of_unknown_outcome_when_listed_then_it_is_still_in_flight_not_failed(
    kb: FakeStores, memos: FakeKnowledgeEngine
) -> None:
    # An upload left submitting past the grace shows "could not be confirmed; upload it again"; a replace
    # there is the reconciler's to record or resend, and a new replace would be refused meanwhile (409)
    add_file(kb, memos, "fi_a")
    file = kb.contents.get_file("kb_1", "fi_a")
    assert file is not None
    long_ago = datetime.now(UTC) - timedelta(hours=1)
    held = replacement_record("up_new", file, state="submitting", created_at=long_ago).model_copy(
        update={"attempt_id": "att-lost", "submitting_at": long_ago}
    )
    kb.table.seed(file.model_copy(update={"replacing": "up_new"}), held)

    [entry] = listing(kb, memos).files

    assert entry.replacement == files_logic.Replacement("up_new", "uploading")


def test_given_a_failed_replace_of_the_current_version_when_listed_then_the_file_shows_it_with_its_reason(
    kb: FakeStores, memos: FakeKnowledgeEngine
) -> None:
    add_file(kb, memos, "fi_a")
    file = kb.contents.get_file("kb_1", "fi_a")
    assert file is not None
    older = replacement_record("up_old", file, created_at=T0).model_copy(
        update={"state": "rejected", "reason": "The file is not valid UTF-8 text.", "if_version": 0}
    )
    failed = replacement_record("up_bad", file, created_at=T0 + timedelta(minutes=1)).model_copy(
        update={"state": "rejected", "reason": "Another replacement of this file was started."}
    )
    kb.table.seed(older, failed)

    [entry] = listing(kb, memos).files

    assert entry.replacement == files_logic.Replacement(
        "up_bad", "failed", "Another replacement of this file was started."
    )


def test_given_a_later_version_memos_failed_when_listed_then_failed_saying_the_previous_one_still_answers(
    kb: FakeStores, memos: FakeKnowledgeEngine
) -> None:
    add_file(kb, memos, "fi_a", FileStatus.FAILED)
    add_file(kb, memos, "fi_b", FileStatus.FAILED)
    file = kb.contents.get_file("kb_1", "fi_b")
    assert file is not None
    kb.table.seed(file.model_copy(update={"version": 2}))

    assert shown(listing(kb, memos)) == {
        "fi_a": ("failed", files_logic.MEMOS_FAILED),
        "fi_b": ("failed", files_logic.VERSION_FAILED),
    }
