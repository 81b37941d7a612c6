"""``memmy_kb.domain.reconcile.repair`` and ``residue`` with replaces: an update of unknown outcome resent, an
unused replace expired with its file unmarked, a marker left behind unlocked, a replaced version's bytes
swept."""

from __future__ import annotations

from datetime import timedelta

from memmy_kb.domain.engine import FileInput, FileStatus
from memmy_kb.domain.knowledge_bases.naming import memos_file_name
from memmy_kb.domain.reconcile.repair import LOST, SUBMITTING_GRACE
from memmy_kb.domain.uploads.replace_ingest import FILE_GONE
from memmy_kb.records import FileRecord, KnowledgeBaseRecord, UploadRecord
from tests.support.factories import T0, file_record, replacement_record, upload_record
from tests.support.reconcile_world import NOW, World, world

__all__ = ["world"]


def replaced_file(world: World, kb: KnowledgeBaseRecord) -> FileRecord:
    memos_file = world.memos.add_file(kb.memos_kb_id, "price [up_1].md", FileStatus.AVAILABLE)
    file = file_record("fi_1", memos_file_id=memos_file.id, upload_id="up_1", size_bytes=10)
    world.stores.table.seed(file.model_copy(update={"replacing": "up_2"}))
    return file


def stuck_replace(world: World, file: FileRecord) -> UploadRecord:
    """A replace whose update's answer never came: submitting since before the grace period, its growth held."""
    upload = replacement_record("up_2", file, size_bytes=30, state="submitting", created_at=T0).model_copy(
        update={"attempt_id": "att-lost", "submitting_at": NOW - SUBMITTING_GRACE - timedelta(seconds=1)}
    )
    world.stores.table.seed(upload)
    kb = world.stores.kbs.get_kb("kb_1")
    assert kb is not None
    world.stores.table.seed(kb.model_copy(update={"file_count": 1, "bytes_used": 30}))
    world.objects.put(upload.object_key, b"# price\n")
    return upload


def test_given_a_replace_of_unknown_outcome_when_reconciled_then_it_is_handed_to_the_ingest_again_with_its_growth_back(
    world: World,
) -> None:
    file = replaced_file(world, world.live_kb())
    upload = stuck_replace(world, file)

    report = world.reconciler().run()

    again = world.stores.contents.get_upload("kb_1", "up_2")
    assert again is not None
    assert (again.state, again.attempt_id) == ("pending", None)
    assert world.requeue.requeued == [upload.object_key]
    assert world.stores.contents.get_file("kb_1", "fi_1").replacing == "up_2"  # type: ignore[union-attr]
    assert world.stores.kbs.get_kb("kb_1").bytes_used == 10  # type: ignore[union-attr]
    assert report.counts["UploadRequeued"] == 1
    assert world.memos.calls["update_knowledgebase_file"] == 0  # resent by the ingest, not here


def test_given_a_replace_of_unknown_outcome_that_memos_applied_when_reconciled_then_it_is_recorded_not_handed_back(
    world: World,
) -> None:
    # Given a replace whose update MemOS took (the file carries the replace's upload id) but whose answer
    # never came: handed back to pending, it could be taken over, refused for room or expired, leaving
    # MemOS answering with a version our record does not have
    file = replaced_file(world, world.live_kb())
    upload = stuck_replace(world, file)
    sent = FileInput.from_bytes(b"# price\n", name=memos_file_name(file.name, "up_2"), mime_type="text/markdown")
    world.memos.update_knowledgebase_file(file.memos_file_id, sent)

    # When the reconciler resolves it
    report = world.reconciler().run()

    # Then it is recorded as the ingest would have, without a resend
    recorded = world.stores.contents.get_file("kb_1", "fi_1")
    assert recorded is not None
    assert (recorded.version, recorded.size_bytes, recorded.upload_id, recorded.replacing) == (2, 30, "up_2", None)
    assert world.stores.contents.get_upload("kb_1", "up_2").state == "submitted"  # type: ignore[union-attr]
    assert world.stores.kbs.get_kb("kb_1").bytes_used == 30  # type: ignore[union-attr]
    assert world.requeue.requeued == []
    assert world.memos.calls["update_knowledgebase_file"] == 1
    assert upload.object_key in world.objects.objects
    assert report.counts["UploadResolvedSubmitted"] == 1


def test_given_the_file_or_the_bytes_gone_when_a_stuck_replace_is_resolved_then_rejected(world: World) -> None:
    kb = world.live_kb()
    file = replaced_file(world, kb)
    stuck_replace(world, file)
    del world.stores.table.files[("kb_1", "fi_1")]

    world.reconciler().run()

    assert world.stores.contents.get_upload("kb_1", "up_2").reason == FILE_GONE  # type: ignore[union-attr]
    file = replaced_file(world, kb)
    upload = stuck_replace(world, file).model_copy(update={"upload_id": "up_3"})
    world.stores.table.seed(upload.model_copy(update={"object_key": "uploads/kb_1/up_3"}))
    world.stores.table.seed(file.model_copy(update={"replacing": "up_3"}))
    world.reconciler().run()
    assert world.stores.contents.get_upload("kb_1", "up_3").reason == LOST  # type: ignore[union-attr]
    assert world.stores.contents.get_file("kb_1", "fi_1").replacing is None  # type: ignore[union-attr]


def test_given_an_unused_replace_whose_post_lapsed_when_reconciled_then_it_expires_and_the_file_is_unmarked(
    world: World,
) -> None:
    file = replaced_file(world, world.live_kb())
    lapsed = replacement_record("up_2", file, created_at=T0, expires_at=int(NOW.timestamp()) - 1)
    world.stores.table.seed(lapsed)

    world.reconciler().run()

    assert world.stores.contents.get_upload("kb_1", "up_2").state == "expired"  # type: ignore[union-attr]
    assert world.stores.contents.get_file("kb_1", "fi_1").replacing is None  # type: ignore[union-attr]


def test_given_a_file_left_marked_by_a_replace_that_ended_when_reconciled_then_it_is_unlocked(world: World) -> None:
    kb = world.live_kb()
    replaced_file(world, kb)  # marked by up_2, which never got a record (or lost it)
    in_flight = file_record("fi_2", upload_id="up_x").model_copy(update={"replacing": "up_4"})
    world.stores.table.seed(in_flight, replacement_record("up_4", in_flight, created_at=T0, expires_at=2_000_000_000))

    report = world.reconciler().run()

    assert world.stores.contents.get_file("kb_1", "fi_1").replacing is None  # type: ignore[union-attr]
    assert world.stores.contents.get_file("kb_1", "fi_2").replacing == "up_4"  # type: ignore[union-attr]
    assert report.counts["ReplaceUnlocked"] == 1


def test_given_the_bytes_of_a_replaced_version_when_swept_then_they_go_and_the_current_versions_stay(
    world: World,
) -> None:
    world.live_kb()
    current = file_record("fi_1", upload_id="up_2")
    old = upload_record("up_1", state="submitted", created_at=T0).model_copy(update={"file_id": "fi_1"})
    new = upload_record("up_2", state="submitted", created_at=T0).model_copy(update={"file_id": "fi_1"})
    world.stores.table.seed(current, old, new)
    for key in ("uploads/kb_1/up_1", "verified/kb_1/up_1", "uploads/kb_1/up_2"):
        world.objects.put(key, b"x")

    world.reconciler().run()

    assert sorted(world.objects.objects) == ["uploads/kb_1/up_2"]
