"""``memmy_kb.domain.deletion.delete``: the user's delete of a KB, a file or a folder, on the fakes.

A delete hides the thing at once, writes the cleanup's outbox item in the same transaction and starts
the cleanup; what it leaves for the background (MemOS, S3) is ``test_cleanup.py``'s.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from http import HTTPStatus

import pytest

from memmy_kb.domain.deletion.delete import CLEANUP_GRACE, FOLDER_GONE, SWEEP_CHUNK, Deleter
from memmy_kb.domain.knowledge_bases import manage as kbs_logic
from memmy_kb.records import CleanupRecord, FileRecord, FolderRecord, KnowledgeBaseRecord, UploadRecord
from tests.support.domain import refused
from tests.support.factories import (
    T0,
    activity_for,
    file_record,
    folder_record,
    kb_record,
    owner_grant_for,
    reader_grant_for,
    uncapped_daily,
    upload_record,
)
from tests.support.fakes import FakeCleanupExecutions, FakeCleanupStore, FakeContentStore, FakeStores

RETENTION_DAYS = 30


@pytest.fixture
def executions() -> FakeCleanupExecutions:
    return FakeCleanupExecutions()


def deleter(
    stores: FakeStores,
    executions: FakeCleanupExecutions,
    *,
    cleanups: FakeCleanupStore | None = None,
    contents: FakeContentStore | None = None,
) -> Deleter:
    ids = (f"cl_{n}" for n in itertools.count(1))
    return Deleter(
        stores.kbs,
        contents or stores.contents,
        cleanups or stores.cleanups,
        executions,
        retention_days=RETENTION_DAYS,
        clock=lambda: T0,
        new_id=lambda: next(ids),
    )


@pytest.fixture
def shared(stores: FakeStores) -> KnowledgeBaseRecord:
    """kb_1, alice's (counted as owned), read by bob and carol."""
    kb = kb_record("kb_1")
    stores.kbs.put_kb_with_owner_grant(kb, owner_grant_for(kb), max_owned=10, request=None)
    for reader in ("bob", "carol"):
        stores.kbs.put_reader_grant(reader_grant_for(kb, reader), max_readers=10, daily=uncapped_daily(), activity=activity_for("shared", kb.kb_id, reader))
    return kb


def outbox(stores: FakeStores, cleanup_id: str = "cl_1") -> CleanupRecord:
    head, _ = stores.cleanups.get_cleanup(cleanup_id)
    assert head is not None, f"no outbox item {cleanup_id}"
    return head


# -- a KB ------------------------------------------------------------------------------------------


def test_given_a_shared_kb_when_its_owner_deletes_it_then_it_leaves_every_list_and_the_cleanup_is_started(
    stores: FakeStores, executions: FakeCleanupExecutions, shared: KnowledgeBaseRecord
) -> None:
    cleanup_id = deleter(stores, executions).delete_knowledge_base("alice", "kb_1")

    assert cleanup_id == "cl_1"
    for user in ("alice", "bob", "carol"):
        assert kbs_logic.list_knowledge_bases(stores.kbs, user) == []
    assert stores.kbs.query_kb_members("kb_1") == []
    assert stores.table.owned("alice") == 0
    head = outbox(stores)
    assert (head.target, head.kb_id, head.memos_kb_id, head.owner_id) == ("kb", "kb_1", shared.memos_kb_id, "alice")
    assert (head.state, head.attempts, head.next_attempt_at) == ("pending", 1, T0 + CLEANUP_GRACE)
    assert executions.executions == {"cl_1": "cl_1"}


def test_given_a_reader_or_a_stranger_when_deleting_the_kb_then_403_or_404_and_nothing_changes(
    stores: FakeStores, executions: FakeCleanupExecutions, shared: KnowledgeBaseRecord
) -> None:
    delete = deleter(stores, executions)

    assert refused(lambda: delete.delete_knowledge_base("bob", "kb_1")) == (HTTPStatus.FORBIDDEN, "owner_only")
    assert refused(lambda: delete.delete_knowledge_base("dave", "kb_1")) == (HTTPStatus.NOT_FOUND, "kb_not_found")
    assert refused(lambda: delete.delete_knowledge_base("alice", "kb_x")) == (HTTPStatus.NOT_FOUND, "kb_not_found")
    assert stores.kbs.get_kb("kb_1") is not None
    assert len(stores.kbs.query_kb_members("kb_1")) == 3
    assert (stores.table.cleanups, executions.executions) == ({}, {})


