"""``memmy_kb.domain.reconcile.repair``: the scheduled repair pass, step by step, on the fakes."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from memmy_kb.domain.engine import EngineBackend, MemosApiKeyError
from memmy_kb.domain.knowledge_bases.naming import memos_file_name
from memmy_kb.domain.reconcile import repair
from memmy_kb.domain.reconcile.repair import (
    CLEANUP_BACKOFF,
    CLEANUP_BACKOFF_CAP,
    LOST,
    RESIDUE_CURSOR,
    RESIDUE_GRACE,
    STUCK_ATTEMPTS,
    SUBMITTING_GRACE,
    ReconcileLimits,
)
from memmy_kb.domain.reconcile.report import REPORT_KINDS
from memmy_kb.domain.uploads.ingest import KB_GONE
from memmy_kb.domain.uploads.residue import OBJECTS_CURSOR
from memmy_kb.records import CleanupRecord, KnowledgeBaseRecord, UploadRecord
from tests.support.factories import T0, UNCAPPED_COUNT, file_record, kb_record, owner_grant_for, upload_record
from tests.support.fakes import (
    FakeCleanupStore,
    FakeEngines,
    FakeKnowledgeEngine,
    FakeStores,
    memos_error,
)
from tests.support.reconcile_world import NOW, World, world

__all__ = ["world"]  # the fixture: the reconciler's fakes


# -- 1. cleanups -------------------------------------------------------------------------------------


def cleanup(cleanup_id: str, *, state: str = "pending", attempts: int = 1, due: datetime = NOW) -> CleanupRecord:
    return CleanupRecord.model_validate(
        {
            "cleanup_id": cleanup_id,
            "target": "files",
            "kb_id": "kb_1",
            "memos_kb_id": "mkb_1",
            "owner_id": "alice",
            "state": state,
            "attempts": attempts,
            "created_at": T0,
            "next_attempt_at": due,
        }
    )


@pytest.mark.parametrize(
    ("attempts", "backoff"),
    [(1, CLEANUP_BACKOFF), (2, CLEANUP_BACKOFF * 2), (3, CLEANUP_BACKOFF * 4), (12, CLEANUP_BACKOFF_CAP)],
)
def test_given_a_due_cleanup_when_reconciled_then_a_new_execution_starts_and_the_next_waits_twice_as_long(
    world: World, attempts: int, backoff: timedelta
) -> None:
    world.stores.table.seed(cleanup("cl_1", state="failed", attempts=attempts, due=NOW - timedelta(minutes=1)))

    report = world.reconciler().run()

    head, _ = world.stores.cleanups.get_cleanup("cl_1")
    assert head is not None
    assert (head.state, head.attempts, head.next_attempt_at) == ("pending", attempts + 1, NOW + backoff)
    assert world.executions.executions == {f"cl_1-{attempts + 1}": "cl_1"}
    assert report.counts["CleanupRestarted"] == 1
    assert report.counts.get("CleanupStuck", 0) == (1 if attempts + 1 > STUCK_ATTEMPTS else 0)


class OtherRunFirst(FakeCleanupStore):
    """Another reconcile run restarts ``raced`` between this run's query and its own restart."""

    def __init__(self, stores: FakeStores, raced: CleanupRecord) -> None:
        super().__init__(stores.table)
        self.raced = raced

    def query_due_cleanups(self, now: datetime, limit: int) -> list[CleanupRecord]:
        due = super().query_due_cleanups(now, limit)
        self.update_cleanup_restarted(self.raced, now + CLEANUP_BACKOFF)
        return due


def test_given_cleanups_not_yet_due_or_restarted_by_another_run_when_reconciled_then_none_starts(
    world: World,
) -> None:
    raced = cleanup("cl_raced", due=NOW)
    world.stores.table.seed(cleanup("cl_later", due=NOW + timedelta(minutes=1)), raced)
    reconciler = world.reconciler()
    reconciler.cleanups = OtherRunFirst(world.stores, raced)

    report = reconciler.run()

    assert world.executions.executions == {}
    assert "CleanupRestarted" not in report.counts
    assert world.stores.cleanups.get_cleanup("cl_raced")[0].attempts == 2  # type: ignore[union-attr]
    assert world.stores.cleanups.get_cleanup("cl_later")[0].attempts == 1  # type: ignore[union-attr]


# -- 2. submitting uploads of unknown outcome ---------------------------------------------------------


