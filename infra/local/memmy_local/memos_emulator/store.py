"""The emulator's state: knowledge bases, files, excerpts and their full-text index, in one SQLite file.

A file has versions (``/update/knowledgebase-file``): its row keeps the latest version submitted and its
excerpts those of the last version processed. A new version's content waits in ``pending_content``
under its number; processing it replaces the file's excerpts in one transaction, so a search never sees
both versions' text, nor neither. A version that fails leaves the previous one's excerpts in place (what
docs/memos.md assumes of MemOS), and one superseded while it was processed is dropped.

Its SQLite schema is ``store_schema``'s, search over the excerpts ``store_search``'s.
"""

from __future__ import annotations

import sqlite3
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from . import search_text
from .store_schema import open_database
from .store_search import ExcerptSearch, Hit

__all__ = ["EmulatorStore", "Hit", "Kb", "PendingFile", "StoredFile"]


def now_ms() -> int:
    return int(time.time() * 1000)


def new_id() -> str:
    return uuid.uuid4().hex


@dataclass(frozen=True)
class Kb:
    id: str
    project: str
    name: str
    linked: bool


@dataclass(frozen=True)
class StoredFile:
    id: str
    kb_id: str
    name: str
    type: str
    size_bytes: int | None
    status: str
    reason: str | None
    created_at: int
    updated_at: int
    version: int = 1


@dataclass(frozen=True)
class PendingFile:
    file: StoredFile
    content: bytes | None
    url: str | None


