"""Linked folders (``memmy_kb_client.sync.links``) with the real watcher (``watchfiles``) on a temporary
folder and an in-memory KB: a link syncs at once, picks up a new file within seconds, pauses instead of
deleting when the folder is emptied (until confirmed), stops its threads cleanly, survives a restart and
catches up on what changed while it was stopped."""

from __future__ import annotations

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
def store(tmp_path: Path) -> Iterator[SyncStore]:
    opened = SyncStore(tmp_path / "state" / "sync.sqlite3")
    yield opened
    opened.close()


def links_for(kb: FakeKb, store: SyncStore, tmp_path: Path) -> Links:
    return Links(
        store, tmp_path / "state", lambda: kb, quiet_seconds=0.3, retry_seconds=0.5, send=kb.send
    ).start()


def settled(links: Links, kb: FakeKb) -> None:
    assert links.wait_idle(20)
    kb.ingest()


def test_a_linked_folder_syncs_at_once_and_picks_up_a_new_file_within_seconds(
    tmp_path: Path, store: SyncStore
) -> None:
    kb, root = FakeKb(), tmp_path / "docs"
    root.mkdir()
    (root / "a.md").write_text("a", encoding="utf-8")
    links = links_for(kb, store, tmp_path)
    try:
        links.link(str(root), kb.kb_id)
        settled(links, kb)
        assert list(kb.paths()) == ["a.md"]
        wait_until(lambda: links.shown()[0]["watching"], timeout=10, message="the watcher to start")

        (root / "sub").mkdir()
        (root / "sub" / "b.md").write_text("b", encoding="utf-8")
        wait_until(lambda: len(kb.uploads) == 2, timeout=15, message="the new file to be uploaded")
        settled(links, kb)

        assert sorted(kb.paths()) == ["a.md", "sub/b.md"]
        [shown] = links.shown()
        assert (shown["state"], shown["error"]) == ("idle", None)
    finally:
        links.stop()


def test_an_emptied_folder_pauses_the_link_until_confirmed(tmp_path: Path, store: SyncStore) -> None:
    kb, root = FakeKb(), tmp_path / "docs"
    root.mkdir()
    for name in ("a.md", "b.md"):
        (root / name).write_text(name, encoding="utf-8")
    links = links_for(kb, store, tmp_path)
    try:
        links.link(str(root), kb.kb_id)
        settled(links, kb)
        links.changed(str(root))  # the pass that records the files the uploads became
        settled(links, kb)

        for name in ("a.md", "b.md"):
            (root / name).unlink()
        wait_until(lambda: links.shown()[0]["state"] == "paused", timeout=15, message="the link to pause")
        assert links.shown()[0]["paused"] == "the folder is empty"
        assert len(kb.files) == 2

        assert links.confirm(str(root))
        settled(links, kb)
        assert kb.files == {}
        assert links.shown()[0]["state"] == "idle"
    finally:
        links.stop()


def test_the_threads_stop_with_the_service_and_a_restart_catches_up(tmp_path: Path, store: SyncStore) -> None:
    kb, root = FakeKb(), tmp_path / "docs"
    root.mkdir()
    (root / "a.md").write_text("a", encoding="utf-8")
    links = links_for(kb, store, tmp_path)
    links.link(str(root), kb.kb_id)
    settled(links, kb)
    wait_until(lambda: links.shown()[0]["watching"], timeout=10, message="the watcher to start")
    links.stop()
    assert [t.name for t in threading.enumerate() if t.name.startswith("memmy-kb-")] == []

    # While stopped: one file edited, one added
    (root / "a.md").write_text("a, edited", encoding="utf-8")
    (root / "c.md").write_text("c", encoding="utf-8")
    again = links_for(kb, store, tmp_path)
    try:
        settled(again, kb)
        assert sorted(kb.paths()) == ["a.md", "c.md"]
        assert kb.paths()["a.md"][0] == 2
        assert [link["dir"] for link in again.shown()] == [str(root)]
    finally:
        again.stop()


def test_a_folder_linked_to_another_kb_or_a_shared_kb_is_refused(tmp_path: Path, store: SyncStore) -> None:
    kb, root = FakeKb(), tmp_path / "docs"
    root.mkdir()
    links = links_for(kb, store, tmp_path)
    try:
        links.link(str(root), kb.kb_id)
        with pytest.raises(LinkError, match="unlink it first"):
            links.link(str(root), "kb_other")
        with pytest.raises(LinkError, match="not a folder"):
            links.link(str(tmp_path / "missing"), kb.kb_id)
        kb.role = "reader"
        with pytest.raises(LinkError, match="shared with you"):
            links.link(str(tmp_path), kb.kb_id)
        assert links.unlink(str(root))
        assert store.links() == []
    finally:
        links.stop()