def stuck(world: World, kb: KnowledgeBaseRecord, upload_id: str = "up_1", *, since: timedelta = SUBMITTING_GRACE) -> UploadRecord:
    """An upload left submitting by an ingest that never learned MemOS's answer, ``since`` ago."""
    upload = upload_record(
        upload_id,
        kb_id=kb.kb_id,
        state="submitting",
        attempt_id="att-lost",
        submitting_at=NOW - since - timedelta(seconds=1),
        created_at=T0,
    ).model_copy(update={"memos_kb_id": kb.memos_kb_id})
    world.stores.table.seed(upload)
    world.objects.put(upload.object_key, b"# notes\n")
    return upload


def test_given_memos_holds_the_file_when_a_stuck_upload_is_resolved_then_it_is_recorded_counted_and_logged(
    world: World,
) -> None:
    kb = world.live_kb()
    upload = stuck(world, kb)
    added = world.memos.add_file(kb.memos_kb_id, memos_file_name(upload.filename, upload.upload_id))
    world.memos.add_file(kb.memos_kb_id, memos_file_name("other.md", "up_other"))

    report = world.reconciler().run()

    done = world.stores.contents.get_upload("kb_1", "up_1")
    assert done is not None
    assert (done.state, done.memos_file_id) == ("submitted", added.id)
    [file] = world.stores.contents.query_kb_items("kb_1")[1]
    assert (file.memos_file_id, file.upload_id) == (added.id, "up_1")
    assert world.stores.kbs.get_kb("kb_1").file_count == 1  # type: ignore[union-attr]
    assert [e.kind for e in world.stores.table.activity.values()] == ["uploaded"]
    assert report.counts["UploadResolvedSubmitted"] == 1
    assert (world.memos.calls["add_knowledgebase_files"], world.requeue.requeued) == (0, [])


def test_given_memos_never_got_the_file_when_a_stuck_upload_is_resolved_then_it_is_pending_and_requeued(
    world: World,
) -> None:
    upload = stuck(world, world.live_kb())

    report = world.reconciler().run()

    again = world.stores.contents.get_upload("kb_1", "up_1")
    assert again is not None
    assert (again.state, again.attempt_id) == ("pending", None)
    assert world.requeue.requeued == [upload.object_key]
    assert report.counts["UploadRequeued"] == 1
    assert world.memos.calls["add_knowledgebase_files"] == 0  # never added here: the ingest redoes it


def test_given_neither_memos_nor_the_bucket_has_it_when_resolved_then_rejected_as_lost(world: World) -> None:
    upload = stuck(world, world.live_kb())
    world.objects.delete(upload.object_key)

    report = world.reconciler().run()

    assert world.stores.contents.get_upload("kb_1", "up_1").reason == LOST  # type: ignore[union-attr]
    assert (world.requeue.requeued, report.counts["UploadResolvedRejected"]) == ([], 1)


def test_given_the_kb_was_deleted_when_a_stuck_upload_is_resolved_then_rejected_and_its_bytes_deleted(
    world: World,
) -> None:
    kb = world.live_kb()
    upload = stuck(world, kb)
    del world.stores.table.kbs["kb_1"]

    world.reconciler().run()

    rejected = world.stores.contents.get_upload("kb_1", "up_1")
    assert (rejected.state, rejected.reason) == ("rejected", KB_GONE)  # type: ignore[union-attr]
    assert world.objects.head(upload.object_key) is None


def test_given_a_young_submission_or_memos_down_when_reconciled_then_the_upload_is_left_as_it_is(
    world: World,
) -> None:
    kb = world.live_kb()
    young = stuck(world, kb, "up_young", since=SUBMITTING_GRACE - timedelta(minutes=2))
    old = stuck(world, kb, "up_old")
    world.memos.fail("iter_knowledgebase_files", memos_error(code=50004))

    world.reconciler().run()

    assert world.stores.contents.get_upload("kb_1", "up_young") == young
    assert world.stores.contents.get_upload("kb_1", "up_old") == old
    assert world.requeue.requeued == []


# -- 3. pending uploads never completed -----------------------------------------------------------------


