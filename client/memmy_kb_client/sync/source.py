"""What an upload or a replace of a pass sends: the file opened beneath the folder (no link followed, never
blocking, a regular file with one name, checked on the descriptor), read there and found to be the bytes
the plan hashed, then sent from that same descriptor. Nothing is opened by its path again, so a file
swapped for a link, a FIFO or another file after the hash is skipped with why, never sent (docs/sync.md)."""

from __future__ import annotations

import errno
import hashlib
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from memmy_kb_client.sync.local import HARD_LINK, SYMLINK, open_beneath

CHUNK = 1024 * 1024


class NotAsHashed(OSError):
    """The file is no longer what the pass hashed (replaced, swapped, written to): the next pass reads
    it again; nothing of it was sent."""


class Cancelled(Exception):
    """The pass was told to stop (unlinked, the service stopping, past its deadline) while it sent."""


@dataclass(frozen=True)
class Identity:
    """What tells one file apart from another put in its place, or from itself written since."""

    device: int
    inode: int
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, fd: int) -> Identity:
        info = os.fstat(fd)
        return cls(info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


@contextmanager
def opened_as_hashed(root: Path, relative: str, sha256: str, size: int) -> Iterator[BinaryIO]:
    """``relative`` beneath ``root``, positioned at its start, once its bytes are found to have ``size``
    and ``sha256`` and its identity (device, inode, size, mtime) kept while they were read; NotAsHashed
    (an OSError) otherwise. Bytes written while they are sent are the cloud's to refuse: the ticket
    carries the SHA-256 (``sha256_mismatch``)."""
    try:
        handle = os.fdopen(open_beneath(root, relative), "rb")
    except OSError as err:
        why = _why(err, relative)
        raise NotAsHashed(f"{relative}: no longer the file the pass hashed ({why}): not sent") from err
    with handle:
        info = os.fstat(handle.fileno())
        if info.st_nlink > 1:
            raise NotAsHashed(f"{relative}: {HARD_LINK}")
        before = Identity.of(handle.fileno())
        digest = hashlib.sha256()
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
        if (before.size, digest.hexdigest()) != (size, sha256) or Identity.of(handle.fileno()) != before:
            raise NotAsHashed(f"{relative}: changed since the pass read it: the next pass reads it again")
        handle.seek(0)
        yield handle


def _why(err: OSError, relative: str) -> str:
    if err.errno in (errno.ELOOP, errno.ENOTDIR):  # the file, or a folder on its path, is now a link
        return SYMLINK
    return err.strerror or str(err).removeprefix(f"{relative}: ")


class StoppableReader:
    """A file as the upload reads it, each read first asking ``stopping``: a pass told to stop while a
    large file goes ends at its next chunk (``Cancelled``), not when storage has it all."""

    def __init__(self, handle: BinaryIO, stopping: Callable[[], bool]) -> None:
        self._handle, self._stopping = handle, stopping

    def read(self, size: int = -1, /) -> bytes:
        if self._stopping():
            raise Cancelled("stopped while a file was sent: the next pass sends it")
        return self._handle.read(size)

    def fileno(self) -> int:
        return self._handle.fileno()