class RacingShares(FakeCleanupStore):
    """A share lands between the delete's read of META and its transaction, ``times`` times."""

    def __init__(self, stores: FakeStores, times: int) -> None:
        super().__init__(stores.table)
        self.stores, self.times, self.shared = stores, times, 0

    def delete_kb_with_outbox(self, kb: KnowledgeBaseRecord, reader_ids: Iterable[str], cleanup: CleanupRecord) -> None:
        if self.shared < self.times:
            self.shared += 1
            self.stores.kbs.put_reader_grant(reader_grant_for(kb, f"late_{self.shared}"), max_readers=10, daily=uncapped_daily(), activity=activity_for("shared", kb.kb_id, f"late_{self.shared}"))
        super().delete_kb_with_outbox(kb, reader_ids, cleanup)


def test_given_a_share_landing_during_the_delete_when_deleting_then_it_is_redone_and_no_grant_is_left(
    stores: FakeStores, executions: FakeCleanupExecutions, shared: KnowledgeBaseRecord
) -> None:
    cleanups = RacingShares(stores, times=1)

    cleanup_id = deleter(stores, executions, cleanups=cleanups).delete_knowledge_base("alice", "kb_1")

    assert stores.kbs.query_kb_members("kb_1") == []
    assert stores.kbs.get_grant("late_1", "kb_1") is None
    assert list(stores.table.cleanups) == [cleanup_id]  # the refused attempt wrote no outbox item
    assert list(executions.executions) == [cleanup_id]


def test_given_members_changing_on_every_attempt_when_deleting_then_409_kb_busy_and_the_kb_stays(
    stores: FakeStores, executions: FakeCleanupExecutions, shared: KnowledgeBaseRecord
) -> None:
    cleanups = RacingShares(stores, times=3)

    assert refused(lambda: deleter(stores, executions, cleanups=cleanups).delete_knowledge_base("alice", "kb_1")) == (
        HTTPStatus.CONFLICT,
        "kb_busy",
    )
    assert stores.kbs.get_kb("kb_1") is not None
    assert (stores.table.cleanups, executions.executions) == ({}, {})


def test_given_grants_older_than_metas_reader_set_when_deleting_then_the_member_index_supplies_them(
    stores: FakeStores, executions: FakeCleanupExecutions
) -> None:
    kb = kb_record("kb_1", member_count=1)  # META counts bob but never named him
    stores.table.seed(kb, owner_grant_for(kb), reader_grant_for(kb, "bob"))

    deleter(stores, executions).delete_knowledge_base("alice", "kb_1")

    assert stores.kbs.get_grant("bob", "kb_1") is None
    assert kbs_logic.list_knowledge_bases(stores.kbs, "bob") == []


def test_given_the_state_machine_unreachable_when_deleting_then_still_accepted_and_the_outbox_item_waits(
    stores: FakeStores, executions: FakeCleanupExecutions, shared: KnowledgeBaseRecord
) -> None:
    executions.fail_next(RuntimeError("Step Functions is throttling"))

    cleanup_id = deleter(stores, executions).delete_knowledge_base("alice", "kb_1")

    assert stores.kbs.get_kb("kb_1") is None
    assert executions.executions == {}
    assert outbox(stores, cleanup_id).next_attempt_at == T0 + CLEANUP_GRACE  # the reconciler's to start


# -- a file ----------------------------------------------------------------------------------------


@pytest.fixture
def owned(stores: FakeStores) -> KnowledgeBaseRecord:
    """kb_1, alice's, holding two counted files of 10 bytes (fi_1 at the root, fi_2 in fo_docs)."""
    kb = kb_record("kb_1").model_copy(update={"file_count": 2, "bytes_used": 20})
    stores.table.seed(kb, owner_grant_for(kb), folder_record("fo_docs"), file_record("fi_1"))
    stores.table.seed(file_record("fi_2", folder_id="fo_docs"))
    return kb


def test_given_a_file_when_its_owner_deletes_it_then_it_is_gone_uncounted_logged_and_its_cleanup_started(
    stores: FakeStores, executions: FakeCleanupExecutions, owned: KnowledgeBaseRecord
) -> None:
    cleanup_id = deleter(stores, executions).delete_file("alice", "kb_1", "fi_1")

    assert stores.contents.get_file("kb_1", "fi_1") is None
    kb = stores.kbs.get_kb("kb_1")
    assert kb is not None
    assert (kb.file_count, kb.bytes_used) == (1, 10)
    head = outbox(stores, cleanup_id)
    assert (head.target, head.memos_file_ids, head.upload_ids) == ("files", ["mf-fi_1"], ["up-fi_1"])
    [entry] = stores.table.activity.values()
    assert (entry.kind, entry.actor_id, entry.subject) == ("file_deleted", "alice", "fi_1")
    assert entry.expires_at == int(T0.timestamp()) + RETENTION_DAYS * 86400
    assert executions.executions == {cleanup_id: cleanup_id}