def test_given_pending_uploads_when_reconciled_then_those_whose_post_lapsed_expire_with_their_bytes(
    world: World,
) -> None:
    world.live_kb()
    lapsed = upload_record("up_lapsed", expires_at=int(NOW.timestamp()) - 1, created_at=T0)
    fresh = upload_record("up_fresh", expires_at=int(NOW.timestamp()) + 600, created_at=T0)
    world.stores.table.seed(lapsed, fresh)
    for key in (lapsed.object_key, "verified/kb_1/up_lapsed", fresh.object_key):
        world.objects.put(key, b"x")

    report = world.reconciler().run()

    assert world.stores.contents.get_upload("kb_1", "up_lapsed").state == "expired"  # type: ignore[union-attr]
    assert world.stores.contents.get_upload("kb_1", "up_fresh") == fresh
    assert sorted(world.objects.objects) == [fresh.object_key]
    assert report.counts["UploadExpired"] == 1


# -- 4. creates of unknown outcome ----------------------------------------------------------------------


def test_given_intents_when_reconciled_then_stale_ones_are_counted_once_and_fresh_ones_kept(world: World) -> None:
    for kb_id, started in (("kb_old", NOW - timedelta(hours=1)), ("kb_new", NOW - timedelta(minutes=1))):
        world.stores.intents.put_create_intent(
            kb_id, f"memmy:{kb_id}", started, 1_900_000_000, owner_id="alice", max_owned=10, request=None, now=0
        )

    first = world.reconciler().run()
    second = world.reconciler().run()

    assert first.counts["KbCreateOutcomeUnknown"] == 1
    assert "KbCreateOutcomeUnknown" not in second.counts
    assert list(world.stores.table.intents) == ["kb_new"]


# -- 5. MemOS residue -----------------------------------------------------------------------------------


def aged(memos: FakeKnowledgeEngine, memos_kb_id: str, name: str, age: timedelta) -> str:
    file = memos.add_file(memos_kb_id, name)
    memos.knowledge_bases[memos_kb_id].files[file.id] = replace(file, created_at=NOW - age)
    return file.id


def test_given_memos_files_nothing_references_when_reconciled_then_old_ones_are_removed_and_the_rest_kept(
    world: World,
) -> None:
    kb = world.live_kb()
    old = RESIDUE_GRACE + timedelta(minutes=1)
    residue = aged(world.memos, kb.memos_kb_id, memos_file_name("gone.md", "up_gone"), old)
    recorded = aged(world.memos, kb.memos_kb_id, memos_file_name("a.md", "up_a"), old)
    in_flight = aged(world.memos, kb.memos_kb_id, memos_file_name("b.md", "up_b"), old)
    young = aged(world.memos, kb.memos_kb_id, memos_file_name("c.md", "up_c"), RESIDUE_GRACE / 2)
    world.stores.table.seed(
        file_record("fi_a", memos_file_id=recorded, upload_id="up_a"),
        upload_record("up_b", expires_at=int(NOW.timestamp()) + 600, created_at=T0),
    )

    report = world.reconciler().run()

    assert world.memos.deleted_files == [residue]
    assert sorted(world.memos.knowledge_bases[kb.memos_kb_id].files) == sorted([recorded, in_flight, young])
    assert (report.counts["ResidueFound"], report.counts["ResidueRemoved"]) == (1, 1)


def test_given_more_kbs_than_a_run_scans_when_reconciled_then_the_cursor_resumes_and_wraps_around(
    world: World,
) -> None:
    for kb_id in ("kb_a", "kb_b", "kb_c"):
        world.live_kb(kb_id)
    limits = ReconcileLimits(kbs=2)

    world.reconciler(limits=limits).remove_residue()
    assert world.stores.cleanups.get_cursor(RESIDUE_CURSOR) == "kb_b"
    listed = world.memos.calls["iter_knowledgebase_files"]
    world.reconciler(limits=limits).remove_residue()

    assert world.memos.calls["iter_knowledgebase_files"] - listed == 1  # kb_c only
    assert world.stores.cleanups.get_cursor(RESIDUE_CURSOR) is None  # a short page: start over next time


def test_given_memos_failing_mid_scan_when_reconciled_then_the_cursor_stays_at_the_last_kb_scanned(
    world: World,
) -> None:
    for kb_id in ("kb_a", "kb_b", "kb_c"):
        world.live_kb(kb_id)
    world.stores.cleanups.put_cursor(RESIDUE_CURSOR, "kb_a")

    world.memos.fail("iter_knowledgebase_files", memos_error(code=50004), times=1)
    world.reconciler().remove_residue()  # kb_b's listing fails: nothing scanned

    assert world.stores.cleanups.get_cursor(RESIDUE_CURSOR) == "kb_a"


# -- 6. upload objects nothing needs ---------------------------------------------------------------


