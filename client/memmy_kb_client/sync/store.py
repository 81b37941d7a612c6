"""What a folder's sync remembers between passes (SQLite, in the private directory): the files it brought
in, the intents recorded before they were sent, rejected files, hashes, passes and the desktop's links
(docs/sync.md). The lock that keeps two passes off one folder is ``pass_lock.py``'s."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from memmy_kb_client.sync.roots import real_root, same_folder

STORE_FILE: Final = "sync.sqlite3"
_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS synced (pair TEXT, path TEXT, file_id TEXT NOT NULL, version INTEGER NOT NULL,
    sha256 TEXT NOT NULL, PRIMARY KEY (pair, path));
CREATE TABLE IF NOT EXISTS pending (pair TEXT, path TEXT, kind TEXT NOT NULL, key TEXT NOT NULL,
    sha256 TEXT NOT NULL, size INTEGER NOT NULL, upload_id TEXT, file_id TEXT, if_version INTEGER,
    posted INTEGER NOT NULL DEFAULT 0, started_at REAL NOT NULL, PRIMARY KEY (pair, path));
CREATE TABLE IF NOT EXISTS failed (pair TEXT, path TEXT, sha256 TEXT NOT NULL, reason TEXT NOT NULL,
    upload_id TEXT, PRIMARY KEY (pair, path));
CREATE TABLE IF NOT EXISTS hashes (pair TEXT, path TEXT, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
    sha256 TEXT NOT NULL, PRIMARY KEY (pair, path));
CREATE TABLE IF NOT EXISTS passes (pair TEXT PRIMARY KEY, kb_id TEXT NOT NULL, root TEXT NOT NULL,
    at REAL NOT NULL, outcome TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS links (root TEXT PRIMARY KEY, kb_id TEXT NOT NULL, created_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS deletions (pair TEXT PRIMARY KEY, deleted INTEGER NOT NULL, since REAL NOT NULL);
CREATE TABLE IF NOT EXISTS resent (pair TEXT, path TEXT, sha256 TEXT NOT NULL, PRIMARY KEY (pair, path));
CREATE TABLE IF NOT EXISTS no_room (pair TEXT PRIMARY KEY, code TEXT NOT NULL, file_count INTEGER NOT NULL,
    bytes_used INTEGER NOT NULL, at REAL NOT NULL);
"""

Kind = Literal["upload", "replace"]


class StoreUnusable(sqlite3.Error):
    """The sync records cannot be used (corrupt, locked by another process, not readable); the message
    says so and what to do."""


def _unusable(path: str, err: sqlite3.Error) -> StoreUnusable:
    code = getattr(err, "sqlite_errorcode", None)
    if code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        return StoreUnusable(
            f"the sync records ({path}) are in use by another process ({err}): try again once it is done"
        )
    if code in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB):
        return StoreUnusable(
            f"the sync records ({path}) are damaged ({err}): move the file aside (mv {path} {path}.broken)"
            " and sync again; the next pass rebuilds them from the knowledge base, taking back the files a"
            " sync put there (docs/sync.md, \"The cloud's marker\")"
        )
    return StoreUnusable(f"the sync records ({path}) could not be used ({err})")


@dataclass(frozen=True)
class Synced:
    """A KB file this folder's sync brought in: its id, and the version and hash the sync last saw."""

    file_id: str
    version: int
    sha256: str


@dataclass(frozen=True)
class Pending:
    """An upload or replace recorded before it was sent. ``upload_id`` is None until the service answered;
    ``posted`` once the bytes reached storage."""

    kind: Kind
    key: str
    sha256: str
    size: int
    upload_id: str | None = None
    file_id: str | None = None
    if_version: int | None = None
    posted: bool = False
    started_at: float = 0.0


@dataclass(frozen=True)
class Failed:
    """A file whose upload was rejected, with the hash it had then and the service's reason."""

    sha256: str
    reason: str
    upload_id: str | None = None


@dataclass(frozen=True)
class NoRoom:
    """The KB refused a file for want of room (``code``), when it held ``file_count`` files and
    ``bytes_used`` bytes: the pass sends no upload again until it holds fewer (or an hour passed)."""

    code: str
    file_count: int
    bytes_used: int
    at: float


@dataclass(frozen=True)
class Memory:
    """Everything a pass reads of the store, at its start."""

    synced: dict[str, Synced]
    pending: dict[str, Pending]
    failed: dict[str, Failed]
    hashes: dict[str, tuple[int, int, str]]
    # The files this folder's sync deleted since the last confirmation (docs/sync.md, the guard over time).
    deleted: int = 0
    # Paths whose bytes (this hash) were sent again once after the knowledge engine failed their version.
    resent: dict[str, str] = field(default_factory=dict)
    no_room: NoRoom | None = None