def test_given_a_missing_file_or_a_reader_when_deleting_a_file_then_404_or_403_and_nothing_is_written(
    stores: FakeStores, executions: FakeCleanupExecutions, owned: KnowledgeBaseRecord
) -> None:
    stores.table.seed(reader_grant_for(owned, "bob"))
    delete = deleter(stores, executions)

    assert refused(lambda: delete.delete_file("alice", "kb_1", "fi_x")) == (HTTPStatus.NOT_FOUND, "file_not_found")
    assert refused(lambda: delete.delete_file("bob", "kb_1", "fi_1")) == (HTTPStatus.FORBIDDEN, "owner_only")
    assert stores.contents.get_file("kb_1", "fi_1") is not None
    assert (stores.table.cleanups, stores.table.activity, executions.executions) == ({}, {}, {})


class DeletedMeanwhile(FakeContentStore):
    """Reads the file as it was; another request deleted it (or the KB changed hands) right after."""

    def __init__(self, stores: FakeStores, then: str) -> None:
        super().__init__(stores.table)
        self.stores, self.then = stores, then

    def get_file(self, kb_id: str, file_id: str) -> FileRecord | None:
        file = super().get_file(kb_id, file_id)
        if self.then == "file":
            self.table.files.pop((kb_id, file_id), None)
        else:
            self.table.seed(kb_record(kb_id, owner_id="dave"))
        return file

    def get_folder(self, kb_id: str, folder_id: str) -> FolderRecord | None:
        folder = super().get_folder(kb_id, folder_id)
        if self.then == "folder":
            del self.table.folders[(kb_id, folder_id)]
        else:
            self.table.seed(kb_record(kb_id, owner_id="dave"))
        return folder


@pytest.mark.parametrize(("then", "code"), [("file", "file_not_found"), ("kb", "kb_not_found")])
def test_given_the_file_or_kb_gone_after_the_read_when_deleting_the_file_then_404_names_it(
    stores: FakeStores, executions: FakeCleanupExecutions, owned: KnowledgeBaseRecord, then: str, code: str
) -> None:
    delete = deleter(stores, executions, contents=DeletedMeanwhile(stores, then))

    assert refused(lambda: delete.delete_file("alice", "kb_1", "fi_1")) == (HTTPStatus.NOT_FOUND, code)
    assert (stores.table.cleanups, executions.executions) == ({}, {})


class ReplacedMeanwhile(FakeContentStore):
    """Reads fi_1 as it was; a replace records its next version (20 bytes more) right after: once, or
    after every read."""

    def __init__(self, stores: FakeStores, *, every_read: bool = False) -> None:
        super().__init__(stores.table)
        self.every_read = every_read

    def get_file(self, kb_id: str, file_id: str) -> FileRecord | None:
        file = super().get_file(kb_id, file_id)
        if file is not None and (file.version == 1 or self.every_read):
            self.table.seed(
                file.model_copy(
                    update={"version": file.version + 1, "size_bytes": file.size_bytes + 20, "upload_id": "up_v2"}
                )
            )
            self.table.counted(kb_id, 0, 20)()
        return file


def test_given_a_replace_recorded_after_the_read_when_deleting_the_file_then_its_new_size_goes_off_the_kb(
    stores: FakeStores, executions: FakeCleanupExecutions, owned: KnowledgeBaseRecord
) -> None:
    # Given fi_1 read at version 1 (10 bytes), then moved to version 2 (30 bytes) by a replace's record
    cleanup_id = deleter(stores, executions, contents=ReplacedMeanwhile(stores)).delete_file("alice", "kb_1", "fi_1")

    # Then the delete took the version there now off the KB, and names its bytes
    assert stores.contents.get_file("kb_1", "fi_1") is None
    kb = stores.kbs.get_kb("kb_1")
    assert kb is not None
    assert (kb.file_count, kb.bytes_used) == (1, 10)
    assert outbox(stores, cleanup_id).upload_ids == ["up_v2"]


def test_given_the_file_moving_on_at_every_read_when_deleting_it_then_409_file_busy_and_it_stays(
    stores: FakeStores, executions: FakeCleanupExecutions, owned: KnowledgeBaseRecord
) -> None:
    delete = deleter(stores, executions, contents=ReplacedMeanwhile(stores, every_read=True))

    assert refused(lambda: delete.delete_file("alice", "kb_1", "fi_1")) == (HTTPStatus.CONFLICT, "file_busy")
    assert stores.contents.get_file("kb_1", "fi_1") is not None
    assert (stores.table.cleanups, executions.executions) == ({}, {})


# -- a folder --------------------------------------------------------------------------------------