def test_given_objects_of_gone_or_final_uploads_when_swept_then_they_go_and_those_in_flight_stay(
    world: World,
) -> None:
    world.live_kb()
    states = ("pending", "submitting", "submitted", "rejected", "expired")
    world.stores.table.seed(*(upload_record(f"up_{n}", state=state, created_at=T0) for n, state in enumerate(states)))  # type: ignore[arg-type]
    for n in range(len(states)):
        world.objects.put(f"uploads/kb_1/up_{n}", b"x")
        world.objects.put(f"verified/kb_1/up_{n}", b"x")
    # A deleted KB's object that arrived after its cleanup emptied S3 (its records are gone), and a key
    # that is not ours
    world.objects.put("uploads/kb_00ff/up_00ff", b"x")
    world.objects.put("verified/kb_00ff/up_00ff", b"x")
    world.objects.put("uploads/readme.txt", b"x")

    report = world.reconciler().run()

    kept = [f"{family}/kb_1/up_{n}" for family in ("uploads", "verified") for n in range(3)]
    assert sorted(world.objects.objects) == sorted([*kept, "uploads/readme.txt"])
    assert report.counts["UploadObjectsRemoved"] == 6
    assert world.stores.cleanups.get_cursor(OBJECTS_CURSOR) is None


def test_given_more_objects_than_a_run_lists_when_swept_then_the_cursor_resumes_and_wraps_around(
    world: World,
) -> None:
    keys = [f"uploads/kb_00ff/up_0{n}" for n in range(3)]
    for key in keys:
        world.objects.put(key, b"x")
    limits = ReconcileLimits(objects=2)

    world.reconciler(limits=limits).sweep_objects()
    assert (sorted(world.objects.objects), world.stores.cleanups.get_cursor(OBJECTS_CURSOR)) == (keys[2:], keys[1])
    world.reconciler(limits=limits).sweep_objects()

    assert world.objects.objects == {}
    assert world.stores.cleanups.get_cursor(OBJECTS_CURSOR) is None  # a short page: start over next time
    assert world.objects.calls["list_keys"] == 2


def test_given_the_invocation_nearly_over_when_a_run_starts_then_it_does_nothing(world: World) -> None:
    world.stores.table.seed(cleanup("cl_1", due=NOW - timedelta(minutes=1)))
    world.live_kb()

    report = world.reconciler(time_left=[1.0]).run()

    assert (report.counts, world.executions.executions) == ({}, {})
    assert world.memos.calls["iter_knowledgebase_files"] == 0


def test_every_count_a_run_reports_has_words_for_a_person() -> None:
    # memmy-local reconcile prints each count by REPORT_KINDS; a count added without words would show raw
    source = Path(repair.__file__).read_text(encoding="utf-8")
    reported = set(re.findall(r'"([A-Z][A-Za-z]+)"', source[source.index("class Reconciler") :]))
    assert "CleanupRestarted" in reported
    assert reported <= set(REPORT_KINDS)


# -- every MemOS backend --------------------------------------------------------------------------------


def test_given_kbs_on_two_backends_when_reconciled_then_each_residue_goes_from_its_own_backend_and_capacity_is_measured(
    stores: FakeStores,
) -> None:
    pool = FakeEngines(a=2, b=4)
    world = World(stores, pool)  # type: ignore[arg-type]
    old = RESIDUE_GRACE + timedelta(minutes=1)
    left_behind = {}
    for kb_id, backend in (("kb_a", "a"), ("kb_b", "b")):
        kb = kb_record(kb_id, memos_kb_id=pool[backend].create_knowledgebase(f"memmy:{kb_id}"), memos_backend=backend)
        stores.kbs.put_kb_with_owner_grant(kb, owner_grant_for(kb), max_owned=UNCAPPED_COUNT, request=None)
        stores.slots.claim_slot(backend, kb_id, max_kbs=4)
        left_behind[backend] = aged(pool[backend], kb.memos_kb_id, memos_file_name("x.md", f"up_{kb_id}"), old)

    report = world.reconciler().run()

    assert pool["a"].deleted_files == [left_behind["a"]]
    assert pool["b"].deleted_files == [left_behind["b"]]
    assert (report.backend_used, report.backend_max) == ({"a": 1, "b": 1}, {"a": 2, "b": 4})
    assert report.capacity_used_percent == pytest.approx(33.3)


