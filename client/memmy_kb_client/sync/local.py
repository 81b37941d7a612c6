"""The folder's side of a pass: which files take part (hidden, temporary and ``.memmyignore``'d files are
left out), which are skipped and why, and their SHA-256, read again only when a file's size or
modification time changed (docs/sync.md)."""

from __future__ import annotations

import codecs
import hashlib
import os
import stat
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from pathspec import GitIgnoreSpec

from memmy_kb_client.sync.ignore import IGNORE_FILE, compile_ignore

SUPPORTED_EXTENSIONS: Final = ("pdf", "docx", "doc", "txt", "json", "md", "xml", "html", "htm", "rst")
MAX_FILE_BYTES: Final = 100 * 1024 * 1024
SYMLINK: Final = "a symbolic link: not followed"
NOT_REGULAR: Final = "not a regular file (a FIFO, socket or device)"
NOT_TEXT: Final = "no extension, and not plain text (UTF-8 without a NUL byte): a knowledge base takes such a file only as text"
# How much of a file without an extension is read to tell plain text (the cloud checks the whole file).
SNIFF_BYTES: Final = 8192
HARD_LINK: Final = "a file with more than one hard link: another name of it may lie outside the folder"
# Each part of a path opened beneath its parent's descriptor, never through a link (POSIX); elsewhere
# (Windows) by path, each part checked first.
_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)
_BENEATH: Final = bool(_NOFOLLOW) and os.open in os.supports_dir_fd
_DIR_FLAGS: Final = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)
_FILE_FLAGS: Final = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
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
    """What a folder holds for a pass: ``exists`` is False for a missing folder (an unmounted disk);
    ``unreadable``, what could not be read (a sub-folder without permission, a disk failing): by path
    (``""``, the folder itself), with why. Nothing in or under an unreadable path counts as gone."""

    exists: bool
    files: dict[str, Seen]
    skipped: dict[str, str]
    unreadable: dict[str, str] = field(default_factory=dict)

    def unread(self, path: str) -> bool:
        """Whether ``path`` is, or is under, something that could not be read."""
        return any(not u or path == u or path.startswith(u + "/") for u in self.unreadable)


@dataclass(frozen=True)
class Rules:
    """What is left out beyond hidden and temporary files: ``.memmyignore``'s patterns, and ``never``,
    folders never read whatever the patterns say (memmy-kb's own state, when it lies in the folder)."""

    spec: GitIgnoreSpec
    never: tuple[str, ...] = ()

    def match_file(self, relative: str) -> bool:
        if any(relative.startswith(f"{n}/") for n in self.never):
            return True
        # No .memmyignore (the usual case): no call into RE2, whose empty set costs some 10 µs a path.
        return bool(self.spec.patterns) and self.spec.match_file(relative)


OWN_STATE: Final = (
    "the folder is memmy-kb's own state directory ($MEMMY_KB_HOME) or in it: it is never synced"
)


def own_state_in(root: Path) -> str | None:
    """Where memmy-kb's own state directory (``$MEMMY_KB_HOME``: the login and tokens when there is no
    keychain, the sync records) lies in ``root``: its path from the root, ``""`` when the root is in it,
    None when they are apart."""
    from memmy_kb_client.home.paths import memmy_home

    home, real = os.path.realpath(memmy_home()), os.path.realpath(root)
    try:
        common = os.path.commonpath([home, real])
    except ValueError:  # another drive
        return None
    if common == home:
        return ""
    return os.path.relpath(home, real).replace(os.sep, "/") if common == real else None


