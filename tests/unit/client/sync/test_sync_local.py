"""The folder's side of a sync: what takes part (hidden, temporary and ``.memmyignore``d files left out),
what is skipped with its reason, and hashing only what changed size or mtime since it was last hashed."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memmy_kb_client.storage_post import file_sha256
from memmy_kb_client.sync.local import (
    HARD_LINK,
    MAX_FILE_BYTES,
    NOT_REGULAR,
    NOT_TEXT,
    SNIFF_BYTES,
    SYMLINK,
    folders_to_watch,
    hash_files,
    own_state_in,
    scan_folder,
    sha256_beneath,
    skip_reason,
)


def write(root: Path, relative: str, text: str = "x") -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_hidden_temporary_and_ignored_files_are_left_out(tmp_path: Path) -> None:
    for relative in (
        "a.md",
        "sub/b.md",
        ".hidden.md",
        ".git/config.md",
        "~$report.docx",
        "notes.md~",
        "draft.md.swp",
        "build/out.md",
        "drafts/keep.md",
        "drafts/x.md",
        "deep/logs/l.md",
    ):
        write(tmp_path, relative)
    write(tmp_path, ".memmyignore", "build/\ndrafts/*\n!drafts/keep.md\nlogs/\n")

    scan = scan_folder(tmp_path)

    assert sorted(scan.files) == ["a.md", "drafts/keep.md", "sub/b.md"]
    assert scan.skipped == {}


def test_unsupported_empty_and_oversized_files_are_skipped_with_their_reason(tmp_path: Path) -> None:
    write(tmp_path, "photo.png")
    write(tmp_path, "empty.md", "")
    scan = scan_folder(tmp_path)
    assert sorted(scan.skipped) == ["empty.md", "photo.png"]
    assert scan.skipped["photo.png"].startswith("unsupported type")
    assert scan.skipped["empty.md"] == "empty file"
    assert skip_reason("big.pdf", MAX_FILE_BYTES + 1) == "too large: 100.0 MB, at most 100 MB"
    assert skip_reason("ok.PDF", MAX_FILE_BYTES) is None


def test_a_file_without_an_extension_takes_part_as_plain_text_only(tmp_path: Path) -> None:
    write(tmp_path, "README", "# 资料\nplain text")
    # A multi-byte character cut by the end of the bytes read is still text.
    (tmp_path / "NOTES").write_bytes(b"a" * (SNIFF_BYTES - 1) + "资".encode())
    (tmp_path / "program").write_bytes(b"\x7fELF\x02\x01\x00\x00")
    (tmp_path / "latin1").write_bytes("café".encode("latin-1"))
    os.mkfifo(tmp_path / "pipe")  # never opened: a read would block

    scan = scan_folder(tmp_path)

    assert sorted(scan.files) == ["NOTES", "README"]
    assert scan.skipped == {"program": NOT_TEXT, "latin1": NOT_TEXT, "pipe": NOT_REGULAR}


def test_a_missing_folder_is_told_apart_from_an_empty_one(tmp_path: Path) -> None:
    assert scan_folder(tmp_path / "unmounted").exists is False
    assert scan_folder(tmp_path).exists is True


def test_only_files_whose_size_or_mtime_changed_are_hashed_again(tmp_path: Path) -> None:
    for name in ("same.md", "touched.md", "grown.md"):
        write(tmp_path, name, "v1")
    first = scan_folder(tmp_path)
    hashed = hash_files(tmp_path, first.files, {})
    cache = {p: (s.size, s.mtime_ns, hashed.sha256[p]) for p, s in first.files.items()}
    write(tmp_path, "grown.md", "v2 longer")
    os.utime(tmp_path / "touched.md", ns=(1, 1))
    read: list[str] = []

    def digest(root: Path, relative: str) -> str:
        read.append(relative)
        return file_sha256(root / relative)

    again = hash_files(tmp_path, scan_folder(tmp_path).files, cache, digest)

    assert sorted(read) == ["grown.md", "touched.md"]
    assert again.sha256["touched.md"] == hashed.sha256["touched.md"]  # same bytes: no change to send
    assert again.sha256["grown.md"] != hashed.sha256["grown.md"]


def test_a_file_that_changes_while_it_is_read_is_left_for_the_next_pass(tmp_path: Path) -> None:
    write(tmp_path, "live.md", "v1")
    scan = scan_folder(tmp_path)

    def digest(root: Path, relative: str) -> str:
        (root / relative).write_text("v2 being written", encoding="utf-8")
        return "whatever"

    hashed = hash_files(tmp_path, scan.files, {}, digest)
    assert (hashed.sha256, hashed.changing) == ({}, ["live.md"])


def test_links_are_skipped_and_never_followed_out_of_the_folder(tmp_path: Path) -> None:
    # Given a folder where someone who may write it planted links to a secret and to the folder above
    root, outside = tmp_path / "docs", tmp_path / "home"
    write(outside, ".config/credentials.json", '{"token": "secret"}')
    write(root, "a.md")
    (root / "credentials.json").symlink_to(outside / ".config" / "credentials.json")
    (root / "home").symlink_to(outside)
    (root / "inside.md").symlink_to(root / "a.md")

    scan = scan_folder(root)

    # Then only the folder's own file takes part; each link is skipped with its reason
    assert sorted(scan.files) == ["a.md"]
    assert scan.skipped == {"credentials.json": SYMLINK, "home": SYMLINK, "inside.md": SYMLINK}


def test_a_fifo_is_skipped_and_never_opened(tmp_path: Path) -> None:
    write(tmp_path, "a.md")
    os.mkfifo(tmp_path / "pipe.md")  # opening it to read would block until a writer came

    scan = scan_folder(tmp_path)
    hashed = hash_files(tmp_path, scan.files, {})

    assert sorted(scan.files) == ["a.md"]
    assert scan.skipped == {"pipe.md": NOT_REGULAR}
    assert list(hashed.sha256) == ["a.md"]


def test_a_file_or_folder_swapped_for_a_link_after_the_walk_is_not_read(tmp_path: Path) -> None:
    # Given a walk that found two regular files
    root, outside = tmp_path / "docs", tmp_path / "home"
    write(outside, "secret.md", "secret")
    write(outside, "sub/b.md", "secret too")
    write(root, "a.md", "mine")
    write(root, "sub/b.md", "mine too")
    scan = scan_folder(root)
    assert sorted(scan.files) == ["a.md", "sub/b.md"]

    # When, before they are read, one becomes a link out and the other's folder too (or a FIFO)
    (root / "a.md").unlink()
    (root / "a.md").symlink_to(outside / "secret.md")
    (root / "sub" / "b.md").unlink()
    (root / "sub").rmdir()
    (root / "sub").symlink_to(outside / "sub")
    hashed = hash_files(root, scan.files, {})

    # Then neither is read: both wait for the next pass (which skips the links)
    assert (hashed.sha256, sorted(hashed.changing)) == ({}, ["a.md", "sub/b.md"])
    with pytest.raises(OSError, match=r"Too many levels of symbolic links|Not a directory"):
        sha256_beneath(root, "sub/b.md")
    (root / "a.md").unlink()
    os.mkfifo(root / "a.md")
    with pytest.raises(OSError, match="not a regular file"):
        sha256_beneath(root, "a.md")


def test_the_folder_named_may_itself_be_a_link(tmp_path: Path) -> None:
    write(tmp_path / "real", "sub/a.md", "a")
    (tmp_path / "named").symlink_to(tmp_path / "real")

    scan = scan_folder(tmp_path / "named")
    hashed = hash_files(tmp_path / "named", scan.files, {})

    assert list(hashed.sha256) == ["sub/a.md"]
    assert hashed.sha256["sub/a.md"] == file_sha256(tmp_path / "real" / "sub" / "a.md")


def test_a_sub_folder_or_file_that_cannot_be_read_is_told_apart_from_one_that_is_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a folder whose locked/ cannot be listed and whose odd.md cannot be looked at (permissions, a
    # failing disk: simulated, as the tests may run as root)
    write(tmp_path, "a.md")
    write(tmp_path, "locked/x.md")
    write(tmp_path, "odd.md")
    scandir, stat_of = os.scandir, os.DirEntry.stat

    def refusing_scandir(path: str) -> Iterator[os.DirEntry[str]]:
        if str(path).endswith("locked"):
            raise PermissionError(13, "Permission denied")
        return scandir(path)

    def refusing_stat(entry: os.DirEntry[str], *, follow_symlinks: bool = True) -> os.stat_result:
        if entry.name == "odd.md":
            raise OSError(5, "Input/output error")
        return stat_of(entry, follow_symlinks=follow_symlinks)

    monkeypatch.setattr(os, "scandir", refusing_scandir)
    monkeypatch.setattr(os.DirEntry, "stat", refusing_stat)

    scan = scan_folder(tmp_path)

    # Then both are said to be unreadable, so nothing in them counts as gone
    assert list(scan.files) == ["a.md"]
    assert scan.unreadable == {
        "locked": "could not be read (Permission denied): what it holds is kept",
        "odd.md": "could not be read (Input/output error): what it holds is kept",
    }
    assert (scan.unread("locked/x.md"), scan.unread("odd.md"), scan.unread("lockedx.md")) == (
        True,
        True,
        False,
    )


def test_an_ignore_file_that_cannot_be_read_stops_the_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a .memmyignore that keeps private/ out, which cannot be read (simulated: the tests may run as root)
    write(tmp_path, "a.md")
    write(tmp_path, "private/diary.md")
    write(tmp_path, ".memmyignore", "private/\n")
    read_text = Path.read_text

    def refusing(path: Path, *args: Any, **kwargs: Any) -> str:
        if path.name == ".memmyignore":
            raise PermissionError(13, "Permission denied")
        return read_text(path, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", refusing)

    # Then the folder is not read without it (private/ would be uploaded)
    with pytest.raises(OSError, match=r"\.memmyignore could not be read \(Permission denied\)"):
        scan_folder(tmp_path)
    monkeypatch.undo()
    (tmp_path / ".memmyignore").unlink()
    assert sorted(scan_folder(tmp_path).files) == [
        "a.md",
        "private/diary.md",
    ]  # none at all: nothing left out


def test_memmy_kbs_own_state_in_the_folder_is_never_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given $MEMMY_KB_HOME inside the synced folder, not hidden, with the login kept in a file (no keychain)
    root = tmp_path / "docs"
    home = root / "memmy"
    monkeypatch.setenv("MEMMY_KB_HOME", str(home))
    write(root, "a.md")
    write(home, "desktop-private/cloud-login.json", '{"refresh_token": "secret"}')
    write(home, "desktop/service.json", '{"port": 1}')

    # Then neither the walk nor the watcher goes in
    assert sorted(scan_folder(root).files) == ["a.md"]
    assert folders_to_watch(root) == [str(root)]
    assert own_state_in(root) == "memmy"
    assert own_state_in(home / "desktop") == ""
    assert own_state_in(tmp_path / "elsewhere") is None


def test_a_file_with_more_than_one_hard_link_is_skipped_with_its_reason(tmp_path: Path) -> None:
    # Given a folder where someone who may write it made a hard link to a file outside it: the same file
    # under a second name, which no walk can tell from a file of the folder's own
    root, outside = tmp_path / "docs", tmp_path / "home"
    secret = write(outside, "secret.md", "secret")
    write(root, "a.md")
    os.link(secret, root / "notes.md")

    scan = scan_folder(root)

    # Then it is skipped with why, whichever of its names is the folder's
    assert sorted(scan.files) == ["a.md"]
    assert scan.skipped == {"notes.md": HARD_LINK}
