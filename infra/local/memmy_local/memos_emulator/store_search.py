"""Search over the emulator's excerpts: BM25 over jieba-segmented text in SQLite FTS5.

Relativity (0..1) blends how much of the query's information the excerpt covers (IDF-weighted share of
the query terms it contains) with its BM25 score relative to the best candidate, so an excerpt that
answers the whole question outranks one that repeats a single common word.
"""

from __future__ import annotations

import math
import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from . import search_text

# BM25 column weights: a word in the excerpt's title counts three times a word in its body.
_TITLE_WEIGHT, _BODY_WEIGHT = 3.0, 1.0
_CANDIDATES = 200


@dataclass(frozen=True)
class Hit:
    memory_id: str
    title: str
    text: str
    created_at: int
    relativity: float
    file_id: str


class ExcerptSearch:
    """The search half of ``EmulatorStore``, on its connection and lock."""

    _db: sqlite3.Connection
    _lock: threading.RLock

    def search(self, kb_ids: Sequence[str], query: str, *, limit: int, relativity: float) -> list[Hit]:
        """BM25 search over exactly ``kb_ids`` (the caller has checked they are linked to its project)."""
        terms = search_text.query_terms(query)
        if not kb_ids or not terms:
            return []
        marks = ",".join("?" * len(kb_ids))
        with self._lock:
            rows = self._db.execute(
                f"SELECT e.memory_id, e.file_id, e.title, e.text, e.created_at, x.title_tokens, x.body_tokens,"  # noqa: S608
                f" bm25(excerpt_fts, {_TITLE_WEIGHT}, {_BODY_WEIGHT}) AS rank"
                f" FROM excerpt_fts x JOIN excerpts e ON e.rowid = x.rowid"
                f" WHERE excerpt_fts MATCH ? AND e.kb_id IN ({marks})"
                f" ORDER BY rank LIMIT {_CANDIDATES}",
                (search_text.fts_match_expression(terms), *kb_ids),
            ).fetchall()
            if not rows:
                return []
            idf = self._idf(terms)
        total_weight = sum(idf.values()) or 1.0
        best = max(-row["rank"] for row in rows) or 1.0
        hits = []
        for row in rows:
            present = set(row["title_tokens"].split()) | set(row["body_tokens"].split())
            coverage = sum(w for term, w in idf.items() if term in present) / total_weight
            score = round(0.7 * coverage + 0.3 * (-row["rank"] / best), 4)
            if score >= relativity:
                hits.append(
                    Hit(row["memory_id"], row["title"], row["text"], row["created_at"], score, row["file_id"])
                )
        hits.sort(key=lambda hit: hit.relativity, reverse=True)
        return hits[:limit]

    def memory_origins(self) -> dict[str, tuple[str, str]]:
        """Every memory's file id and stored text, by memory id: what a hit's file truly is (MemOS's hits
        do not say; the attribution bench compares what recognising the text names with this)."""
        with self._lock:
            rows = self._db.execute("SELECT memory_id, file_id, text FROM excerpts").fetchall()
        return {row["memory_id"]: (row["file_id"], row["text"]) for row in rows}

    def _idf(self, terms: list[str]) -> dict[str, float]:
        total = self._db.execute("SELECT count(*) FROM excerpts").fetchone()[0]
        marks = ",".join("?" * len(terms))
        df = dict(
            self._db.execute(
                f"SELECT term, doc FROM excerpt_vocab WHERE term IN ({marks})",  # noqa: S608
                terms,
            ).fetchall()
        )
        return {t: math.log(1 + (total - df.get(t, 0) + 0.5) / (df.get(t, 0) + 0.5)) for t in terms}
