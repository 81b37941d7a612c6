"""Fingerprints go when nothing can need them, on the fakes: a deleted file's with its cleanup (file, folder),
an old version's once the reconciler sees MemOS switched, and any whose file is gone when the reconciler
passes (``memmy_kb.domain.fingerprints.residue``, ``memmy_kb.domain.deletion.cleanup``)."""

from __future__ import annotations

from array import array

import pytest

from memmy_kb.domain.deletion.cleanup import Cleaner
from memmy_kb.domain.deletion.delete import Deleter
from memmy_kb.domain.engine import FileStatus
from memmy_kb.domain.fingerprints.prints import Fingerprints
from memmy_kb.domain.fingerprints.residue import sweep_prints
from memmy_kb.domain.fingerprints.store import FilePrints
from memmy_kb.domain.knowledge_bases.naming import memos_file_name
from memmy_kb.records import FileRecord, KnowledgeBaseRecord
from tests.support.factories import file_record, folder_record
from tests.support.fakes import FakeCleanupExecutions, FakeFingerprintStore, FakeStores, FakeUploadObjects
from tests.support.reconcile_world import World, world

__all__ = ["world"]

PRINTS = Fingerprints(0, array("I", [1, 2, 3]))


def printed(store: FakeFingerprintStore, file_id: str, *versions: int, kb_id: str = "kb_1") -> None:
    for version in versions:
        store.put_prints(FilePrints(kb_id, file_id, version, PRINTS))


def live_file(world: World, kb: KnowledgeBaseRecord, file_id: str, *, version: int = 1, upload_id: str, named_for: str,
              status: FileStatus = FileStatus.AVAILABLE) -> FileRecord:
    """A FILE at ``version`` (its current upload ``upload_id``) whose MemOS file carries ``named_for``'s name."""
    engine_file = world.memos.add_file(kb.memos_kb_id, memos_file_name(f"{file_id}.md", named_for), status)
    record = file_record(file_id, memos_file_id=engine_file.id, upload_id=upload_id).model_copy(update={"version": version})
    world.stores.table.seed(record)
    return record


# -- the reconciler --------------------------------------------------------------------------------------


def test_a_gone_files_fingerprints_are_removed_and_counted(world: World):
    kb = world.live_kb()
    live_file(world, kb, "fi_kept", upload_id="up_k", named_for="up_k")
    printed(world.prints, "fi_kept", 1)
    printed(world.prints, "fi_gone", 1, 2)

    report = world.reconciler().run()

    assert world.prints.versions("kb_1", "fi_gone") == []
    assert world.prints.versions("kb_1", "fi_kept") == [1]
    assert report.counts["PrintsRemoved"] == 2


def test_an_old_versions_fingerprints_go_once_memos_answers_from_the_new_one(world: World):
    kb = world.live_kb()
    live_file(world, kb, "fi_1", version=2, upload_id="up_2", named_for="up_2")
    printed(world.prints, "fi_1", 1, 2)

    world.reconciler().run()

    assert world.prints.versions("kb_1", "fi_1") == [2]


@pytest.mark.parametrize(
    ("named_for", "status"),
    [("up_1", FileStatus.AVAILABLE), ("up_2", FileStatus.PROCESSING), ("up_2", FileStatus.FAILED)],
    ids=["listing-before-the-update", "processing", "failed"],
)
def test_an_old_versions_fingerprints_stay_while_it_may_still_answer(world: World, named_for, status):
    kb = world.live_kb()
    live_file(world, kb, "fi_1", version=2, upload_id="up_2", named_for=named_for, status=status)
    printed(world.prints, "fi_1", 1, 2)

    report = world.reconciler().run()

    assert world.prints.versions("kb_1", "fi_1") == [1, 2]
    assert "PrintsRemoved" not in report.counts


def test_a_version_past_the_files_goes(world: World):
    kb = world.live_kb()
    live_file(world, kb, "fi_1", version=2, upload_id="up_2", named_for="up_1", status=FileStatus.PROCESSING)
    printed(world.prints, "fi_1", 2, 3)

    world.reconciler().run()

    assert world.prints.versions("kb_1", "fi_1") == [2]


def test_fingerprints_of_a_file_recorded_after_the_files_were_read_stay(stores: FakeStores):
    # The sweep lists the fingerprints first, then the files; a file recorded between the two reads (its
    # fingerprints written after it) is read again before anything of it goes.
    prints = FakeFingerprintStore()
    printed(prints, "fi_new", 1)
    listing = prints.query_print_versions("kb_1")
    stores.table.seed(file_record("fi_new"))

    assert sweep_prints(prints, stores.contents, "kb_1", listing, files=[], live=[]) == 0
    assert prints.versions("kb_1", "fi_new") == [1]


# -- the cleanup -------------------------------------------------------------------------------------------


@pytest.fixture
def kb(world: World) -> KnowledgeBaseRecord:
    return world.live_kb()


def clean(world: World, cleanup_id: str, prints: FakeFingerprintStore) -> None:
    cleaner = Cleaner(world.stores.cleanups, world.stores.contents, world.memos, FakeUploadObjects(),
                      world.stores.slots, prints=prints)
    assert cleaner.run(cleanup_id)


def test_a_deleted_files_fingerprints_go_with_its_cleanup(world: World, kb: KnowledgeBaseRecord):
    live_file(world, kb, "fi_1", version=2, upload_id="up_2", named_for="up_2")
    printed(world.prints, "fi_1", 1, 2)
    printed(world.prints, "fi_other", 1)
    deleter = Deleter(world.stores.kbs, world.stores.contents, world.stores.cleanups, FakeCleanupExecutions(),
                      retention_days=30)

    cleanup_id = deleter.delete_file("alice", "kb_1", "fi_1")
    clean(world, cleanup_id, world.prints)

    assert world.prints.versions("kb_1", "fi_1") == []
    assert world.prints.versions("kb_1", "fi_other") == [1]


def test_a_deleted_folders_files_fingerprints_go_with_its_cleanup(world: World, kb: KnowledgeBaseRecord):
    world.stores.table.seed(folder_record("fo_1"))
    for file_id in ("fi_a", "fi_b"):
        world.stores.table.seed(file_record(file_id, folder_id="fo_1"))
        printed(world.prints, file_id, 1)
    deleter = Deleter(world.stores.kbs, world.stores.contents, world.stores.cleanups, FakeCleanupExecutions(),
                      retention_days=30)

    cleanup_id = deleter.delete_folder("alice", "kb_1", "fo_1")
    clean(world, cleanup_id, world.prints)

    assert world.prints.items == {}
