"""The emulator's SQLite schema: knowledge bases, files, a version's pending content, excerpts and their
FTS5 index; a ``--db`` written by an older emulator gains the columns added since when it is opened."""

from __future__ import annotations

import sqlite3
from pathlib import Path

__all__ = ["open_database"]

_SCHEMA = """
PRAGMA journal_mode = WAL;
PRAGMA foreign_keys = ON;
CREATE TABLE IF NOT EXISTS kbs (
    id TEXT PRIMARY KEY,
    project TEXT NOT NULL,
    name TEXT NOT NULL,
    description TEXT,
    linked INTEGER NOT NULL DEFAULT 1,
    created_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS files (
    id TEXT PRIMARY KEY,
    kb_id TEXT NOT NULL REFERENCES kbs(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    type TEXT NOT NULL,
    size_bytes INTEGER,
    status TEXT NOT NULL,
    reason TEXT,
    ready_at REAL NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    version INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX IF NOT EXISTS files_by_kb ON files (kb_id, created_at);
CREATE TABLE IF NOT EXISTS pending_content (
    file_id TEXT PRIMARY KEY REFERENCES files(id) ON DELETE CASCADE,
    content BLOB,
    url TEXT,
    version INTEGER NOT NULL DEFAULT 1
);
CREATE TABLE IF NOT EXISTS excerpts (
    rowid INTEGER PRIMARY KEY,
    memory_id TEXT NOT NULL,
    kb_id TEXT NOT NULL,
    file_id TEXT NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    title TEXT NOT NULL,
    text TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS excerpts_by_kb ON excerpts (kb_id);
CREATE INDEX IF NOT EXISTS excerpts_by_file ON excerpts (file_id);
CREATE VIRTUAL TABLE IF NOT EXISTS excerpt_fts USING fts5(title_tokens, body_tokens, tokenize = 'unicode61');
CREATE VIRTUAL TABLE IF NOT EXISTS excerpt_vocab USING fts5vocab(excerpt_fts, 'row');
"""

# Columns added since the first schema: a ``--db`` written by an older emulator gains them on open.
_ADDED_COLUMNS = (
    ("files", "version", "INTEGER NOT NULL DEFAULT 1"),
    ("pending_content", "version", "INTEGER NOT NULL DEFAULT 1"),
)


def open_database(path: Path) -> sqlite3.Connection:
    """The emulator's SQLite file at ``path`` (created if new, brought up to this schema if older), in
    autocommit mode with rows by column name, for use from any thread under the caller's lock."""
    db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    db.row_factory = sqlite3.Row
    db.executescript(_SCHEMA)
    for table, column, declaration in _ADDED_COLUMNS:
        present = {row["name"] for row in db.execute(f"PRAGMA table_info({table})")}
        if column not in present:
            db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")
    return db
