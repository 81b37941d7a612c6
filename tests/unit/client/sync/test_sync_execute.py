"""Passes of a folder sync carried out against an in-memory KB (``tests.support.fake_kb``): each intent
recorded before it is sent, so a pass killed mid-way is resumed without a second upload; a version
conflict re-read and retried; a lasting refusal remembered; a shared KB refused; a pass with nothing to
do makes listing calls only."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memmy_kb_client.storage_post import OpenFile
from memmy_kb_client.sync.execute import SyncAborted
from memmy_kb_client.sync.run import PassResult, run_pass, wait_until_ready
from memmy_kb_client.sync.store import SyncStore, pair_of
from tests.support.fake_kb import FakeKb

HOUR_AGO = time.time_ns() - 3600 * 10**9


class Killed(BaseException):
    """The process stopping mid-pass (nothing after it runs)."""


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
    """One pass with the fake KB's storage as the bytes' destination."""
    options.setdefault("send", kb.send)
    return run_pass(kb, store, kb.kb_id, root, lock_dir=tmp_path / "locks", **options)


def test_a_first_pass_uploads_every_file_into_folders_named_as_its_sub_folders(
    tmp_path: Path, store: SyncStore
) -> None:
    root, kb = tmp_path / "docs", FakeKb()
    for name in ("a.md", "b.md", "c.txt", "sub/d.md"):
        write(root, name, f"content of {name}")

    result = sync(kb, store, root, tmp_path)
    kb.ingest()

    assert result.outcome is not None
    assert result.outcome.errors == []
    assert sorted(kb.paths()) == ["a.md", "b.md", "c.txt", "sub/d.md"]
    assert kb.calls["create_folder"] == 1
    assert all(u.origin == "sync" and u.sha256 for u in kb.uploads.values())


def test_edit_delete_and_add_make_exactly_those_three_changes(tmp_path: Path, store: SyncStore) -> None:
    root, kb = tmp_path / "docs", FakeKb()
    for name in ("a.md", "b.md", "c.md", "sub/d.md"):
        write(root, name, f"content of {name}")
    sync(kb, store, root, tmp_path)
    kb.ingest()
    sync(kb, store, root, tmp_path)  # records the files the uploads became
    kb.calls.clear()

    write(root, "a.md", "edited")
    (root / "b.md").unlink()
    write(root, "sub/e.md", "new")
    result = sync(kb, store, root, tmp_path)
    kb.ingest()

    assert result.outcome is not None
    assert sorted((d["action"], d["path"]) for d in result.outcome.done) == [
        ("deleted", "b.md"),
        ("replaced", "a.md"),
        ("uploaded", "sub/e.md"),
    ]
    assert (kb.calls["request_upload"], kb.calls["request_replacement"], kb.calls["delete_file"]) == (1, 1, 1)
    assert sorted(kb.paths()) == ["a.md", "c.md", "sub/d.md", "sub/e.md"]
    assert kb.paths()["a.md"][0] == 2


def test_a_pass_with_nothing_changed_lists_and_uploads_nothing(tmp_path: Path, store: SyncStore) -> None:
    root, kb = tmp_path / "docs", FakeKb()
    for name in ("a.md", "sub/b.md", "sub/deeper/c.md"):
        write(root, name, name)
        os.utime(root / name, ns=(HOUR_AGO, HOUR_AGO))  # a hash is kept once its file has settled
    sync(kb, store, root, tmp_path)
    kb.ingest()
    sync(kb, store, root, tmp_path)
    kb.calls.clear()

    result = sync(kb, store, root, tmp_path)

    # One read of the KB and one listing per folder (root, sub, sub/deeper); no file hashed again
    assert dict(kb.calls) == {"get_knowledge_base": 1, "list_files": 3}
    assert (result.plan.changes, result.hashed) == (0, 0)


def test_a_pass_killed_after_asking_for_uploads_resumes_without_uploading_twice(
    tmp_path: Path, store: SyncStore
) -> None:
    root, kb = tmp_path / "docs", FakeKb()
    for name in ("a.md", "b.md", "c.md"):
        write(root, name, name)
    sent: list[str] = []

    def killed_on_second(ticket: dict[str, Any], source: OpenFile) -> None:
        if len(sent) == 1:
            raise Killed
        sent.append(ticket["upload_id"])
        kb.send(ticket, source)

    # Given a pass killed while sending its second file's bytes (after the service issued its ticket)
    with pytest.raises(Killed):
        sync(kb, store, root, tmp_path, send=killed_on_second)
    assert len(kb.uploads) == 2

    # When the next pass runs
    result = sync(kb, store, root, tmp_path)
    kb.ingest()

    # Then the second is resumed with its own ticket, the first waited for, and each file is there once
    assert result.plan.summary()["resume"] == [{"path": "b.md"}]
    assert [s.path for s in result.plan.waiting] == ["a.md"]
    assert len(kb.uploads) == 3
    assert sorted(kb.paths()) == ["a.md", "b.md", "c.md"]


def test_a_pass_killed_before_the_service_answered_resumes_with_the_same_key(
    tmp_path: Path, store: SyncStore
) -> None:
    root, kb = tmp_path / "docs", FakeKb()
    write(root, "a.md", "a")
    asked = kb.request_upload

    def lost_answer(*args: Any, **kwargs: Any) -> dict[str, Any]:
        asked(*args, **kwargs)  # the service issued it; the answer never arrived
        raise Killed

    kb.request_upload = lost_answer  # type: ignore[method-assign]
    with pytest.raises(Killed):
        sync(kb, store, root, tmp_path)
    del kb.request_upload

    sync(kb, store, root, tmp_path)
    kb.ingest()

    assert len(kb.uploads) == 1
    assert list(kb.paths()) == ["a.md"]


def test_a_version_conflict_is_read_again_and_the_replace_retried(tmp_path: Path, store: SyncStore) -> None:
    root, kb = tmp_path / "docs", FakeKb()
    write(root, "a.md", "v1")
    sync(kb, store, root, tmp_path)
    kb.ingest()
    sync(kb, store, root, tmp_path)
    [file] = kb.files.values()

    # Given another desktop replaced the file after this pass read the KB
    write(root, "a.md", "ours")
    listed = kb.list_files

    def listing_then_other_desktop(kb_id: str, folder_id: str | None = None) -> dict[str, Any]:
        answer = listed(kb_id, folder_id)
        file.version, file.sha256 = file.version + 1, "theirs"
        return answer

    kb.list_files = listing_then_other_desktop  # type: ignore[method-assign]
    result = sync(kb, store, root, tmp_path)
    del kb.list_files
    kb.ingest()

    # Then the replace is retried over the version read again, and lands
    assert result.outcome is not None
    assert result.outcome.errors == []
    assert kb.calls["get_file"] == 1
    assert kb.paths()["a.md"][0] == 3


def test_a_lasting_refusal_is_remembered_until_the_file_changes(tmp_path: Path, store: SyncStore) -> None:
    root, kb = tmp_path / "docs", FakeKb()
    write(root, "a.md", "a")
    kb.refuse["a.md"] = (422, "validation_error", "The name is not allowed.")

    first = sync(kb, store, root, tmp_path)
    second = sync(kb, store, root, tmp_path)
    write(root, "a.md", "changed")
    third = sync(kb, store, root, tmp_path)

    assert first.outcome is not None
    assert [e["path"] for e in first.outcome.errors] == ["a.md"]
    assert [(s.path, s.reason) for s in second.plan.skips] == [
        ("a.md", "rejected before, unchanged since: The name is not allowed.")
    ]
    assert [s.path for s in third.plan.uploads] == ["a.md"]


def test_a_knowledge_base_shared_with_you_cannot_be_a_target(tmp_path: Path, store: SyncStore) -> None:
    kb = FakeKb(role="reader")
    write(tmp_path / "docs", "a.md", "a")
    with pytest.raises(SyncAborted, match="shared with you"):
        sync(kb, store, tmp_path / "docs", tmp_path)
    assert kb.calls["request_upload"] == 0


def test_an_emptied_folder_deletes_nothing_without_yes(tmp_path: Path, store: SyncStore) -> None:
    root, kb = tmp_path / "docs", FakeKb()
    for name in ("a.md", "b.md"):
        write(root, name, name)
    sync(kb, store, root, tmp_path)
    kb.ingest()
    sync(kb, store, root, tmp_path)
    for name in ("a.md", "b.md"):
        (root / name).unlink()

    stopped = sync(kb, store, root, tmp_path)
    assert (stopped.stopped, stopped.outcome, len(kb.files)) == ("the folder is empty", None, 2)
    done = sync(kb, store, root, tmp_path, yes=True)
    assert done.outcome is not None
    assert len(kb.files) == 0
    assert store.memory(pair_of(kb.kb_id, root)).synced == {}


def test_a_sub_folder_that_cannot_be_read_is_not_taken_for_files_gone(
    tmp_path: Path, store: SyncStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given five synced files, one of them in locked/
    root, kb = tmp_path / "docs", FakeKb()
    for name in ("a.md", "b.md", "c.md", "d.md", "locked/x.md"):
        write(root, name, name)
    sync(kb, store, root, tmp_path)
    kb.ingest()
    sync(kb, store, root, tmp_path)

    # When locked/ can no longer be listed (its permissions changed; simulated: the tests may run as root)
    scandir = os.scandir

    def refusing(path: str) -> Iterator[os.DirEntry[str]]:
        if str(path).endswith("locked"):
            raise PermissionError(13, "Permission denied")
        return scandir(path)

    monkeypatch.setattr(os, "scandir", refusing)
    result = sync(kb, store, root, tmp_path)

    # Then its file stays in the KB (one fifth of the files: under the threshold, it would have gone)
    assert result.outcome is not None
    assert result.outcome.done == []
    assert sorted(kb.paths()) == ["a.md", "b.md", "c.md", "d.md", "locked/x.md"]
    assert [(s.path, s.reason) for s in result.plan.skips] == [
        ("locked", "could not be read (Permission denied): what it holds is kept")
    ]


def test_a_file_written_twice_within_one_mtime_tick_is_not_taken_for_unchanged(
    tmp_path: Path, store: SyncStore
) -> None:
    # Given a file synced right after it was written
    root, kb = tmp_path / "docs", FakeKb()
    write(root, "a.md", "v1")
    first = (root / "a.md").stat()
    sync(kb, store, root, tmp_path)
    kb.ingest()

    # When it is written again, same size, within the same tick of a coarse mtime (the same mtime)
    write(root, "a.md", "v2")
    os.utime(root / "a.md", ns=(first.st_atime_ns, first.st_mtime_ns))
    result = sync(kb, store, root, tmp_path)
    kb.ingest()

    # Then it is read again and replaced: its first hash was not kept, being too close to its write
    assert result.plan.summary()["replace"] == [{"path": "a.md"}]
    assert kb.paths()["a.md"][0] == 2


def test_a_kb_without_room_is_not_remembered_as_the_files_refusal(tmp_path: Path, store: SyncStore) -> None:
    # Given an upload refused because the KB's storage is full (413, like a file too large)
    root, kb = tmp_path / "docs", FakeKb()
    write(root, "a.md", "a")
    other = kb.upload_by_hand("other.md", b"other")
    kb.refuse["a.md"] = (413, "kb_storage_limit_reached", "A knowledge base can hold at most 1 GB of files.")
    first = sync(kb, store, root, tmp_path)

    # When room is made in the KB (a file deleted), the file itself unchanged
    del kb.refuse["a.md"]
    kb.files.pop(other)
    second = sync(kb, store, root, tmp_path)

    # Then the next pass sends it
    assert first.outcome is not None
    assert [e["path"] for e in first.outcome.errors] == ["a.md"]
    assert second.plan.summary()["upload"] == [{"path": "a.md"}]


def test_waiting_for_the_files_sent_lists_only_their_folders(tmp_path: Path, store: SyncStore) -> None:
    # Given a KB of ten folders, synced, and one new file sent into one of them
    root, kb = tmp_path / "docs", FakeKb()
    for index in range(10):
        write(root, f"part-{index}/a.md", f"a{index}")
    sync(kb, store, root, tmp_path)
    kb.ingest()
    write(root, "part-3/new.md", "new")
    result = sync(kb, store, root, tmp_path)
    assert result.outcome is not None
    kb.calls.clear()

    # When the pass waits for it, the file being processed for two more rounds
    rounds: list[int] = []

    def later(_: float) -> None:
        rounds.append(kb.calls["list_files"])
        if len(rounds) == 2:
            kb.ingest()

    ready = wait_until_ready(kb, kb.kb_id, result.outcome.sent, 60, sleep=later)

    # Then the first round reads the KB whole (root and ten folders), the next ones list part-3 only
    assert [entry.status for entry in ready.values()] == ["available"]
    assert (rounds, kb.calls["list_files"]) == ([11, 12], 13)


def test_waiting_ends_with_a_replace_that_failed(tmp_path: Path, store: SyncStore) -> None:
    root, kb = tmp_path / "docs", FakeKb()
    write(root, "sub/a.md", "v1")
    sync(kb, store, root, tmp_path)
    kb.ingest()
    sync(kb, store, root, tmp_path)
    write(root, "sub/a.md", "v2")
    result = sync(kb, store, root, tmp_path)
    assert result.outcome is not None
    [upload_id] = result.outcome.sent
    kb.uploads[upload_id].body = b"not the bytes declared"
    kb.ingest()

    ready = wait_until_ready(kb, kb.kb_id, result.outcome.sent, 60, sleep=lambda _: None)

    assert [(e.version, (e.replacement or {}).get("status")) for e in ready.values()] == [(1, "failed")]


def test_a_hash_too_fresh_to_keep_leaves_no_older_one_behind(tmp_path: Path, store: SyncStore) -> None:
    # Given a file hashed long after it was written (its hash kept)
    root, kb = tmp_path / "docs", FakeKb()
    write(root, "a.md", "v1")
    os.utime(root / "a.md", ns=(HOUR_AGO, HOUR_AGO))
    sync(kb, store, root, tmp_path)
    pair = pair_of(kb.kb_id, root)
    assert list(store.memory(pair).hashes) == ["a.md"]

    # When it is written again and read at once (too fresh to keep)
    write(root, "a.md", "v2")
    sync(kb, store, root, tmp_path)

    # Then no row is left for it: none could be taken for its bytes later
    assert store.memory(pair).hashes == {}


def test_memmy_kbs_own_state_directory_is_never_a_folder_to_sync(
    tmp_path: Path, store: SyncStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, kb = tmp_path / "memmy", FakeKb()
    monkeypatch.setenv("MEMMY_KB_HOME", str(home))
    write(home, "desktop-private/cloud-login.json", '{"refresh_token": "secret"}')
    for root in (home, home / "desktop-private"):
        with pytest.raises(SyncAborted, match="own state directory"):
            sync(kb, store, root, tmp_path)
    assert dict(kb.calls) == {}


SECRET = "the secret outside the folder"


def swap_for_link(path: Path, outside: Path) -> None:
    path.unlink()
    path.symlink_to(outside)


def swap_for_hard_link(path: Path, outside: Path) -> None:
    path.unlink()
    os.link(outside, path)


def swap_for_fifo(path: Path, outside: Path) -> None:
    path.unlink()
    os.mkfifo(path)  # opened by name to be read, it would block until a writer came: for ever


def swap_for_other_bytes(path: Path, outside: Path) -> None:
    other = path.with_name("other.tmp")
    other.write_text("x" * path.stat().st_size, encoding="utf-8")
    os.replace(other, path)


SWAPS = {
    "a link out": (swap_for_link, "a symbolic link: not followed"),
    "a hard link out": (swap_for_hard_link, "more than one hard link"),
    "a FIFO": (swap_for_fifo, "not a regular file"),
    "other bytes": (swap_for_other_bytes, "changed since the pass read it"),
}


def within(seconds: float, run: Any) -> Any:
    """``run()`` on a thread, which must end within ``seconds`` (a pass blocked in ``open`` never would)."""
    result: list[Any] = []
    thread = threading.Thread(target=lambda: result.append(run()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"the pass was still running after {seconds} s"
    return result[0]


@pytest.mark.parametrize("swap", SWAPS, ids=list(SWAPS))
def test_a_file_swapped_after_the_hash_is_skipped_and_nothing_else_is_sent(
    tmp_path: Path, store: SyncStore, swap: str
) -> None:
    # Given a folder of two files, and someone who may write it and who swaps one once it was hashed (as
    # its upload is asked for)
    root, kb, outside = tmp_path / "docs", FakeKb(), tmp_path / "secret.md"
    write(root, "a.md", "mine, " + "a" * (len(SECRET) - 6))
    write(root, "b.md", "mine too")
    outside.write_text(SECRET, encoding="utf-8")
    swapped, reason = SWAPS[swap]
    asked = kb.request_upload

    def swapping(kb_id: str, filename: str, size_bytes: int, **options: Any) -> dict[str, Any]:
        if filename == "a.md":
            swapped(root / "a.md", outside)
        return asked(kb_id, filename, size_bytes, **options)

    kb.request_upload = swapping  # type: ignore[method-assign]

    # When the pass runs
    result = within(10, lambda: sync(kb, store, root, tmp_path))

    # Then storage got b.md's bytes only: nothing of the file outside, nothing the hash did not read
    assert [u.body for u in kb.uploads.values() if u.body is not None] == [b"mine too"]
    [error] = result.outcome.errors
    assert error["path"] == "a.md"
    assert reason in error["error"]


def test_a_replace_swapped_for_a_link_after_the_hash_sends_nothing_from_outside(
    tmp_path: Path, store: SyncStore
) -> None:
    # Given a synced file, edited, then swapped for a link out as its replace is asked for
    root, kb, outside = tmp_path / "docs", FakeKb(), tmp_path / "secret.md"
    write(root, "a.md", "v1")
    outside.write_text(SECRET, encoding="utf-8")
    sync(kb, store, root, tmp_path)
    kb.ingest()
    sync(kb, store, root, tmp_path)
    write(root, "a.md", "v2, edited")
    asked = kb.request_replacement

    def swapping(*args: Any, **options: Any) -> dict[str, Any]:
        swap_for_link(root / "a.md", outside)
        return asked(*args, **options)

    kb.request_replacement = swapping  # type: ignore[method-assign]

    result = within(10, lambda: sync(kb, store, root, tmp_path))

    # Then no bytes went but the first version's, and the replace waits for the next pass
    assert [u.body for u in kb.uploads.values() if u.body is not None] == [b"v1"]
    assert result.outcome.errors == [
        {
            "path": "a.md",
            "error": "a.md: no longer the file the pass hashed (a symbolic link: not followed): not sent",
        }
    ]

    # And once the file is a file again, the next pass replaces it (the unsent replace was dismissed)
    kb.request_replacement = asked  # type: ignore[method-assign]
    (root / "a.md").unlink()
    write(root, "a.md", "v3")
    sync(kb, store, root, tmp_path)
    kb.ingest()
    assert kb.paths()["a.md"][0] == 2
