"""``CleanupStore``'s contract, on the fake and on DynamoDB: a delete's transactions with their outbox item,
and the reconciler's queue of due cleanups and its cursor."""

from __future__ import annotations

import pytest

from memmy_kb.domain.storage import ConditionFailed, ItemMissing
from memmy_kb.records import CleanupPart, KnowledgeBaseRecord
from tests.support.factories import (
    UNCAPPED_COUNT,
    activity_for,
    at,
    file_record,
    folder_record,
    kb_record,
    owner_grant_for,
    reader_grant_for,
    uncapped_daily,
    upload_record,
)
from tests.support.store_contract import Backend, cleanup_record, entry, refused, stored_kb

# == CleanupStore: a delete's transactions with their outbox item ======================================


def test_given_a_shared_kb_when_deleted_with_its_outbox_then_meta_every_grant_and_one_owned_go_and_the_item_is_written(
    backend: Backend,
) -> None:
    record = kb_record("kb_1")
    backend.kbs.put_kb_with_owner_grant(record, owner_grant_for(record), max_owned=5, request=None)
    backend.kbs.put_reader_grant(reader_grant_for(record, "bob"), max_readers=5, daily=uncapped_daily(), activity=activity_for("shared", record.kb_id, "bob"))
    backend.kbs.put_reader_grant(reader_grant_for(record, "carol"), max_readers=5, daily=uncapped_daily(), activity=activity_for("shared", record.kb_id, "carol"))
    cleanup = cleanup_record(target="kb")

    backend.cleanups.delete_kb_with_outbox(stored_kb(backend), ["bob", "carol"], cleanup)

    assert backend.kbs.get_kb("kb_1") is None
    assert backend.kbs.query_kb_members("kb_1") == []
    assert backend.cleanups.get_cleanup("cl_1") == (cleanup, [])
    # One owned KB was uncounted: a cap of 1 admits a new one.
    again = kb_record("kb_2")
    backend.kbs.put_kb_with_owner_grant(again, owner_grant_for(again), max_owned=1, request=None)