def seed_tree(stores: FakeStores) -> None:
    """fo_docs (to be deleted) > fo_v1 > fo_v2, with files and uploads at each level; fo_keep beside it."""
    stores.table.seed(
        folder_record("fo_v1", parent_id="fo_docs"),
        folder_record("fo_v2", parent_id="fo_v1"),
        folder_record("fo_keep"),
        file_record("fi_3", folder_id="fo_v2"),
        file_record("fi_keep", folder_id="fo_keep"),
        upload_record("up_pending", folder_id="fo_v1"),
        upload_record("up_held", folder_id="fo_v2", state="submitting", attempt_id="att-1"),
        upload_record("up_done", folder_id="fo_v1", state="submitted"),
    )


def test_given_a_folder_tree_when_its_owner_deletes_it_then_the_subtree_goes_in_parts_and_uploads_into_it_end(
    stores: FakeStores, executions: FakeCleanupExecutions, owned: KnowledgeBaseRecord
) -> None:
    seed_tree(stores)

    cleanup_id = deleter(stores, executions).delete_folder("alice", "kb_1", "fo_docs")

    folders, files, uploads = stores.contents.query_kb_items("kb_1")
    assert [f.folder_id for f in folders] == ["fo_keep"]
    assert sorted(f.file_id for f in files) == ["fi_1", "fi_keep"]
    states = {u.upload_id: (u.state, u.reason) for u in uploads}
    assert states["up_pending"] == ("rejected", FOLDER_GONE)
    assert states["up_held"] == ("rejected", FOLDER_GONE)
    assert states["up_done"] == ("submitted", None)
    head, parts = stores.cleanups.get_cleanup(cleanup_id)
    assert head is not None
    assert (head.target, head.folder_id) == ("folder", "fo_docs")
    assert sorted(i for p in parts for i in p.memos_file_ids) == ["mf-fi_2", "mf-fi_3"]
    assert sorted(i for p in parts for i in p.upload_ids) == ["up-fi_2", "up-fi_3", "up_held", "up_pending"]
    kb = stores.kbs.get_kb("kb_1")
    assert kb is not None
    # fi_2 and fi_3 taken off, once each (the seed counted fi_1 and fi_2 only: counts may undercount)
    assert (kb.file_count, kb.bytes_used) == (0, 0)
    assert [e.kind for e in stores.table.activity.values()] == ["folder_deleted"]
    assert executions.executions == {cleanup_id: cleanup_id}


def test_given_more_files_than_a_sweep_transaction_holds_when_the_folder_is_deleted_then_several_parts(
    stores: FakeStores, executions: FakeCleanupExecutions, owned: KnowledgeBaseRecord
) -> None:
    stores.table.seed(*(file_record(f"fi_{n:03d}", folder_id="fo_docs") for n in range(SWEEP_CHUNK + 1)))

    cleanup_id = deleter(stores, executions).delete_folder("alice", "kb_1", "fo_docs")

    _, parts = stores.cleanups.get_cleanup(cleanup_id)
    assert sorted(len(p.memos_file_ids) for p in parts) == [2, SWEEP_CHUNK]  # fi_2 rides with the rest
    assert [f.file_id for f in stores.contents.query_kb_items("kb_1")[1]] == ["fi_1"]


class BrokenSweep(FakeContentStore):
    """The sweep's read fails (DynamoDB throttling) once the folder itself is gone."""

    def query_kb_items(self, kb_id: str) -> tuple[list[FolderRecord], list[FileRecord], list[UploadRecord]]:
        raise RuntimeError("ProvisionedThroughputExceededException")


def test_given_the_sweep_fails_when_a_folder_is_deleted_then_still_accepted_and_the_cleanup_is_started(
    stores: FakeStores, executions: FakeCleanupExecutions, owned: KnowledgeBaseRecord
) -> None:
    cleanup_id = deleter(stores, executions, contents=BrokenSweep(stores.table)).delete_folder(
        "alice", "kb_1", "fo_docs"
    )

    assert stores.contents.get_folder("kb_1", "fo_docs") is None
    assert stores.contents.get_file("kb_1", "fi_2") is not None  # left for the cleanup's own sweep
    assert executions.executions == {cleanup_id: cleanup_id}


@pytest.mark.parametrize(("then", "code"), [("folder", "folder_not_found"), ("kb", "kb_not_found")])
def test_given_a_missing_folder_when_deleting_it_then_404_names_what_is_missing(
    stores: FakeStores, executions: FakeCleanupExecutions, owned: KnowledgeBaseRecord, then: str, code: str
) -> None:
    delete = deleter(stores, executions)
    assert refused(lambda: delete.delete_folder("alice", "kb_1", "fo_x")) == (HTTPStatus.NOT_FOUND, "folder_not_found")

    raced = deleter(stores, executions, contents=DeletedMeanwhile(stores, then))
    assert refused(lambda: raced.delete_folder("alice", "kb_1", "fo_docs")) == (HTTPStatus.NOT_FOUND, code)
    assert (stores.table.cleanups, executions.executions) == ({}, {})
