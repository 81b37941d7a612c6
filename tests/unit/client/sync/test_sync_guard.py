"""What holds a folder's sync back, and what it tells, pass after pass against an in-memory KB
(``tests.support.fake_kb``): deletions counted since the last confirmation (a quarter at a time adds up,
by deletion or by a growing ``.memmyignore``), a version the knowledge engine failed shown and sent again
once, a full KB asked once and not again until it has room, and sync records that cannot be read."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memmy_kb_client.sync.run import PassResult, run_pass
from memmy_kb_client.sync.store import StoreUnusable, SyncStore
from tests.support.fake_kb import VERSION_FAILED, FakeKb


@pytest.fixture
def store() -> Iterator[SyncStore]:
    opened = SyncStore(":memory:")
    yield opened
    opened.close()


def write(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def sync(kb: FakeKb, store: SyncStore, root: Path, tmp_path: Path, **options: Any) -> PassResult:
    options.setdefault("send", kb.send)
    result = run_pass(kb, store, kb.kb_id, root, lock_dir=tmp_path / "locks", **options)
    kb.ingest()
    return result


def synced_folder(kb: FakeKb, store: SyncStore, tmp_path: Path, count: int = 20) -> Path:
    """A folder of ``count`` files, uploaded and recorded."""
    root = tmp_path / "docs"
    for n in range(count):
        write(root, f"{n:02d}.md", f"file {n}")
    sync(kb, store, root, tmp_path)
    sync(kb, store, root, tmp_path)  # records the files the uploads became
    return root


# ------------------------------------------------------------------------------ the guard over time


# A quarter of the 20 files at each pass, or a quarter of what is left (which one pass at a time let through).
BATCHES = pytest.mark.parametrize("batches", [[5, 5, 5, 5], [5, 3, 3, 2]], ids=["quarter-of-all", "quarter-of-left"])


@BATCHES
def test_deleting_a_quarter_at_a_time_pauses_before_half_is_gone(
    tmp_path: Path, store: SyncStore, batches: list[int]
) -> None:
    # Given 20 files this folder's sync brought in
    kb = FakeKb()
    root = synced_folder(kb, store, tmp_path)

    # When some of them are deleted from the folder before each of four passes
    results, gone = [], 0
    for batch in batches:
        for n in range(gone, gone + batch):
            (root / f"{n:02d}.md").unlink()
        gone += batch
        results.append(sync(kb, store, root, tmp_path))

    # Then the first pass deletes its 5, the second pauses (counted since the last confirmation: 5 deleted
    # already) and so does every later one: 15 files stay in the KB
    assert [r.stopped is None for r in results] == [True, False, False, False]
    assert results[1].stopped == (
        f"it would delete {batches[1]} of the 15 files this folder's sync brought in, {5 + batches[1]} of 20"
        " since the last confirmation (5 deleted already)"
    )
    assert len(kb.paths()) == 15
    assert results[3].record()["deleted_since_confirmation"] == 5


@BATCHES
def test_a_memmyignore_growing_a_quarter_at_a_time_pauses_the_same(
    tmp_path: Path, store: SyncStore, batches: list[int]
) -> None:
    # Given 20 synced files, all still on disk
    kb = FakeKb()
    root = synced_folder(kb, store, tmp_path)

    # When .memmyignore names more of them before each pass (ignored counts as gone)
    results, ignored = [], 0
    for batch in batches:
        ignored += batch
        write(root, ".memmyignore", "\n".join(f"{n:02d}.md" for n in range(ignored)))
        results.append(sync(kb, store, root, tmp_path))

    # Then the second pass pauses: nothing beyond the first quarter is deleted, every file still on disk
    assert [r.stopped is None for r in results] == [True, False, False, False]
    assert len(kb.paths()) == 15
    assert len(list(root.glob("*.md"))) == 20


def test_a_confirmation_starts_the_count_over(tmp_path: Path, store: SyncStore) -> None:
    # Given a paused pass: 5 deleted already, 5 more to go
    kb = FakeKb()
    root = synced_folder(kb, store, tmp_path)
    for n in range(10):
        (root / f"{n:02d}.md").unlink()
        if n == 4:
            sync(kb, store, root, tmp_path)
    assert sync(kb, store, root, tmp_path).stopped

    # When it is confirmed (as `desktop confirm` and the page's Confirm do: asked, and said yes)
    confirmed = sync(kb, store, root, tmp_path, ask=lambda plan: True)
    # Then it deletes them, counts none of them, and the next quarter needs no confirmation again
    assert (len(kb.paths()), confirmed.record()["deleted_since_confirmation"]) == (10, 0)
    for n in range(10, 12):
        (root / f"{n:02d}.md").unlink()
    after = sync(kb, store, root, tmp_path)
    assert (after.stopped, after.record()["deleted_since_confirmation"]) == (None, 2)

    # And --yes starts it over too
    assert sync(kb, store, root, tmp_path, yes=True).record()["deleted_since_confirmation"] == 0
    assert store.memory(next(iter(_pairs(store)))).deleted == 0


def _pairs(store: SyncStore) -> list[str]:
    return [row[0] for row in store._run("SELECT pair FROM deletions")]


# ------------------------------------------------------------------------------ a failed version


def test_a_version_the_engine_failed_is_sent_again_once_then_shown_failed(
    tmp_path: Path, store: SyncStore
) -> None:
    # Given a synced file whose new bytes the knowledge engine fails (version 2 failed: version 1 answers)
    kb = FakeKb()
    root = synced_folder(kb, store, tmp_path, count=1)
    write(root, "00.md", "the edit the engine fails")
    new_sha = next(iter(kb.paths().values()))[1]
    edited = sync(kb, store, root, tmp_path)
    kb.engine_fails.add(next(iter(kb.paths().values()))[1])
    assert new_sha != next(iter(kb.paths().values()))[1]
    assert [d["action"] for d in edited.outcome.done] == ["replaced"]  # type: ignore[union-attr]

    # When the next pass finds it failed with the folder's bytes
    again = sync(kb, store, root, tmp_path)

    # Then it sends the same bytes again, once (a new version, not "unchanged")
    assert again.plan.summary()["replace"] == [{"path": "00.md", "reason": f"sent again once: {VERSION_FAILED}"}]
    assert [d["action"] for d in again.outcome.done] == ["replaced"]  # type: ignore[union-attr]
    assert kb.paths()["00.md"][0] == 3

    # And failing again, it is shown failed, with its reason, and not sent on every pass
    kb.calls.clear()
    shown = sync(kb, store, root, tmp_path)
    assert shown.plan.summary()["failed"] == [{"path": "00.md", "reason": VERSION_FAILED}]
    assert shown.record()["failed"] == [{"path": "00.md", "reason": VERSION_FAILED}]
    assert kb.calls["request_replacement"] == 0

    # Until its bytes change
    write(root, "00.md", "an edit the engine takes")
    changed = sync(kb, store, root, tmp_path)
    assert [d["action"] for d in changed.outcome.done] == ["replaced"]  # type: ignore[union-attr]
    assert (changed.plan.failed, sync(kb, store, root, tmp_path).plan.failed) == ([], [])


# ------------------------------------------------------------------------------ a KB without room


def test_a_full_kb_is_asked_once_then_not_until_it_has_room(tmp_path: Path, store: SyncStore) -> None:
    # Given a KB that refuses every new file for want of room
    kb = FakeKb()
    root = tmp_path / "docs"
    for n in range(5):
        write(root, f"{n}.md", f"file {n}")
    full = (409, "kb_file_limit_reached", "A knowledge base can hold at most 1 files.")
    other = kb.upload_by_hand("other.md", b"other")
    kb.refuse.update({f"{n}.md": full for n in range(5)})

    # When passes run
    first = sync(kb, store, root, tmp_path)
    second = sync(kb, store, root, tmp_path)

    # Then the first asks once and holds the other four; the next asks nothing; both say how many wait
    assert kb.calls["request_upload"] == 1
    assert (first.waiting_for_room, len(first.outcome.errors)) == (4, 1)  # type: ignore[union-attr]
    assert (second.waiting_for_room, second.plan.summary()["wait_for_room"][0]) == (5, {"path": "0.md"})
    assert second.record()["wait_for_room"] == 5

    # When room appears (a file deleted from the KB)
    kb.files.pop(other)
    kb.refuse.clear()
    third = sync(kb, store, root, tmp_path)

    # Then the files are sent
    assert (third.waiting_for_room, len(kb.paths())) == (0, 5)


# ------------------------------------------------------------------------------ unreadable records


def test_damaged_sync_records_say_so_and_how_to_rebuild_them(tmp_path: Path) -> None:
    damaged = tmp_path / "sync.sqlite3"
    damaged.write_bytes(b"this is not a database, but something else entirely" * 100)

    with pytest.raises(StoreUnusable) as raised:
        SyncStore(damaged)

    assert f"the sync records ({damaged}) are damaged" in str(raised.value)
    assert f"mv {damaged} {damaged}.broken" in str(raised.value)


def test_records_another_process_holds_say_so(tmp_path: Path) -> None:
    path = tmp_path / "sync.sqlite3"
    SyncStore(path).close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(StoreUnusable) as raised:
            SyncStore(path, timeout=0.1).confirmed("kb_1\n/docs")
    finally:
        holder.execute("ROLLBACK")
        holder.close()

    assert "in use by another process" in str(raised.value)
    assert "try again" in str(raised.value)


def test_records_moved_aside_are_rebuilt_from_the_clouds_marker(tmp_path: Path, store: SyncStore) -> None:
    # Given a synced folder whose records are lost (moved aside)
    kb = FakeKb()
    root = synced_folder(kb, store, tmp_path, count=3)
    fresh = SyncStore(tmp_path / "rebuilt.sqlite3")
    kb.calls.clear()

    # When the next pass runs on empty records
    rebuilt = sync(kb, fresh, root, tmp_path)

    # Then it takes its files back (the cloud's sync marker) without uploading any again
    assert (kb.calls["request_upload"], kb.calls["request_replacement"]) == (0, 0)
    assert sorted(fresh.memory(f"{kb.kb_id}\n{root}").synced) == ["00.md", "01.md", "02.md"]
    assert rebuilt.plan.changes == 0
    fresh.close()


def test_records_of_an_earlier_version_gain_the_new_tables_and_keep_their_files(tmp_path: Path) -> None:
    # Given records written before deletions, resends and room were kept
    path = tmp_path / "sync.sqlite3"
    earlier = sqlite3.connect(path)
    earlier.execute(
        "CREATE TABLE synced (pair TEXT, path TEXT, file_id TEXT NOT NULL, version INTEGER NOT NULL,"
        " sha256 TEXT NOT NULL, PRIMARY KEY (pair, path))"
    )
    earlier.execute("INSERT INTO synced VALUES ('kb_1\n/docs', 'a.md', 'fi_1', 2, 'h')")
    earlier.commit()
    earlier.close()

    # When they are opened and used
    store = SyncStore(path)
    store.deleted("kb_1\n/docs", 3)
    remembered = store.memory("kb_1\n/docs")
    store.close()

    # Then their files are there, and the count is kept
    assert (list(remembered.synced), remembered.deleted, remembered.no_room) == (["a.md"], 3, None)
