"""The linked folders' worker (``memmy_kb_client.sync.links``) without a watcher, against an in-memory KB:
an unlink stops the pass under way, a confirmation lets through only the deletions it was shown, and a
link that keeps failing is tried again less and less often. (The watcher's tests, with ``watchfiles``,
are tests/integration/sync/test_sync_links.py.)"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memmy_kb_client.storage_post import OpenFile
from memmy_kb_client.sync.links import LinkError, Links
from memmy_kb_client.sync.store import SyncStore
from tests.support.fake_kb import FakeKb
from tests.support.polling import wait_until


@pytest.fixture
def store() -> Iterator[SyncStore]:
    opened = SyncStore(":memory:")
    yield opened
    opened.close()


def folder_of(root: Path, count: int) -> None:
    root.mkdir()
    for index in range(count):
        (root / f"{index}.md").write_text(f"file {index}", encoding="utf-8")


def test_unlinking_a_folder_stops_its_pass_under_way(tmp_path: Path, store: SyncStore) -> None:
    # Given a folder of five files being sent by a link's first pass
    kb, root = FakeKb(), tmp_path / "docs"
    folder_of(root, 5)

    def send_then_unlink(ticket: dict[str, Any], source: OpenFile) -> None:
        kb.send(ticket, source)
        links.unlink(str(root))  # the user: "not that folder!"

    links = Links(store, tmp_path / "locks", lambda: kb, watch=False, send=send_then_unlink)
    links.link(str(root), kb.kb_id)

    # When it is unlinked as the first file goes (the worker's pass, run here on the test's thread)
    links._pass(str(root))

    # Then nothing more is sent
    assert kb.calls["request_upload"] == 1
    assert links.shown() == []


def synced_link(tmp_path: Path, store: SyncStore, count: int) -> tuple[FakeKb, Path, Links]:
    """A link whose folder of ``count`` files is in the KB and recorded (the worker's passes run here)."""
    kb, root = FakeKb(), tmp_path / "docs"
    folder_of(root, count)
    links = Links(store, tmp_path / "locks", lambda: kb, watch=False, send=kb.send)
    links.link(str(root), kb.kb_id)
    links._pass(str(root))
    kb.ingest()
    links._pass(str(root))  # records the files the uploads became
    return kb, root, links


def test_a_confirmation_lets_through_only_the_deletions_it_was_shown(
    tmp_path: Path, store: SyncStore
) -> None:
    # Given a link paused because three of its eight files were deleted
    kb, root, links = synced_link(tmp_path, store, 8)
    for index in range(3):
        (root / f"{index}.md").unlink()
    links._pass(str(root))
    [shown] = links.shown()
    assert (shown["state"], shown["paused"]) == (
        "paused",
        "it would delete 3 of the 8 files this folder's sync brought in",
    )

    # When, before the confirmed pass runs, the folder is emptied (its disk unmounted, the mount point left)
    for index in range(3, 8):
        (root / f"{index}.md").unlink()
    assert links.confirm(str(root))
    links._pass(str(root))

    # Then nothing is deleted: the pass pauses again with the new reason
    [shown] = links.shown()
    assert (shown["state"], shown["paused"]) == ("paused", "the folder is empty")
    assert len(kb.files) == 8

    # And a confirmation of that deletes them
    assert links.confirm(str(root))
    links._pass(str(root))
    assert (links.shown()[0]["paused"], kb.files) == (None, {})


def test_a_confirmation_deletes_what_it_was_shown(tmp_path: Path, store: SyncStore) -> None:
    kb, root, links = synced_link(tmp_path, store, 4)
    for index in range(2):
        (root / f"{index}.md").unlink()
    links._pass(str(root))
    assert links.shown()[0]["state"] == "paused"
    assert links.confirm(str(root))
    links._pass(str(root))
    assert sorted(kb.paths()) == ["2.md", "3.md"]
    assert links.shown()[0]["paused"] is None


def test_a_link_that_keeps_failing_is_tried_again_less_and_less_often(
    tmp_path: Path, store: SyncStore
) -> None:
    # Given a link whose file the cloud keeps refusing for a while (each pass reads the KB whole and fails)
    kb, root = FakeKb(), tmp_path / "docs"
    folder_of(root, 1)
    kb.refuse["0.md"] = (503, "memos_unavailable", "File status is unavailable right now; try again shortly.")
    links = Links(
        store, tmp_path / "locks", lambda: kb, watch=False, send=kb.send, retry_seconds=30, rescan_seconds=600
    )
    links.link(str(root), kb.kb_id)
    link = links._links[str(root)]

    # When its passes fail one after another (each taken by the worker when due)
    delays = []
    for _ in range(7):
        link.due = None
        links._pass(str(root))
        assert link.due is not None
        delays.append(round(link.due - time.monotonic(), -1))

    # Then each wait is twice the one before, up to the ten minutes of a rescan; a pass that works resets it
    assert delays == [30, 60, 120, 240, 480, 600, 600]
    del kb.refuse["0.md"]
    link.due = None
    links._pass(str(root))
    assert links.shown()[0]["error"] is None
    assert (link.due, link.failures, links.shown()[0]["state"]) == (None, 0, "idle")


def test_memmy_kbs_own_state_directory_cannot_be_linked(
    tmp_path: Path, store: SyncStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, kb = tmp_path / "memmy", FakeKb()
    (home / "desktop-private").mkdir(parents=True)
    monkeypatch.setenv("MEMMY_KB_HOME", str(home))
    links = Links(store, tmp_path / "locks", lambda: kb, watch=False, send=kb.send)
    with pytest.raises(LinkError, match="own state directory"):
        links.link(str(home / "desktop-private"), kb.kb_id)
    assert store.links() == []


def test_two_links_of_one_folder_at_once_leave_one_kb(tmp_path: Path, store: SyncStore) -> None:
    # Given a link of docs to kb_1 whose check with the cloud is slow, and meanwhile a link of docs to kb_2
    kb, root = FakeKb(), tmp_path / "docs"
    folder_of(root, 1)
    asked = kb.get_knowledge_base

    def meanwhile(kb_id: str) -> dict[str, Any]:
        if kb_id == "kb_1":
            links.link(str(root), "kb_2")
        return asked(kb_id)

    kb.get_knowledge_base = meanwhile  # type: ignore[method-assign]
    links = Links(store, tmp_path / "locks", lambda: kb, watch=False, send=kb.send)

    # Then the later answer is refused, and the store and the running link agree on the KB
    with pytest.raises(LinkError, match="linked to kb_2 already"):
        links.link(str(root), "kb_1")
    assert store.links() == [(str(root), "kb_2")]
    assert [link["kb_id"] for link in links.shown()] == ["kb_2"]


def uploaded(kb: FakeKb) -> dict[str, bytes | None]:
    """What storage received, by file name (None: asked for, nothing received)."""
    return {u.filename: u.body for u in kb.uploads.values()}


def sender_holding(kb: FakeKb, name: str, entered: threading.Event, release: threading.Event) -> Any:
    """Storage that takes every file but ``name``, whose POST hangs until ``release`` (a stalled
    connection), then reads it."""

    def send(ticket: dict[str, Any], source: OpenFile) -> None:
        if kb.uploads[ticket["upload_id"]].filename == name:
            entered.set()
            release.wait(30)
        kb.send(ticket, source)

    return send


def test_a_stuck_pass_holds_up_no_other_link_and_unlinking_cancels_it(
    tmp_path: Path, store: SyncStore
) -> None:
    # Given a linked folder whose pass is stuck sending its file
    kb, stuck, other = FakeKb(), tmp_path / "stuck", tmp_path / "other"
    stuck.mkdir()
    (stuck / "stuck.md").write_text("stuck", encoding="utf-8")
    folder_of(other, 2)
    entered, release = threading.Event(), threading.Event()
    links = Links(
        store,
        tmp_path / "locks",
        lambda: kb,
        watch=False,
        send=sender_holding(kb, "stuck.md", entered, release),
    )
    links.start()
    try:
        links.link(str(stuck), kb.kb_id)
        assert entered.wait(10)
        worker = links._links[str(stuck)].worker
        assert worker is not None

        # When another folder is linked meanwhile
        links.link(str(other), kb.kb_id)

        # Then its pass runs and ends, and the page's list answers at once
        wait_until(
            lambda: uploaded(kb).get("1.md"), timeout=10, message="the other folder's files to be sent"
        )
        assert links.wait_idle(0) is False  # the stuck one is still syncing
        assert [(s["dir"], s["state"]) for s in links.shown()] == [
            (str(other), "idle"),
            (str(stuck), "syncing"),
        ]

        # And unlinking the stuck folder cancels its pass: once its call returns, nothing of it is sent
        assert links.unlink(str(stuck))
        release.set()
        worker.join(10)
        assert not worker.is_alive()
        assert uploaded(kb) == {"stuck.md": None, "0.md": b"file 0", "1.md": b"file 1"}
        assert [s["dir"] for s in links.shown()] == [str(other)]
    finally:
        release.set()
        links.stop()


def test_a_pass_past_its_deadline_is_shown_stuck_then_stopped(tmp_path: Path, store: SyncStore) -> None:
    # Given a link whose pass may run half a second, stuck sending its file
    kb, root = FakeKb(), tmp_path / "docs"
    folder_of(root, 1)
    entered, release = threading.Event(), threading.Event()
    send = sender_holding(kb, "0.md", entered, release)
    links = Links(
        store, tmp_path / "locks", lambda: kb, watch=False, send=send, pass_seconds=0.5, retry_seconds=60
    )
    links.start()
    try:
        links.link(str(root), kb.kb_id)
        assert entered.wait(10)

        # Then, past the deadline, the link says it is held up
        shown = wait_until(lambda: links.shown()[0]["state"] == "error" and links.shown()[0], timeout=10)
        assert "run past its 0.5 seconds, held up in a call" in shown["error"]

        # And once the call returns, the pass stops before a byte goes, and is tried again later
        release.set()
        wait_until(lambda: "was stopped" in (links.shown()[0]["error"] or ""), timeout=10, message="the stop")
        assert (
            links.shown()[0]["error"]
            == "the pass ran past its 0.5 seconds and was stopped: the next one resumes it"
        )
        assert uploaded(kb) == {"0.md": None}
        assert links._links[str(root)].due is not None
    finally:
        release.set()
        links.stop()


def test_stopping_the_service_cancels_a_send_under_way(tmp_path: Path, store: SyncStore) -> None:
    # Given a link sending a large file to storage that reads it slowly
    kb, root = FakeKb(), tmp_path / "docs"
    root.mkdir()
    (root / "big.md").write_text("x" * 1000, encoding="utf-8")
    reading = threading.Event()

    def slow(ticket: dict[str, Any], source: OpenFile) -> None:
        reading.set()
        while source.read(10):
            time.sleep(0.05)  # 5 s for the whole file

    links = Links(store, tmp_path / "locks", lambda: kb, watch=False, send=slow).start()
    links.link(str(root), kb.kb_id)
    assert reading.wait(10)

    # When the service stops
    started = time.monotonic()
    links.stop(timeout=5)

    # Then the send ends at its next chunk, and every thread with it
    assert time.monotonic() - started < 2
    assert [t.name for t in threading.enumerate() if t.name.startswith("memmy-kb-")] == []


def looking_link(tmp_path: Path, store: SyncStore) -> tuple[FakeKb, Path, Links]:
    """A started link (no watcher: only looking tells it the folder went or came) whose two files are in
    the KB and recorded."""
    kb, root = FakeKb(), tmp_path / "docs"
    folder_of(root, 2)
    links = Links(store, tmp_path / "locks", lambda: kb, watch=False, send=kb.send, look_seconds=0.2).start()
    links.link(str(root), kb.kb_id)
    assert links.wait_idle(10)
    kb.ingest()
    links.changed(str(root))  # the pass that records the files the uploads became
    assert links.wait_idle(10)
    return kb, root, links


def test_a_folder_renamed_away_pauses_within_seconds_and_resumes_when_it_is_back(
    tmp_path: Path, store: SyncStore
) -> None:
    # Given a linked folder in sync, no file event to come
    kb, root, links = looking_link(tmp_path, store)
    try:
        assert links.shown()[0]["state"] == "idle"
        passes = kb.calls["get_knowledge_base"]

        # When it is renamed away (as an unmount leaves it)
        root.rename(tmp_path / "docs-renamed")

        # Then within seconds the link is paused for it, and nothing is deleted
        shown = wait_until(lambda: links.shown()[0]["state"] == "paused" and links.shown()[0], timeout=5)
        assert shown["paused"] == "the folder is missing (an unmounted disk?)"
        assert len(kb.files) == 2

        # And when it is put back, with no file written, a pass runs and the link is in sync again
        (tmp_path / "docs-renamed").rename(root)
        wait_until(lambda: links.shown()[0]["state"] == "idle", timeout=5, message="the pass once it is back")
        assert kb.calls["get_knowledge_base"] == passes + 2
        assert (links.shown()[0]["paused"], len(kb.files), len(kb.uploads)) == (None, 2, 2)
    finally:
        links.stop()


def test_another_folder_put_at_the_path_gets_a_pass_that_decides(tmp_path: Path, store: SyncStore) -> None:
    # Given a linked folder in sync
    kb, root, links = looking_link(tmp_path, store)
    try:
        # When it is swapped for an empty folder at the same path (a mount point left behind)
        root.rename(tmp_path / "docs-old")
        root.mkdir()

        # Then a pass runs within seconds and pauses rather than delete the files
        shown = wait_until(
            lambda: links.shown()[0]["paused"] == "the folder is empty" and links.shown()[0], timeout=5
        )
        assert (shown["state"], len(kb.files)) == ("paused", 2)
    finally:
        links.stop()


@pytest.mark.parametrize("how", ["stop", "unlink"])
def test_a_pass_stopped_by_the_service_or_an_unlink_logs_nothing_alarming(
    tmp_path: Path, store: SyncStore, caplog: pytest.LogCaptureFixture, how: str
) -> None:
    # Given a link whose pass is sending a file, slowly
    kb, root = FakeKb(), tmp_path / "docs"
    folder_of(root, 1)
    reading = threading.Event()

    def slow(ticket: dict[str, Any], source: OpenFile) -> None:
        reading.set()
        while source.read(1):
            time.sleep(0.05)

    links = Links(store, tmp_path / "locks", lambda: kb, watch=False, send=slow).start()
    links.link(str(root), kb.kb_id)
    assert reading.wait(10)
    worker = links._links[str(root)].worker
    assert worker is not None

    # When the service stops (or the folder is unlinked) mid-pass
    with caplog.at_level("INFO", logger="memmy_kb_client"):
        if how == "unlink":
            assert links.unlink(str(root))
            worker.join(5)
        links.stop(timeout=5)

    # Then one line at INFO says the pass stopped and the next resumes it; nothing louder
    assert [(r.levelname, r.getMessage()) for r in caplog.records if r.levelno >= logging.INFO] == [
        ("INFO", "a linked folder's pass stopped before it was done: the next one resumes it")
    ]


def test_a_folder_back_after_its_deletion_was_confirmed_is_uploaded_again(
    tmp_path: Path, store: SyncStore
) -> None:
    # Given a linked folder gone, and its deletion confirmed
    kb, root, links = looking_link(tmp_path, store)
    try:
        root.rename(tmp_path / "docs-renamed")
        wait_until(lambda: links.shown()[0]["state"] == "paused", timeout=5, message="the pause")
        assert links.confirm(str(root))
        wait_until(lambda: kb.files == {} and links.shown()[0]["state"] == "idle", timeout=5)

        # When it is put back, no file written since
        (tmp_path / "docs-renamed").rename(root)

        # Then its files are sent again within seconds
        wait_until(lambda: len(kb.uploads) == 4, timeout=5, message="the files to be sent again")
        assert links.wait_idle(10)
        assert sorted(u.filename for u in kb.uploads.values()) == ["0.md", "0.md", "1.md", "1.md"]
    finally:
        links.stop()