def ignore_rules(root: Path) -> Rules:
    """The root's ``.memmyignore`` (none: nothing beyond hidden and temporary files), and memmy-kb's own
    state if it lies in the root. One that is there but cannot be read stops the pass (OSError): read as
    none, it would upload what it names."""
    try:
        lines = (root / IGNORE_FILE).read_text(encoding="utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        lines = []
    except OSError as err:
        raise OSError(
            f"{IGNORE_FILE} could not be read ({err.strerror or type(err).__name__}): nothing is synced until it can"
        ) from err
    state = own_state_in(root)
    return Rules(compile_ignore(lines), (state,) if state else ())


def left_out(relative: str, is_dir: bool, rules: Rules) -> bool:
    """Whether ``relative`` (``/``-separated, from the root) is no part of the sync."""
    name = relative.rsplit("/", 1)[-1]
    if name.startswith("."):
        return True
    if not is_dir and is_temporary(name):
        return True
    return rules.match_file(relative + "/" if is_dir else relative)


def skip_reason(name: str, size: int) -> str | None:
    """Why a file that takes part cannot be uploaded (None: it can). A name without an extension can:
    as plain text, which ``looks_like_text`` checks."""
    stem, dot, extension = name.rpartition(".")
    if dot and (not stem or extension.lower() not in SUPPORTED_EXTENSIONS):
        return (
            f"unsupported type: a knowledge base takes {', '.join(SUPPORTED_EXTENSIONS)}"
            " and plain text without an extension"
        )
    if size == 0:
        return "empty file"
    if size > MAX_FILE_BYTES:
        return f"too large: {size / 1024 / 1024:.1f} MB, at most {MAX_FILE_BYTES // 1024 // 1024} MB"
    return None


def scan_folder(root: Path) -> FolderScan:
    """The files of ``root`` that take part in a sync, those skipped with their reason, and what could not
    be read."""
    if not root.is_dir():
        return FolderScan(False, {}, {})
    found = FolderScan(True, {}, {}, {})
    _walk(str(root), "", ignore_rules(root), found)
    return found


def _walk(directory: str, prefix: str, rules: Rules, found: FolderScan) -> None:
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError as err:
        found.unreadable[prefix.rstrip("/")] = _why(err)
        return
    for entry in entries:
        relative = f"{prefix}{entry.name}"
        try:
            is_link = entry.is_symlink()
            is_dir = not is_link and entry.is_dir(follow_symlinks=False)
            info = None if is_dir else entry.stat(follow_symlinks=False)
        except OSError as err:
            if not left_out(relative, False, rules):
                found.unreadable[relative] = _why(err)
            continue
        if left_out(relative, is_dir, rules):
            continue
        if is_dir:
            _walk(entry.path, relative + "/", rules, found)
        elif is_link:
            found.skipped[relative] = SYMLINK
        elif info is not None and not stat.S_ISREG(info.st_mode):
            found.skipped[relative] = NOT_REGULAR
        elif info is not None and info.st_nlink > 1:
            found.skipped[relative] = HARD_LINK
        elif info is not None:
            reason = skip_reason(entry.name, info.st_size)
            if reason is None and "." not in entry.name and not looks_like_text(entry.path):
                reason = NOT_TEXT
            if reason is None:
                found.files[relative] = Seen(relative, info.st_size, info.st_mtime_ns)
            else:
                found.skipped[relative] = reason


def looks_like_text(path: str) -> bool:
    """Whether a file's first ``SNIFF_BYTES`` are UTF-8 without a NUL byte (a sequence cut at the end
    counts as text); opened without following a link and without blocking. The bytes sent are hashed and
    checked again when they are sent, and the cloud checks the whole file."""
    try:
        fd = os.open(path, _FILE_FLAGS | _NOFOLLOW)
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        start = os.read(fd, SNIFF_BYTES)
    except OSError:
        return False
    finally:
        os.close(fd)
    try:
        # Only a read that stopped short of the whole file may end inside a character.
        codecs.getincrementaldecoder("utf-8")().decode(start, final=len(start) < SNIFF_BYTES)
    except UnicodeDecodeError:
        return False
    return b"\x00" not in start


def _why(err: OSError) -> str:
    return f"could not be read ({err.strerror or type(err).__name__}): what it holds is kept"


def folders_to_watch(root: Path) -> list[str]:
    """The folder and each of its sub-folders that take part (not hidden, not ignored, never one reached
    through a link), to be watched each on its own: a recursive watch follows links, so a link to ``~``
    or ``/`` would cost a watch per folder under it and wake the pass for every change out there."""
    rules = ignore_rules(root)
    found, stack = [str(root)], [(str(root), "")]
    while stack:
        directory, prefix = stack.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if is_dir and not left_out(prefix + entry.name, True, rules):
                found.append(entry.path)
                stack.append((entry.path, f"{prefix}{entry.name}/"))
    return sorted(found)


def open_beneath(root: Path, relative: str) -> int:
    """A descriptor of the regular file ``relative`` (``/``-separated) beneath ``root``, no part of the
    path followed through a link; OSError for a link, a special file or anything missing."""
    parts = relative.split("/")
    if _BENEATH:
        directory = os.open(root, _DIR_FLAGS)  # the folder named may itself be a link
        try:
            for part in parts[:-1]:
                child = os.open(part, _DIR_FLAGS | _NOFOLLOW, dir_fd=directory)
                os.close(directory)
                directory = child
            fd = os.open(parts[-1], _FILE_FLAGS | _NOFOLLOW, dir_fd=directory)
        finally:
            os.close(directory)
    else:
        for depth in range(1, len(parts) + 1):
            if root.joinpath(*parts[:depth]).is_symlink():
                raise OSError(f"{relative}: {SYMLINK}")
        fd = os.open(root.joinpath(*parts), _FILE_FLAGS)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(f"{relative}: {NOT_REGULAR}")
    return fd


def sha256_beneath(root: Path, relative: str) -> str:
    """The SHA-256 of a regular file beneath ``root`` (``open_beneath``), read in 1 MB chunks."""
    digest = hashlib.sha256()
    with os.fdopen(open_beneath(root, relative), "rb") as handle:
        while chunk := handle.read(1024 * 1024):
            digest.update(chunk)
    return digest.hexdigest()


# (size, mtime_ns, sha256) of a file when it was last hashed, by path.
HashCache = Mapping[str, tuple[int, int, str]]
# A file written this shortly before it was read may be written again within the same tick of its mtime
# (a coarse clock; FAT counts in 2 s), same size, same mtime: its hash is not kept, so the next pass reads
# it again instead of trusting a size and mtime that cannot tell the two writes apart.
MTIME_SLACK_NS: Final = 2_000_000_000


@dataclass(frozen=True)
class Hashed:
    """Each file's SHA-256; ``fresh`` names those hashed in this pass, ``changing`` those that changed
    while read (left for the next pass); ``keep``, the fresh hashes worth remembering (``HashCache``)."""

    sha256: dict[str, str]
    fresh: list[str]
    changing: list[str]
    keep: dict[str, tuple[int, int, str]] = field(default_factory=dict)


def hash_files(
    root: Path,
    files: Mapping[str, Seen],
    cache: HashCache,
    digest: Callable[[Path, str], str] = sha256_beneath,
) -> Hashed:
    """The SHA-256 of every file, from ``cache`` when its size and mtime are unchanged, else read again
    (``digest(root, path)``: beneath ``root``, through no link)."""
    sha256: dict[str, str] = {}
    fresh: list[str] = []
    changing: list[str] = []
    keep: dict[str, tuple[int, int, str]] = {}
    read_at = time.time_ns()
    for path, seen in files.items():
        cached = cache.get(path)
        if cached is not None and cached[:2] == (seen.size, seen.mtime_ns):
            sha256[path] = cached[2]
            continue
        try:
            value = digest(root, path)
            after = os.stat(root / path, follow_symlinks=False)
        except OSError:
            changing.append(path)
            continue
        if (after.st_size, after.st_mtime_ns) != (seen.size, seen.mtime_ns):
            changing.append(path)
            continue
        sha256[path] = value
        fresh.append(path)
        if seen.mtime_ns < read_at - MTIME_SLACK_NS:
            keep[path] = (seen.size, seen.mtime_ns, value)
    return Hashed(sha256, fresh, changing, keep)