class EmulatorStore(ExcerptSearch):
    """Thread-safe access to the emulator's SQLite file (one connection, one lock: simple and enough)."""

    def __init__(self, path: Path) -> None:
        self._lock = threading.RLock()
        self._db = open_database(path)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # -- knowledge bases -------------------------------------------------------------------------

    def create_kb(self, project: str, name: str, description: str | None) -> Kb:
        kb = Kb(id=new_id(), project=project, name=name, linked=True)
        with self._lock:
            self._db.execute(
                "INSERT INTO kbs (id, project, name, description, linked, created_at) VALUES (?,?,?,?,1,?)",
                (kb.id, project, name, description, now_ms()),
            )
        return kb

    def count_linked_kbs(self, project: str) -> int:
        with self._lock:
            return int(
                self._db.execute(
                    "SELECT count(*) FROM kbs WHERE project = ? AND linked = 1", (project,)
                ).fetchone()[0]
            )

    def linked_kb_ids(self, project: str) -> list[str]:
        with self._lock:
            rows = self._db.execute(
                "SELECT id FROM kbs WHERE project = ? AND linked = 1", (project,)
            ).fetchall()
        return [row["id"] for row in rows]

    def get_kb(self, kb_id: str) -> Kb | None:
        with self._lock:
            row = self._db.execute(
                "SELECT id, project, name, linked FROM kbs WHERE id = ?", (kb_id,)
            ).fetchone()
        return Kb(row["id"], row["project"], row["name"], bool(row["linked"])) if row else None

    def unlink_kb(self, kb_id: str) -> None:
        with self._lock:
            self._db.execute("UPDATE kbs SET linked = 0 WHERE id = ?", (kb_id,))

    def delete_kb(self, kb_id: str) -> None:
        """Remove the KB with its files and excerpts (the index rows first: FTS has no cascade)."""
        with self._lock, self._transaction():
            self._db.execute(
                "DELETE FROM excerpt_fts WHERE rowid IN (SELECT rowid FROM excerpts WHERE kb_id = ?)",
                (kb_id,),
            )
            self._db.execute("DELETE FROM excerpts WHERE kb_id = ?", (kb_id,))
            self._db.execute("DELETE FROM kbs WHERE id = ?", (kb_id,))

    # -- files -----------------------------------------------------------------------------------

    def add_file(
        self,
        kb_id: str,
        *,
        name: str,
        type_: str,
        size_bytes: int | None,
        content: bytes | None,
        url: str | None,
        ready_at: float,
    ) -> StoredFile:
        ts = now_ms()
        file = StoredFile(new_id(), kb_id, name, type_, size_bytes, "running", None, ts, ts)
        with self._lock, self._transaction():
            self._db.execute(
                "INSERT INTO files (id, kb_id, name, type, size_bytes, status, ready_at, created_at, updated_at)"
                " VALUES (?,?,?,?,?,?,?,?,?)",
                (file.id, kb_id, name, type_, size_bytes, file.status, ready_at, ts, ts),
            )
            self._db.execute(
                "INSERT INTO pending_content (file_id, content, url) VALUES (?,?,?)", (file.id, content, url)
            )
        return file

    def next_pending(self, now: float) -> tuple[PendingFile | None, float | None]:
        """The oldest file due for processing, else the time the next one becomes due."""
        with self._lock:
            row = self._db.execute(
                "SELECT f.*, p.content, p.url, p.version AS pending_version FROM files f"
                " JOIN pending_content p ON p.file_id = f.id"
                " WHERE f.status = 'running' ORDER BY f.ready_at LIMIT 1"
            ).fetchone()
        if row is None:
            return None, None
        if row["ready_at"] > now:
            return None, row["ready_at"]
        file = replace(_file(row), version=row["pending_version"])
        return PendingFile(file, row["content"], row["url"]), None

    def update_file(
        self,
        file_id: str,
        *,
        name: str,
        size_bytes: int | None,
        content: bytes | None,
        url: str | None,
        ready_at: float,
    ) -> StoredFile:
        """The file's next version: ``running`` again, its content waiting for the worker. Until that
        version is processed, the file's excerpts are still the previous version's. A version still waiting
        is superseded (the last update received is the one that stays)."""
        ts = now_ms()
        with self._lock, self._transaction():
            self._db.execute(
                "UPDATE files SET name = ?, size_bytes = ?, status = 'running', reason = NULL, ready_at = ?,"
                " updated_at = ?, version = version + 1 WHERE id = ?",
                (name, size_bytes, ready_at, ts, file_id),
            )
            row = self._db.execute("SELECT * FROM files WHERE id = ?", (file_id,)).fetchone()
            self._db.execute(
                "INSERT OR REPLACE INTO pending_content (file_id, content, url, version) VALUES (?,?,?,?)",
                (file_id, content, url, row["version"]),
            )
        return _file(row)

    def complete_file(self, file_id: str, excerpts: Sequence[tuple[str, str]], version: int = 1) -> None:
        """Index ``(title, text)`` excerpts of ``version`` in place of the file's previous ones and mark it
        completed, unless the file was deleted, or that version superseded, meanwhile."""
        prepared = [
            (title, text, search_text.index_text(title), search_text.index_text(text))
            for title, text in excerpts
        ]
        ts = now_ms()
        with self._lock, self._transaction():
            row = self._db.execute("SELECT kb_id FROM files WHERE id = ?", (file_id,)).fetchone()
            if row is None or not self._is_pending(file_id, version):
                return
            self._drop_excerpts(file_id)
            for title, text, title_tokens, body_tokens in prepared:
                cur = self._db.execute(
                    "INSERT INTO excerpts (memory_id, kb_id, file_id, title, text, created_at) VALUES (?,?,?,?,?,?)",
                    (new_id(), row["kb_id"], file_id, title, text, ts),
                )
                self._db.execute(
                    "INSERT INTO excerpt_fts (rowid, title_tokens, body_tokens) VALUES (?,?,?)",
                    (cur.lastrowid, title_tokens, body_tokens),
                )
            self._finish(file_id, "completed", None, ts)

    def fail_file(self, file_id: str, reason: str, version: int = 1) -> None:
        """Mark ``version`` failed; the excerpts of the version before it (if any) stay searchable."""
        with self._lock, self._transaction():
            if self._is_pending(file_id, version):
                self._finish(file_id, "failed", reason, now_ms())

    def _is_pending(self, file_id: str, version: int) -> bool:
        row = self._db.execute("SELECT version FROM pending_content WHERE file_id = ?", (file_id,)).fetchone()
        return row is not None and row["version"] == version

    def _drop_excerpts(self, file_id: str) -> None:
        """The file's excerpts out of the index and the table (FTS has no cascade)."""
        self._db.execute(
            "DELETE FROM excerpt_fts WHERE rowid IN (SELECT rowid FROM excerpts WHERE file_id = ?)",
            (file_id,),
        )
        self._db.execute("DELETE FROM excerpts WHERE file_id = ?", (file_id,))

    def _finish(self, file_id: str, status: str, reason: str | None, ts: int) -> None:
        self._db.execute(
            "UPDATE files SET status = ?, reason = ?, updated_at = ? WHERE id = ?",
            (status, reason, ts, file_id),
        )
        self._db.execute("DELETE FROM pending_content WHERE file_id = ?", (file_id,))

    def files_by_ids(self, project: str, file_ids: Iterable[str]) -> list[StoredFile]:
        """Those of ``file_ids`` that live in a KB linked to ``project``, in the order asked."""
        ids = list(dict.fromkeys(file_ids))
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        with self._lock:
            rows = self._db.execute(
                f"SELECT f.* FROM files f JOIN kbs k ON k.id = f.kb_id"  # noqa: S608 - placeholders only
                f" WHERE f.id IN ({marks}) AND k.project = ? AND k.linked = 1",
                (*ids, project),
            ).fetchall()
        by_id = {row["id"]: _file(row) for row in rows}
        return [by_id[i] for i in ids if i in by_id]

    def list_files(
        self, kb_id: str, type_: str | None, page: int, page_size: int
    ) -> tuple[int, list[StoredFile]]:
        where, args = "kb_id = ?", [kb_id]
        if type_:
            where += " AND type = ?"
            args.append(type_)
        with self._lock:
            total = self._db.execute(f"SELECT count(*) FROM files WHERE {where}", args).fetchone()[0]  # noqa: S608
            rows = self._db.execute(
                f"SELECT * FROM files WHERE {where} ORDER BY created_at, id LIMIT ? OFFSET ?",  # noqa: S608
                (*args, page_size, (page - 1) * page_size),
            ).fetchall()
        return total, [_file(row) for row in rows]

    def delete_files(self, project: str, file_ids: Iterable[str]) -> int:
        """Delete those of ``file_ids`` in ``project`` with their excerpts; unknown ids are ignored."""
        files = self.files_by_ids(project, file_ids)
        with self._lock, self._transaction():
            for file in files:
                self._drop_excerpts(file.id)
                self._db.execute("DELETE FROM files WHERE id = ?", (file.id,))
        return len(files)

    # -- inspection ------------------------------------------------------------------------------

    def snapshot(self) -> list[dict[str, Any]]:
        with self._lock:
            kbs = self._db.execute(
                "SELECT id, project, name, linked FROM kbs ORDER BY created_at, id"
            ).fetchall()
            files = self._db.execute(
                "SELECT id, kb_id, name, status, reason, version FROM files ORDER BY created_at, id"
            ).fetchall()
        by_kb: dict[str, list[dict[str, Any]]] = {}
        for f in files:
            by_kb.setdefault(f["kb_id"], []).append(
                {
                    "id": f["id"],
                    "name": f["name"],
                    "status": f["status"],
                    "reason": f["reason"],
                    "version": f["version"],
                }
            )
        return [
            {
                "id": k["id"],
                "name": k["name"],
                "project": k["project"],
                "linked": bool(k["linked"]),
                "files": by_kb.get(k["id"], []),
            }
            for k in kbs
        ]

    def reset(self) -> None:
        with self._lock, self._transaction():
            for table in ("excerpt_fts", "excerpts", "pending_content", "files", "kbs"):
                self._db.execute(f"DELETE FROM {table}")  # noqa: S608 - fixed names

    def checkpoint(self) -> sqlite3.Connection:
        """A copy of everything stored (KBs, files, excerpts and their index, work pending), in memory."""
        copy = sqlite3.connect(":memory:", check_same_thread=False)
        with self._lock:
            self._db.backup(copy)
        return copy

    def restore(self, checkpoint: sqlite3.Connection) -> None:
        """Everything stored replaced by ``checkpoint``'s copy (SQLite's online backup, page by page)."""
        with self._lock:
            checkpoint.backup(self._db)

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")


def _file(row: sqlite3.Row) -> StoredFile:
    return StoredFile(
        id=row["id"],
        kb_id=row["kb_id"],
        name=row["name"],
        type=row["type"],
        size_bytes=row["size_bytes"],
        status=row["status"],
        reason=row["reason"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        version=row["version"],
    )