def pair_of(kb_id: str, root: Path) -> str:
    """The key of one folder's sync into one KB: the KB's id and the folder's real path (links resolved),
    so every path that reaches the folder has the same records and the same pass lock."""
    return f"{kb_id}\n{real_root(root)}"


_PAIRED: Final = ("synced", "pending", "failed", "hashes")


class SyncStore:
    """The sync records of every folder, in one SQLite file; safe to share between threads."""

    def __init__(self, path: Path | str, *, timeout: float = 30) -> None:
        """Open (or make) the records; ``StoreUnusable`` when they are damaged or another process holds
        them longer than ``timeout`` seconds."""
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(
                self.path, timeout=timeout, check_same_thread=False, isolation_level=None
            )
            if self.path != ":memory:":
                self._db.execute("PRAGMA journal_mode=WAL")
                # WAL with NORMAL: a committed step survives the process being killed; only a power cut
                # may lose the last steps, which a resume then finds by their Idempotency-Key or upload id.
                self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
        except sqlite3.Error as err:
            raise _unusable(self.path, err) from err
        if self.path != ":memory:":
            os.chmod(self.path, 0o600)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _run(self, sql: str, *params: Any) -> list[Any]:
        with self._lock:
            try:
                return self._db.execute(sql, params).fetchall()
            except sqlite3.Error as err:
                raise _unusable(self.path, err) from err

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as err:
                raise _unusable(self.path, err) from err
            try:
                yield self._db
            except BaseException as err:
                self._db.execute("ROLLBACK")
                if isinstance(err, sqlite3.Error) and not isinstance(err, StoreUnusable):
                    raise _unusable(self.path, err) from err
                raise
            self._db.execute("COMMIT")

    def memory(self, pair: str) -> Memory:
        synced = {
            p: Synced(f, v, s)
            for p, f, v, s in self._run(
                "SELECT path, file_id, version, sha256 FROM synced WHERE pair = ?", pair
            )
        }
        pending = {
            row[0]: Pending(row[1], row[2], row[3], row[4], row[5], row[6], row[7], bool(row[8]), row[9])
            for row in self._run(
                "SELECT path, kind, key, sha256, size, upload_id, file_id, if_version, posted, started_at"
                " FROM pending WHERE pair = ?",
                pair,
            )
        }
        failed = {
            p: Failed(s, r, u)
            for p, s, r, u in self._run(
                "SELECT path, sha256, reason, upload_id FROM failed WHERE pair = ?", pair
            )
        }
        hashes = {
            p: (z, m, s)
            for p, z, m, s in self._run(
                "SELECT path, size, mtime_ns, sha256 FROM hashes WHERE pair = ?", pair
            )
        }
        deleted = self._run("SELECT deleted FROM deletions WHERE pair = ?", pair)
        resent = dict(self._run("SELECT path, sha256 FROM resent WHERE pair = ?", pair))
        room = self._run("SELECT code, file_count, bytes_used, at FROM no_room WHERE pair = ?", pair)
        no_room = NoRoom(*room[0]) if room else None
        return Memory(synced, pending, failed, hashes, deleted[0][0] if deleted else 0, resent, no_room)

    # ----------------------------------------------------------------------------------------- steps

    def intend(self, pair: str, path: str, pending: Pending) -> None:
        """Record an upload or replace before it is sent (its Idempotency-Key first of all)."""
        self._run(
            "INSERT OR REPLACE INTO pending VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            pair,
            path,
            pending.kind,
            pending.key,
            pending.sha256,
            pending.size,
            pending.upload_id,
            pending.file_id,
            pending.if_version,
            int(pending.posted),
            pending.started_at or time.time(),
        )

    def issued(self, pair: str, path: str, upload_id: str) -> None:
        self._run("UPDATE pending SET upload_id = ? WHERE pair = ? AND path = ?", upload_id, pair, path)

    def posted(self, pair: str, path: str) -> None:
        self._run("UPDATE pending SET posted = 1 WHERE pair = ? AND path = ?", pair, path)

    def synced(self, pair: str, path: str, synced: Synced) -> None:
        """The file is the sync's at this version: any intent and failure for the path are over."""
        with self._transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO synced VALUES (?, ?, ?, ?, ?)",
                (pair, path, synced.file_id, synced.version, synced.sha256),
            )
            db.execute("DELETE FROM pending WHERE pair = ? AND path = ?", (pair, path))
            db.execute("DELETE FROM failed WHERE pair = ? AND path = ?", (pair, path))
            db.execute(
                "DELETE FROM resent WHERE pair = ? AND path = ? AND sha256 != ?", (pair, path, synced.sha256)
            )

    def failed(self, pair: str, path: str, failed: Failed) -> None:
        with self._transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO failed VALUES (?, ?, ?, ?, ?)",
                (pair, path, failed.sha256, failed.reason, failed.upload_id),
            )
            db.execute("DELETE FROM pending WHERE pair = ? AND path = ?", (pair, path))

    def drop_pending(self, pair: str, path: str) -> None:
        self._run("DELETE FROM pending WHERE pair = ? AND path = ?", pair, path)

    def forget(self, pair: str, path: str) -> None:
        """The file is no longer the sync's (deleted, or gone from the KB)."""
        with self._transaction() as db:
            for table in ("synced", "pending", "failed", "resent"):
                db.execute(f"DELETE FROM {table} WHERE pair = ? AND path = ?", (pair, path))  # noqa: S608

    def deleted(self, pair: str, count: int = 1) -> None:
        """``count`` more files deleted by the folder's sync since the last confirmation."""
        self._run(
            "INSERT INTO deletions VALUES (?, ?, ?) ON CONFLICT (pair) DO UPDATE SET deleted = deleted + ?",
            pair,
            count,
            time.time(),
            count,
        )

    def confirmed(self, pair: str) -> None:
        """A confirmation (``--yes``, ``desktop confirm``, the page's): the count of deletions starts over."""
        self._run("INSERT OR REPLACE INTO deletions VALUES (?, 0, ?)", pair, time.time())

    def resending(self, pair: str, path: str, sha256: str) -> None:
        """The bytes of a version the knowledge engine failed are sent again, once."""
        self._run("INSERT OR REPLACE INTO resent VALUES (?, ?, ?)", pair, path, sha256)

    def no_room(self, pair: str, no_room: NoRoom | None) -> None:
        """The KB's refusal for want of room (None: it took what was sent, or room may have appeared)."""
        if no_room is None:
            self._run("DELETE FROM no_room WHERE pair = ?", pair)
        else:
            self._run(
                "INSERT OR REPLACE INTO no_room VALUES (?, ?, ?, ?, ?)",
                pair,
                no_room.code,
                no_room.file_count,
                no_room.bytes_used,
                no_room.at,
            )

    def remember_hashes(self, pair: str, hashes: dict[str, tuple[int, int, str]], gone: list[str]) -> None:
        """The sizes, mtimes and hashes read in a pass; ``gone``: paths no longer on disk."""
        with self._transaction() as db:
            db.executemany(
                "INSERT OR REPLACE INTO hashes VALUES (?, ?, ?, ?, ?)",
                [(pair, p, z, m, s) for p, (z, m, s) in hashes.items()],
            )
            db.executemany("DELETE FROM hashes WHERE pair = ? AND path = ?", [(pair, p) for p in gone])

    def record_pass(self, pair: str, kb_id: str, root: str, outcome: dict[str, Any]) -> None:
        self._run(
            "INSERT OR REPLACE INTO passes VALUES (?, ?, ?, ?, ?)",
            pair,
            kb_id,
            root,
            time.time(),
            json.dumps(outcome, ensure_ascii=False),
        )

    def adopt_aliases(self, kb_id: str, root: Path) -> list[str]:
        """Move what is kept under another path of the folder ``root`` (one kept before folders were known
        by their real path, or an alias) to its own pair; the pairs moved. A row the folder's pair already
        has for a path wins over the alias's."""
        pair = pair_of(kb_id, root)
        start = f"{kb_id}\n"
        # Table names from _PAIRED, never from input.
        union = " UNION ".join(f"SELECT pair FROM {t} WHERE substr(pair, 1, ?) = ?" for t in (*_PAIRED, "passes"))  # noqa: S608
        found = self._run(union, *[len(start), start] * (len(_PAIRED) + 1))
        aliases = [old for (old,) in found if old != pair and same_folder(old[len(start) :], root)]
        if not aliases:
            return []
        with self._transaction() as db:
            for old in aliases:
                for table in _PAIRED:
                    db.execute(f"UPDATE OR IGNORE {table} SET pair = ? WHERE pair = ?", (pair, old))  # noqa: S608
                    db.execute(f"DELETE FROM {table} WHERE pair = ?", (old,))  # noqa: S608
                db.execute("UPDATE OR IGNORE passes SET pair = ?, root = ? WHERE pair = ?", (pair, str(root), old))
                db.execute("DELETE FROM passes WHERE pair = ?", (old,))
        return aliases

    def links(self) -> list[tuple[str, str]]:
        """The linked folders, as (absolute path, KB id)."""
        return [(root, kb) for root, kb in self._run("SELECT root, kb_id FROM links ORDER BY root")]

    def add_link(self, root: str, kb_id: str) -> None:
        self._run("INSERT OR REPLACE INTO links VALUES (?, ?, ?)", root, kb_id, time.time())

    def remove_link(self, root: str) -> None:
        self._run("DELETE FROM links WHERE root = ?", root)

    def last_pass(self, pair: str) -> tuple[float, dict[str, Any]] | None:
        rows = self._run("SELECT at, outcome FROM passes WHERE pair = ?", pair)
        return (rows[0][0], json.loads(rows[0][1])) if rows else None