def test_given_a_stale_create_intent_when_reconciled_then_it_is_reported_with_the_backend_it_was_placed_on(
    stores: FakeStores, caplog: pytest.LogCaptureFixture
) -> None:
    pool = FakeEngines(a=2, b=4)
    world = World(stores, pool)  # type: ignore[arg-type]
    stores.intents.put_create_intent(
        "kb_lost", "memmy:kb_lost", T0, 2_000_000_000, owner_id="alice", max_owned=10, request=None, now=0
    )
    stores.slots.claim_slot("b", "kb_lost", max_kbs=4)

    report = world.reconciler().run()

    assert report.counts["KbCreateOutcomeUnknown"] == 1
    assert stores.slots.used_slots(["b"]) == {"b": 1}  # MemOS may hold it: the slot stays


def test_given_a_kb_on_a_backend_the_secret_no_longer_lists_when_reconciled_then_it_is_reported_and_the_rest_repaired(
    stores: FakeStores, caplog: pytest.LogCaptureFixture
) -> None:
    # Its backend was removed from the secret too early: nothing about it may go to another backend,
    # and the KBs and uploads after it are still scanned, the run's report still made.
    pool = FakeEngines(a=2)
    world = World(stores, pool)  # type: ignore[arg-type]
    orphan = kb_record("kb_0", memos_kb_id="mk_elsewhere", memos_backend="retired")
    stores.kbs.put_kb_with_owner_grant(orphan, owner_grant_for(orphan), max_owned=UNCAPPED_COUNT, request=None)
    upload = upload_record(
        "up_1", kb_id="kb_0", state="submitting", attempt_id="att-lost",
        submitting_at=NOW - SUBMITTING_GRACE - timedelta(seconds=1), created_at=T0,
    ).model_copy(update={"memos_kb_id": "mk_elsewhere", "memos_backend": "retired"})
    stores.table.seed(upload)
    kb = kb_record("kb_1", memos_kb_id=pool["a"].create_knowledgebase("memmy:kb_1"), memos_backend="a")
    stores.kbs.put_kb_with_owner_grant(kb, owner_grant_for(kb), max_owned=UNCAPPED_COUNT, request=None)
    residue = aged(pool["a"], kb.memos_kb_id, memos_file_name("x.md", "up_x"), RESIDUE_GRACE + timedelta(minutes=1))

    report = world.reconciler().run()

    assert pool["a"].deleted_files == [residue]
    assert report.counts["KbBackendUnknown"] == 2
    assert stores.contents.get_upload("kb_0", "up_1").state == "submitting"  # type: ignore[union-attr]
    named = [getattr(r, "memos_backend", None) for r in caplog.records if r.levelname == "ERROR"]
    assert named == ["retired", "retired"]


class UnreadableSecret(FakeEngines):
    """The MemOS secret cannot be used just now (deleted, emptied, not JSON): no backend, no key."""

    def backends(self) -> list[EngineBackend]:
        raise MemosApiKeyError("secret s holds an empty API key")

    def engine(self, backend_id: str) -> FakeKnowledgeEngine:
        raise MemosApiKeyError("secret s holds an empty API key")


def test_given_the_memos_secret_is_unusable_when_reconciled_then_the_steps_that_need_no_memos_still_run(
    stores: FakeStores,
) -> None:
    pool = UnreadableSecret(a=2)
    world = World(stores, pool)  # type: ignore[arg-type]
    kb = kb_record("kb_1", memos_kb_id="mkb_1", memos_backend="a")
    stores.kbs.put_kb_with_owner_grant(kb, owner_grant_for(kb), max_owned=UNCAPPED_COUNT, request=None)
    upload = stuck(world, kb)
    lapsed = upload_record("up_lapsed", expires_at=int(NOW.timestamp()) - 1, created_at=T0)
    stores.table.seed(lapsed, cleanup("cl_1", state="failed", due=NOW - timedelta(minutes=1)))
    stores.intents.put_create_intent(
        "kb_lost", "memmy:kb_lost", T0, 2_000_000_000, owner_id="alice", max_owned=10, request=None, now=0
    )

    report = world.reconciler().run()

    assert report.counts["CleanupRestarted"] == 1
    assert report.counts["UploadExpired"] == 1
    assert report.counts["KbCreateOutcomeUnknown"] == 1
    assert "KbBackendUnknown" not in report.counts  # the secret is broken, not the KB's backend
    assert stores.contents.get_upload("kb_1", upload.upload_id).state == "submitting"  # type: ignore[union-attr]
    assert report.capacity_used_percent is None
