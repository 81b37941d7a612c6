"""The lock that keeps two passes off one folder: a file lock in the sync's private directory, so two
processes (``memmy-kb sync`` and the desktop's linked folder) never run a pass on one folder at once
(docs/sync.md)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def pass_lock(store_dir: Path, pair: str, *, wait: bool = True) -> Iterator[bool]:
    """Hold the folder's pass lock for the block (a file lock, so across processes too); yields False
    when ``wait`` is off and another pass holds it. The lock is the folder's by its device and inode when
    it is there (two paths of one folder, a bind mount too, share it), else by the pair's real path."""
    import hashlib

    store_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    kb_id, _, root = pair.partition("\n")
    try:
        seen = os.stat(root)
        identity = f"{kb_id}\n{seen.st_dev}:{seen.st_ino}"
    except OSError:
        identity = pair
    name = hashlib.sha256(identity.encode("utf-8")).hexdigest()[:24]
    fd = os.open(store_dir / f"{name}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            import fcntl
        except ImportError:  # Windows: no advisory lock
            yield True
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