def test_a_link_out_of_the_folder_is_not_watched_and_new_sub_folders_are(
    tmp_path: Path, store: SyncStore
) -> None:
    # Given a linked folder holding a link to a busy folder outside it (a log folder, ~/.cache, /)
    kb, root, outside = FakeKb(), tmp_path / "docs", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "a.md").write_text("a", encoding="utf-8")
    (root / "elsewhere").symlink_to(outside)
    links = links_for(kb, store, tmp_path)
    try:
        links.link(str(root), kb.kb_id)
        settled(links, kb)
        wait_until(lambda: links.shown()[0]["watching"], timeout=10, message="the watcher to start")
        passes = kb.calls["get_knowledge_base"]

        # When files change out there (and the watcher has had time to tell: debounce 0.8 s, quiet 0.3 s)
        for index in range(3):
            (outside / f"log-{index}.md").write_text("busy", encoding="utf-8")
        time.sleep(3)

        # Then no pass ran for them, and nothing of theirs was sent
        assert kb.calls["get_knowledge_base"] == passes
        assert list(kb.paths()) == ["a.md"]

        # And a sub-folder made later is watched too: a file written in it once its folder's pass ran
        (root / "sub").mkdir()
        wait_until(
            lambda: kb.calls["get_knowledge_base"] > passes, timeout=15, message="the new folder's pass"
        )
        settled(links, kb)
        time.sleep(1)  # the watcher restarted on the new set of folders
        (root / "sub" / "b.md").write_text("b", encoding="utf-8")
        wait_until(lambda: len(kb.uploads) == 2, timeout=15, message="the file in the new folder to be sent")
    finally:
        links.stop()


def test_a_new_file_in_one_folder_is_sent_while_another_folders_pass_is_stuck(
    tmp_path: Path, store: SyncStore
) -> None:
    # Given two watched links, the first one's pass stuck sending its file (storage not answering)
    kb, stuck, other = FakeKb(), tmp_path / "stuck", tmp_path / "other"
    for root in (stuck, other):
        root.mkdir()
    (stuck / "stuck.md").write_text("stuck", encoding="utf-8")
    entered, release = threading.Event(), threading.Event()

    def send(ticket: dict[str, Any], source: OpenFile) -> None:
        if kb.uploads[ticket["upload_id"]].filename == "stuck.md":
            entered.set()
            release.wait(30)
        kb.send(ticket, source)

    links = Links(
        store, tmp_path / "state", lambda: kb, quiet_seconds=0.3, retry_seconds=0.5, send=send
    ).start()
    try:
        links.link(str(stuck), kb.kb_id)
        assert entered.wait(10)
        links.link(str(other), kb.kb_id)
        wait_until(lambda: links.shown()[0]["watching"], timeout=10, message="the other folder's watcher")

        # When a file is written in the other folder
        (other / "new.md").write_text("new", encoding="utf-8")

        # Then it is sent within seconds, the stuck pass still under way
        wait_until(
            lambda: any(u.filename == "new.md" and u.body == b"new" for u in kb.uploads.values()),
            timeout=15,
            message="the new file to be sent",
        )
        assert {s["dir"]: s["state"] for s in links.shown()}[str(stuck)] == "syncing"
    finally:
        release.set()
        links.stop()


def test_a_watched_folder_swapped_at_its_path_is_synced_and_watched_anew(
    tmp_path: Path, store: SyncStore
) -> None:
    # Given a watched link in sync
    kb, root = FakeKb(), tmp_path / "docs"
    root.mkdir()
    (root / "a.md").write_text("a", encoding="utf-8")
    links = links_for(kb, store, tmp_path)
    try:
        links.link(str(root), kb.kb_id)
        settled(links, kb)
        links.changed(str(root))  # the pass that records the file the upload became
        settled(links, kb)
        wait_until(lambda: links.shown()[0]["watching"], timeout=10, message="the watcher to start")

        # When the folder is renamed away (the watch would go on on it, there)
        root.rename(tmp_path / "docs-old")

        # Then within seconds the link is paused for it
        wait_until(lambda: links.shown()[0]["state"] == "paused", timeout=5, message="the link to pause")
        assert links.shown()[0]["paused"] == "the folder is missing (an unmounted disk?)"
        wait_until(lambda: not links.shown()[0]["watching"], timeout=5, message="the watch to end")

        # And another folder put at the path, holding the same file, is synced and watched
        other = tmp_path / "docs-new"
        other.mkdir()
        (other / "a.md").write_text("a", encoding="utf-8")
        other.rename(root)
        wait_until(lambda: links.shown()[0]["state"] == "idle", timeout=10, message="the pass once it is back")
        wait_until(lambda: links.shown()[0]["watching"], timeout=10, message="the watch on the new folder")
        (root / "b.md").write_text("b", encoding="utf-8")
        wait_until(lambda: len(kb.uploads) == 2, timeout=15, message="the new file to be sent")
        assert (tmp_path / "docs-old" / "a.md").exists()
    finally:
        links.stop()