def test_given_a_share_after_the_read_when_the_kb_is_deleted_then_condition_failed_kb_and_nothing_changes(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    read = stored_kb(backend)
    backend.kbs.put_reader_grant(reader_grant_for(kb, "bob"), max_readers=5, daily=uncapped_daily(), activity=activity_for("shared", kb.kb_id, "bob"))

    assert refused(ConditionFailed, lambda: backend.cleanups.delete_kb_with_outbox(read, [], cleanup_record())) == "kb"
    assert stored_kb(backend).member_count == 1
    assert backend.kbs.get_grant("alice", "kb_1") is not None
    assert backend.cleanups.get_cleanup("cl_1") == (None, [])


def test_given_no_meta_or_another_owner_when_the_kb_is_deleted_then_condition_failed_kb(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    gone = kb_record("kb_gone")
    assert refused(ConditionFailed, lambda: backend.cleanups.delete_kb_with_outbox(gone, [], cleanup_record())) == "kb"
    backend.seed(kb.model_copy(update={"owner_id": "dave"}))
    assert refused(ConditionFailed, lambda: backend.cleanups.delete_kb_with_outbox(kb, [], cleanup_record())) == "kb"
    assert backend.cleanups.get_cleanup("cl_1") == (None, [])


def test_given_a_counted_file_when_deleted_with_its_outbox_then_it_goes_uncounted_logged_and_the_item_is_written(
    backend: Backend,
) -> None:
    backend.seed(kb_record("kb_1").model_copy(update={"file_count": 2, "bytes_used": 100}))
    file = file_record("fi_1", size_bytes=30)
    backend.seed(file)
    cleanup = cleanup_record(memos_file_ids=["mf-fi_1"], upload_ids=["up-fi_1"])

    backend.cleanups.delete_file_with_outbox(file, "alice", cleanup, activity=entry("file_deleted", "fi_1", 1))

    assert backend.contents.get_file("kb_1", "fi_1") is None
    assert (stored_kb(backend).file_count, stored_kb(backend).bytes_used) == (1, 70)
    assert backend.cleanups.get_cleanup("cl_1") == (cleanup, [])
    assert [e.subject for e in backend.activity.query_activity("kb_1", limit=5, cursor=None, now=0)[0]] == ["fi_1"]


@pytest.mark.parametrize("what", ["file-gone", "file-replaced", "kb-gone", "other-owner"])
def test_given_the_file_or_kb_changed_when_the_file_is_deleted_then_item_missing_names_it_and_nothing_is_written(
    backend: Backend, what: str
) -> None:
    file = file_record("fi_1")
    if what != "kb-gone":
        backend.seed(kb_record("kb_1", owner_id="dave" if what == "other-owner" else "alice"))
    if what != "file-gone":
        backend.seed(file.model_copy(update={"memos_file_id": "mf-other"}) if what == "file-replaced" else file)
    expected = "kb" if what in ("kb-gone", "other-owner") else "file"

    delete = lambda: backend.cleanups.delete_file_with_outbox(  # noqa: E731
        file, "alice", cleanup_record(), activity=entry("file_deleted", "fi_1", 1)
    )
    assert refused(ItemMissing, delete) == expected
    assert backend.cleanups.get_cleanup("cl_1") == (None, [])
    assert backend.activity.query_activity("kb_1", limit=5, cursor=None, now=0) == ([], None)


def test_given_a_folder_when_deleted_with_its_outbox_then_only_the_folder_goes_and_missing_ones_are_named(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    docs, sub = folder_record("fo_docs"), folder_record("fo_sub", parent_id="fo_docs")
    backend.seed(docs, sub)
    cleanup = cleanup_record(target="folder", folder_id="fo_docs")

    backend.cleanups.delete_folder_with_outbox(docs, "alice", cleanup, activity=entry("folder_deleted", "fo_docs", 1))

    assert backend.contents.query_folders("kb_1") == [sub]
    assert backend.cleanups.get_cleanup("cl_1") == (cleanup, [])
    again = cleanup_record("cl_2")
    logged = entry("folder_deleted", "fo_sub", 2)
    assert refused(ItemMissing, lambda: backend.cleanups.delete_folder_with_outbox(docs, "alice", again, activity=logged)) == "folder"
    assert refused(ItemMissing, lambda: backend.cleanups.delete_folder_with_outbox(sub, "bob", again, activity=logged)) == "kb"
    assert backend.cleanups.get_cleanup("cl_2") == (None, [])
    assert [e.subject for e in backend.activity.query_activity("kb_1", limit=5, cursor=None, now=0)[0]] == ["fo_docs"]


def test_given_files_one_already_gone_when_swept_with_a_part_then_the_rest_go_counted_once_and_the_part_is_written(
    backend: Backend,
) -> None:
    backend.seed(kb_record("kb_1").model_copy(update={"file_count": 3, "bytes_used": 60}))
    a, b, c = (file_record(f"fi_{n}", size_bytes=20) for n in "abc")
    backend.seed(a, c)
    part = CleanupPart(cleanup_id="cl_1", part_id="p1", memos_file_ids=["mf-fi_a", "mf-fi_b", "mf-fi_c"])

    backend.cleanups.delete_files_with_part(part, [a, b, c])

    assert backend.contents.query_kb_items("kb_1")[1] == []
    assert (stored_kb(backend).file_count, stored_kb(backend).bytes_used) == (1, 20)
    assert backend.cleanups.get_cleanup("cl_1") == (None, [part])


def test_given_no_meta_when_files_are_swept_then_they_go_uncounted_and_a_part_without_files_is_written_too(
    backend: Backend,
) -> None:
    a = file_record("fi_a", kb_id="kb_gone")
    backend.seed(a)
    uploads_only = CleanupPart(cleanup_id="cl_1", part_id="p0", upload_ids=["up_1"])

    backend.cleanups.delete_files_with_part(uploads_only, [])
    backend.cleanups.delete_files_with_part(CleanupPart(cleanup_id="cl_1", part_id="p1"), [a])

    assert backend.contents.get_file("kb_gone", "fi_a") is None
    assert [p.part_id for p in backend.cleanups.get_cleanup("cl_1")[1]] == ["p0", "p1"]
    backend.cleanups.delete_cleanup_parts("cl_1", ["p0", "p1"])
    assert backend.cleanups.get_cleanup("cl_1") == (None, [])


def test_given_a_kbs_partition_when_its_items_are_deleted_in_bounded_calls_then_all_go_and_only_its_own(
    backend: Backend,
) -> None:
    backend.seed(
        folder_record("fo_a"), file_record("fi_a"), upload_record("up_a"), folder_record("fo_b"),
        file_record("fi_x", kb_id="kb_2"),
    )

    assert backend.cleanups.delete_kb_items("kb_1", 2) is False
    assert backend.cleanups.delete_kb_items("kb_1", 2) is True
    assert backend.contents.query_kb_items("kb_1") == ([], [], [])
    assert backend.contents.get_file("kb_2", "fi_x") is not None
    backend.cleanups.delete_folders([folder_record("fo_gone")])  # deleting nothing is fine


# == CleanupStore: the reconciler's queue of due cleanups and its cursor ================================


def test_given_cleanups_in_both_queues_when_due_ones_are_queried_then_failed_first_each_oldest_first_and_limited(
    backend: Backend,
) -> None:
    backend.seed(
        cleanup_record("cl_p2", due=20),
        cleanup_record("cl_p1", due=10),
        cleanup_record("cl_f1", state="failed", due=30),
        cleanup_record("cl_late", due=90),
    )

    due = backend.cleanups.query_due_cleanups(at(60), 10)

    assert [c.cleanup_id for c in due] == ["cl_f1", "cl_p1", "cl_p2"]
    assert due[1] == cleanup_record("cl_p1", due=10)
    assert [c.cleanup_id for c in backend.cleanups.query_due_cleanups(at(60), 2)] == ["cl_f1", "cl_p1"]
    assert backend.cleanups.query_due_cleanups(at(5), 10) == []


def test_given_a_due_cleanup_when_restarted_then_counted_once_pending_again_and_a_stale_count_is_refused(
    backend: Backend,
) -> None:
    failed = cleanup_record(state="failed", attempts=2, due=10, last_error="States.Timeout")
    backend.seed(failed)

    restarted = backend.cleanups.update_cleanup_restarted(failed, at(100))

    assert restarted == failed.model_copy(update={"attempts": 3, "state": "pending", "next_attempt_at": at(100)})
    assert backend.cleanups.get_cleanup("cl_1")[0] == restarted
    assert backend.cleanups.query_due_cleanups(at(60), 10) == []
    assert refused(ConditionFailed, lambda: backend.cleanups.update_cleanup_restarted(failed, at(200))) == "cleanup"
    gone = cleanup_record("cl_gone")
    assert refused(ConditionFailed, lambda: backend.cleanups.update_cleanup_restarted(gone, at(200))) == "cleanup"


def test_given_live_kbs_when_paged_after_a_cursor_then_in_id_order_and_the_cursor_reads_back(
    backend: Backend,
) -> None:
    for kb_id in ("kb_c", "kb_a", "kb_b"):
        record = kb_record(kb_id)
        backend.kbs.put_kb_with_owner_grant(record, owner_grant_for(record), max_owned=UNCAPPED_COUNT, request=None)

    assert [k.kb_id for k in backend.cleanups.query_kbs_after(None, 2)] == ["kb_a", "kb_b"]
    assert backend.cleanups.query_kbs_after(None, 1) == [kb_record("kb_a")]
    assert [k.kb_id for k in backend.cleanups.query_kbs_after("kb_b", 2)] == ["kb_c"]
    assert backend.cleanups.get_cursor("residue") is None
    backend.cleanups.put_cursor("residue", "kb_b")
    assert backend.cleanups.get_cursor("residue") == "kb_b"
    backend.cleanups.put_cursor("residue", None)
    assert backend.cleanups.get_cursor("residue") is None
