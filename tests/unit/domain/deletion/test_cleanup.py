"""``memmy_kb.domain.deletion.cleanup``: the background rounds that remove a delete's leftovers from MemOS, S3
and the table, on the fakes. The state machine around them (Retry, Catch, the outbox item's delete) is
``tests/integration/deletion/test_deletion_kill_points.py``'s, ``test_deletion_model.py``'s and
``test_local_stepfunctions.py``'s."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from memmy_kb.domain.deletion.cleanup import (
    ROUND_RESERVE_SECONDS,
    Cleaner,
    CleanupFailed,
    CleanupRetryable,
)
from memmy_kb.domain.deletion.delete import Deleter
from memmy_kb.domain.storage import StoreUnavailable
from memmy_kb.records import CleanupPart, CleanupRecord
from tests.support.factories import (
    T0,
    at,
    file_record,
    folder_record,
    kb_record,
    owner_grant_for,
    upload_record,
)
from tests.support.fakes import (
    FakeCleanupExecutions,
    FakeKnowledgeEngine,
    FakeStores,
    FakeUploadObjects,
    memos_error,
)


@pytest.fixture
def objects() -> FakeUploadObjects:
    return FakeUploadObjects()


def cleaner(
    stores: FakeStores, memos: FakeKnowledgeEngine, objects: FakeUploadObjects, time_left: Iterator[float] | None = None
) -> Cleaner:
    return Cleaner(
        stores.cleanups,
        stores.contents,
        memos,
        objects,
        stores.slots,
        clock=lambda: T0,
        time_left=(lambda: next(time_left)) if time_left is not None else (lambda: None),
    )


def cleanup(target: str = "files", memos_kb_id: str = "mkb_0001", **extra: object) -> CleanupRecord:
    return CleanupRecord.model_validate(
        {
            "cleanup_id": "cl_1",
            "target": target,
            "kb_id": "kb_1",
            "memos_kb_id": memos_kb_id,
            "owner_id": "alice",
            "created_at": T0,
            "next_attempt_at": at(15),
            **extra,
        }
    )


@pytest.fixture
def deleted_kb(stores: FakeStores, memos: FakeKnowledgeEngine, objects: FakeUploadObjects) -> CleanupRecord:
    """kb_1 deleted by its owner: 45 MemOS files, objects under both prefixes, its partition still there."""
    memos_kb_id = memos.create_knowledgebase("memmy:kb_1")
    for n in range(45):
        memos.add_file(memos_kb_id, f"f{n}.md")
    other = memos.create_knowledgebase("memmy:kb_2")
    memos.add_file(other, "other.md")
    for key in ("uploads/kb_1/up_1", "uploads/kb_1/up_2", "verified/kb_1/up_1", "uploads/kb_10/up_1"):
        objects.put(key, b"bytes")
    kb = kb_record("kb_1", memos_kb_id=memos_kb_id)
    stores.table.seed(kb, owner_grant_for(kb), folder_record("fo_1"), file_record("fi_1"), upload_record("up_1"))
    Deleter(stores.kbs, stores.contents, stores.cleanups, FakeCleanupExecutions(), retention_days=30).delete_knowledge_base(
        "alice", "kb_1"
    )
    [head] = stores.table.cleanups.values()
    return head


# -- one round -------------------------------------------------------------------------------------


def test_given_a_deleted_kb_when_a_round_runs_then_memos_s3_and_the_partition_are_emptied_and_it_is_done(
    stores: FakeStores, memos: FakeKnowledgeEngine, objects: FakeUploadObjects, deleted_kb: CleanupRecord
) -> None:
    assert cleaner(stores, memos, objects).run(deleted_kb.cleanup_id) is True

    assert memos.calls["delete_knowledgebase_files"] == 3  # 45 files, at most 20 a request
    assert len(memos.deleted_files) == 45
    assert memos.deleted_knowledge_bases == [(deleted_kb.memos_kb_id, True)]
    assert [kb.name for kb in memos.knowledge_bases.values()] == ["memmy:kb_2"]
    assert sorted(objects.objects) == ["uploads/kb_10/up_1"]
    assert stores.contents.query_kb_items("kb_1") == ([], [], [])
    # The outbox item is the state machine's to delete once the round says done.
    assert stores.cleanups.get_cleanup(deleted_kb.cleanup_id)[0] == deleted_kb


def test_given_the_memos_kb_already_gone_when_a_kb_round_runs_then_it_is_done_all_the_same(
    stores: FakeStores, memos: FakeKnowledgeEngine, objects: FakeUploadObjects, deleted_kb: CleanupRecord
) -> None:
    memos.knowledge_bases.pop(deleted_kb.memos_kb_id)

    assert cleaner(stores, memos, objects).run(deleted_kb.cleanup_id) is True
    assert memos.calls["delete_knowledgebase_files"] == 0
    assert sorted(objects.objects) == ["uploads/kb_10/up_1"]


def test_given_little_time_left_when_a_kb_round_runs_then_it_stops_early_and_the_next_round_finishes(
    stores: FakeStores, memos: FakeKnowledgeEngine, objects: FakeUploadObjects, deleted_kb: CleanupRecord
) -> None:
    plenty, short = ROUND_RESERVE_SECONDS + 60, ROUND_RESERVE_SECONDS - 1

    assert cleaner(stores, memos, objects, iter([plenty, short])).run(deleted_kb.cleanup_id) is False

    assert memos.calls["delete_knowledgebase_files"] == 1
    assert len(memos.knowledge_bases) == 2  # the MemOS KB itself waits for its files
    assert cleaner(stores, memos, objects).run(deleted_kb.cleanup_id) is True
    assert deleted_kb.memos_kb_id not in memos.knowledge_bases
    assert len(memos.deleted_files) == 45


def test_given_deleted_files_and_parts_when_a_round_runs_then_their_memos_files_and_objects_go_and_the_parts(
    stores: FakeStores, memos: FakeKnowledgeEngine, objects: FakeUploadObjects
) -> None:
    memos_kb_id = memos.create_knowledgebase("memmy:kb_1")
    kept = memos.add_file(memos_kb_id, "kept.md")
    ids = [memos.add_file(memos_kb_id, f"f{n}.md").id for n in range(3)]
    stores.table.seed(
        cleanup(memos_file_ids=[ids[0]], upload_ids=["up_a"]),
        CleanupPart(cleanup_id="cl_1", part_id="p1", memos_file_ids=ids[1:], upload_ids=["up_b", "up_c"]),
        CleanupPart(cleanup_id="cl_1", part_id="p2", upload_ids=["up_d"]),
    )
    for upload_id in ("up_a", "up_b", "up_d", "up_keep"):
        objects.put(f"uploads/kb_1/{upload_id}", b"x")
        objects.put(f"verified/kb_1/{upload_id}", b"x")

    assert cleaner(stores, memos, objects).run("cl_1") is True

    assert sorted(memos.deleted_files) == sorted(ids)
    assert list(memos.knowledge_bases[memos_kb_id].files) == [kept.id]
    assert sorted(objects.objects) == ["uploads/kb_1/up_keep", "verified/kb_1/up_keep"]
    assert stores.cleanups.get_cleanup("cl_1") == (cleanup(memos_file_ids=[ids[0]], upload_ids=["up_a"]), [])


def test_given_a_deleted_folder_with_leftovers_when_a_round_runs_then_it_sweeps_them_first_and_removes_them(
    stores: FakeStores, memos: FakeKnowledgeEngine, objects: FakeUploadObjects
) -> None:
    memos_kb_id = memos.create_knowledgebase("memmy:kb_1")
    left = memos.add_file(memos_kb_id, "left.md")
    stores.table.seed(
        kb_record("kb_1", memos_kb_id=memos_kb_id),
        cleanup("folder", memos_kb_id, folder_id="fo_gone"),
        folder_record("fo_sub", parent_id="fo_gone"),  # a sweep was interrupted under the deleted folder
        file_record("fi_left", folder_id="fo_sub", memos_file_id=left.id, upload_id="up_left"),
        file_record("fi_root"),
    )
    objects.put("uploads/kb_1/up_left", b"x")

    assert cleaner(stores, memos, objects).run("cl_1") is True

    assert memos.deleted_files == [left.id]
    assert [f.file_id for f in stores.contents.query_kb_items("kb_1")[1]] == ["fi_root"]
    assert stores.contents.query_folders("kb_1") == []
    assert objects.objects == {}
    assert stores.cleanups.get_cleanup("cl_1")[1] == []


def test_given_no_outbox_item_when_a_round_runs_then_it_is_done_without_a_call(
    stores: FakeStores, memos: FakeKnowledgeEngine, objects: FakeUploadObjects
) -> None:
    assert cleaner(stores, memos, objects).run("cl_gone") is True
    assert (memos.total_calls, sum(objects.calls.values())) == (0, 0)


def test_given_a_cleanup_twice_when_rounds_repeat_then_the_second_only_repeats_work(
    stores: FakeStores, memos: FakeKnowledgeEngine, objects: FakeUploadObjects, deleted_kb: CleanupRecord
) -> None:
    cleaner(stores, memos, objects).run(deleted_kb.cleanup_id)
    deleted = list(memos.deleted_files)

    assert cleaner(stores, memos, objects).run(deleted_kb.cleanup_id) is True
    assert memos.deleted_files == deleted


# -- failures: what the state machine retries and what it fails --------------------------------------


class AccessDenied(Exception):
    """Stands for what an adapter lets through untranslated: a bug or a misconfiguration."""


@pytest.mark.parametrize(
    ("fail", "expected"),
    [
        ("memos-unavailable", CleanupRetryable),
        ("memos-rate-limited", CleanupRetryable),
        ("s3-unavailable", CleanupRetryable),
        ("table-unavailable", CleanupRetryable),
        ("memos-auth", CleanupFailed),
        ("s3-access-denied", AccessDenied),
    ],
)
def test_given_a_failure_when_a_round_runs_then_transient_ones_are_retryable_and_the_rest_fail_the_execution(
    stores: FakeStores,
    memos: FakeKnowledgeEngine,
    objects: FakeUploadObjects,
    deleted_kb: CleanupRecord,
    monkeypatch: pytest.MonkeyPatch,
    fail: str,
    expected: type[Exception],
) -> None:
    def table_unavailable_once() -> None:
        delete_kb_items = stores.cleanups.delete_kb_items

        def unavailable(*args: object, **kwargs: object) -> bool:
            monkeypatch.setattr(stores.cleanups, "delete_kb_items", delete_kb_items)
            raise StoreUnavailable("table", "ProvisionedThroughputExceededException")

        monkeypatch.setattr(stores.cleanups, "delete_kb_items", unavailable)

    failures = {
        "memos-unavailable": lambda: memos.fail("delete_knowledgebase_files", memos_error(code=50004), times=1),
        "memos-rate-limited": lambda: memos.fail("iter_knowledgebase_files", memos_error(code=40309), times=1),
        "memos-auth": lambda: memos.fail("delete_knowledgebase", memos_error(code=40100), times=1),
        # What the S3 adapter makes of SlowDown, a 503 or a timeout (tests/unit/adapters/test_aws_errors.py).
        "s3-unavailable": lambda: objects.fail("delete_prefix", StoreUnavailable("bucket", "SlowDown")),
        "table-unavailable": table_unavailable_once,
        "s3-access-denied": lambda: objects.fail("delete_prefix", AccessDenied("s3:DeleteObject")),
    }
    failures[fail]()

    with pytest.raises(expected):
        cleaner(stores, memos, objects).run(deleted_kb.cleanup_id)

    # Nothing is lost: the next round (the Retry's, or the reconciler's restart) finishes the work.
    assert cleaner(stores, memos, objects).run(deleted_kb.cleanup_id) is True
    assert sorted(objects.objects) == ["uploads/kb_10/up_1"]
    assert deleted_kb.memos_kb_id not in memos.knowledge_bases
    assert stores.contents.query_kb_items("kb_1") == ([], [], [])


def test_given_the_store_unavailable_mid_round_when_it_runs_then_the_retryable_error_names_it(
    stores: FakeStores, memos: FakeKnowledgeEngine, objects: FakeUploadObjects, deleted_kb: CleanupRecord
) -> None:
    # Given S3 answering a timeout after the MemOS files are gone
    objects.fail("delete_prefix", StoreUnavailable("bucket", "ReadTimeoutError"))

    # When a round runs, then the state machine's Retry sees CleanupRetryable, caused by the store's error
    with pytest.raises(CleanupRetryable, match="bucket unavailable: ReadTimeoutError") as raised:
        cleaner(stores, memos, objects).run(deleted_kb.cleanup_id)
    assert isinstance(raised.value.__cause__, StoreUnavailable)
    assert len(memos.deleted_files) == 45  # the work before the failure stays done
