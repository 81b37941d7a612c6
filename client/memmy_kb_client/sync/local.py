"""The folder's side of a pass: which files take part (ignore rules), which are skipped and why, and their
SHA-256, computed only for files whose size or modification time changed since the pass that hashed them.

Left out, as if not there: hidden files and folders (a name starting with ``.``), temporary files (editor
swap and backup files, Office lock files, partial downloads) and whatever ``.memmyignore`` in the folder's
root names (gitignore syntax, read with ``pathspec``). Skipped with a reason, and kept in the knowledge
base if they are there: files the service does not take (their type, or empty) and files over its size
limit. Symbolic links to folders are not followed (a link back up would never end).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from pathspec import GitIgnoreSpec

IGNORE_FILE: Final = ".memmyignore"
SUPPORTED_EXTENSIONS: Final = ("pdf", "docx", "doc", "txt", "json", "md", "xml")
MAX_FILE_BYTES: Final = 100 * 1024 * 1024
# What editors, office suites and browsers leave beside a file while they write it: names that start or
# end so, or are exactly so (plain string tests: a glob per name cost 30 µs a file).
_TEMPORARY_PREFIXES: Final = ("~$", ".#")
_TEMPORARY_SUFFIXES: Final = (
    "~",
    ".tmp",
    ".temp",
    ".swp",
    ".swo",
    ".swx",
    ".part",
    ".partial",
    ".crdownload",
    ".download",
)
_TEMPORARY_NAMES: Final = frozenset({"thumbs.db", "desktop.ini"})


def is_temporary(name: str) -> bool:
    """Whether a file's name is one of an editor's, an office suite's or a browser's temporary files."""
    lowered = name.lower()
    return (
        lowered.startswith(_TEMPORARY_PREFIXES)
        or lowered.endswith(_TEMPORARY_SUFFIXES)
        or lowered in _TEMPORARY_NAMES
        or (len(name) > 1 and name.startswith("#") and name.endswith("#"))
    )


@dataclass(frozen=True)
class Seen:
    """A file on disk that takes part: its path relative to the root (``/``-separated), size and mtime."""

    path: str
    size: int
    mtime_ns: int


@dataclass(frozen=True)
class FolderScan:
    """What a folder holds for a pass: ``exists`` is False for a missing folder (an unmounted disk)."""

    exists: bool
    files: dict[str, Seen]
    skipped: dict[str, str]


def ignore_rules(root: Path) -> GitIgnoreSpec:
    """The root's ``.memmyignore`` (none: nothing beyond hidden and temporary files)."""
    try:
        lines = (root / IGNORE_FILE).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        lines = []
    return GitIgnoreSpec.from_lines(lines)


def left_out(relative: str, is_dir: bool, rules: GitIgnoreSpec) -> bool:
    """Whether ``relative`` (``/``-separated, from the root) is no part of the sync."""
    name = relative.rsplit("/", 1)[-1]
    if name.startswith("."):
        return True
    if not is_dir and is_temporary(name):
        return True
    return rules.match_file(relative + "/" if is_dir else relative)


def skip_reason(name: str, size: int) -> str | None:
    """Why a file that takes part cannot be uploaded (None: it can)."""
    stem, dot, extension = name.rpartition(".")
    if not dot or not stem or extension.lower() not in SUPPORTED_EXTENSIONS:
        return f"unsupported type: a knowledge base takes {', '.join(SUPPORTED_EXTENSIONS)}"
    if size == 0:
        return "empty file"
    if size > MAX_FILE_BYTES:
        return f"too large: {size / 1024 / 1024:.1f} MB, at most {MAX_FILE_BYTES // 1024 // 1024} MB"
    return None


def scan_folder(root: Path) -> FolderScan:
    """The files of ``root`` that take part in a sync, and those skipped with their reason."""
    if not root.is_dir():
        return FolderScan(False, {}, {})
    rules = ignore_rules(root)
    files: dict[str, Seen] = {}
    skipped: dict[str, str] = {}
    for relative, stat in _walk(str(root), "", rules):
        reason = skip_reason(relative.rsplit("/", 1)[-1], stat.st_size)
        if reason is None:
            files[relative] = Seen(relative, stat.st_size, stat.st_mtime_ns)
        else:
            skipped[relative] = reason
    return FolderScan(True, files, skipped)


def _walk(directory: str, prefix: str, rules: GitIgnoreSpec) -> Iterator[tuple[str, os.stat_result]]:
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        relative = f"{prefix}{entry.name}"
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
            is_file = entry.is_file()
        except OSError:
            continue
        if left_out(relative, is_dir, rules):
            continue
        if is_dir:
            yield from _walk(entry.path, relative + "/", rules)
        elif is_file:
            try:
                yield relative, entry.stat()
            except OSError:
                continue


# (size, mtime_ns, sha256) of a file when it was last hashed, by path.
HashCache = Mapping[str, tuple[int, int, str]]


@dataclass(frozen=True)
class Hashed:
    """Each file's SHA-256; ``fresh`` names those hashed in this pass, ``changing`` those that changed
    while read (left for the next pass)."""

    sha256: dict[str, str]
    fresh: list[str]
    changing: list[str]


def hash_files(
    root: Path,
    files: Mapping[str, Seen],
    cache: HashCache,
    digest: Callable[[Path], str] | None = None,
) -> Hashed:
    """The SHA-256 of every file, from ``cache`` when its size and mtime are unchanged, else read again."""
    if digest is None:
        from memmy_kb_client.sdk import file_sha256

        digest = file_sha256
    sha256: dict[str, str] = {}
    fresh: list[str] = []
    changing: list[str] = []
    for path, seen in files.items():
        cached = cache.get(path)
        if cached is not None and cached[:2] == (seen.size, seen.mtime_ns):
            sha256[path] = cached[2]
            continue
        full = root / path
        try:
            value = digest(full)
            after = full.stat()
        except OSError:
            changing.append(path)
            continue
        if (after.st_size, after.st_mtime_ns) != (seen.size, seen.mtime_ns):
            changing.append(path)
            continue
        sha256[path] = value
        fresh.append(path)
    return Hashed(sha256, fresh, changing)
