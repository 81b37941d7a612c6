"""Recall: the excerpts of the caller's KBs for one agent turn (docs/architecture.md, "Recall").

The one place where a wrong id hands someone else's documents to an agent, so every step fails closed:

1. the scope is the caller's grants with recall on, from one consistent Query (``compute_recall_scope``);
   empty → nothing, and MemOS is not called;
2. MemOS searches exactly the scope's MemOS ids, as a reader id that never writes;
3. the scope is read again; if it changed during the search (a revoke, a leave, a toggle), the whole
   result is dropped: MemOS hits carry no KB id, so they cannot be filtered afterwards;
4. the hits become the context block (``memmy_kb.domain.context_block``).

A MemOS error or timeout is a 503 with no excerpts, never a retry with another scope. One exception:
MemOS answering "not found" (``MemosNotFound``, e.g. code 50120) for the search makes recall read the
scope again; when a KB it searched has left the scope meanwhile (the KB was deleted, or the caller lost
it, while the search ran), that is a scope change like any other: 200, discarded, no excerpts. When
every KB searched is still in scope, the "not found" is unexplained and stays a 503. Queries and
excerpts are never logged: only counts and timings.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memmy_kb.domain.access import compute_recall_scope
from memmy_kb.domain.context_block import DEFAULT_MAX_CHARS, ContextBlock, Excerpt, build_context
from memmy_kb.domain.engine import MemosApiKeyError, MemosError, MemosNotFound
from memmy_kb.errors import RecallUnavailable
from memmy_kb.observability import logger

if TYPE_CHECKING:
    from memmy_kb.domain.ports import GrantReader, KnowledgeEngine

DEFAULT_RECALL_LIMIT = 9
READER_PREFIX = "kb-reader-"


@dataclass(frozen=True)
class RecallResult:
    """The excerpts kept (sanitised, in order) and the block, for a scope of ``scope_size`` KBs.

    ``discarded``: the scope changed during the search and every hit was dropped.
    """

    block: ContextBlock
    scope_size: int
    discarded: bool


def reader_id(user_id: str) -> str:
    """The MemOS ``user_id`` recall searches as: used for nothing else, so it holds no memories of its own."""
    return f"{READER_PREFIX}{user_id}"


def _empty(scope_size: int, *, discarded: bool) -> RecallResult:
    return RecallResult(ContextBlock("", ()), scope_size=scope_size, discarded=discarded)


def _left_the_scope(grants: GrantReader, user_id: str, searched: list[str]) -> bool:
    """Whether a MemOS id searched is no longer in the caller's recall scope (read again now)."""
    now = {entry.memos_kb_id for entry in compute_recall_scope(grants, user_id)}
    return not set(searched) <= now


def recall(
    grants: GrantReader,
    memos: KnowledgeEngine,
    *,
    user_id: str,
    query: str,
    limit: int = DEFAULT_RECALL_LIMIT,
    max_context_chars: int = DEFAULT_MAX_CHARS,
    clock: Callable[[], float] = time.perf_counter,
) -> RecallResult:
    """Search the caller's recall scope for ``query`` and return the excerpts and the context block.

    Raises ``RecallUnavailable`` when MemOS fails, times out or cannot be authenticated with.
    """
    started = clock()
    scope = compute_recall_scope(grants, user_id)
    scoped = clock()
    timings = {"scope_ms": round((scoped - started) * 1000, 1)}
    if not scope:
        logger.info("recall: empty scope, MemOS not called", extra={"scope_size": 0, **timings})
        return _empty(0, discarded=False)

    memos_ids = sorted({entry.memos_kb_id for entry in scope})
    try:
        hits = memos.search_memory(reader_id(user_id), query, memos_ids, limit=limit)
    except (MemosError, MemosApiKeyError) as err:
        timings["search_ms"] = round((clock() - scoped) * 1000, 1)
        if isinstance(err, MemosNotFound) and _left_the_scope(grants, user_id, memos_ids):
            # A KB searched was deleted (or left the caller's scope) during the search: a scope change.
            logger.info(
                "recall: a KB left the scope during the search, result discarded",
                extra={"scope_size": len(scope), "memos_code": err.code, "discarded": True, **timings},
            )
            return _empty(len(scope), discarded=True)
        logger.warning(
            "recall: MemOS unavailable, no excerpts",
            extra={
                "scope_size": len(scope),
                "error_type": type(err).__name__,
                "memos_code": getattr(err, "code", None),
                "http_status": getattr(err, "http_status", None),
                **timings,
            },
        )
        raise RecallUnavailable("Recall is unavailable right now; try again shortly.") from err
    searched = clock()
    timings["search_ms"] = round((searched - scoped) * 1000, 1)

    # A revoke, leave or toggle that landed during the search wins: the hits cannot be attributed to
    # KBs, so the only safe answer is none of them.
    if compute_recall_scope(grants, user_id) != scope:
        timings["recheck_ms"] = round((clock() - searched) * 1000, 1)
        logger.info(
            "recall: scope changed during the search, result discarded",
            extra={"scope_size": len(scope), "hits": len(hits), "discarded": True, **timings},
        )
        return _empty(len(scope), discarded=True)
    timings["recheck_ms"] = round((clock() - searched) * 1000, 1)

    block = build_context(
        (Excerpt(hit.title, hit.content, hit.score) for hit in hits), max_chars=max_context_chars
    )
    logger.info(
        "recall: served",
        extra={
            "scope_size": len(scope),
            "hits": len(hits),
            "kept": len(block.excerpts),
            "context_chars": len(block.text),
            "discarded": False,
            **timings,
            "total_ms": round((clock() - started) * 1000, 1),
        },
    )
    return RecallResult(block, scope_size=len(scope), discarded=False)
