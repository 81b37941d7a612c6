"""Recall: the excerpts of the caller's KBs for one agent turn (docs/architecture.md, "Recall").

The one place where a wrong id hands someone else's documents to an agent, so every step fails closed:

1. the scope is the caller's grants with recall on, from one consistent Query (``recall_grants``),
   narrowed to the request's ``knowledge_base_ids`` when it names some (``narrow_recall_grants``: an id
   outside the scope is a 422, never a wider search); empty → nothing, and MemOS is not called;
2. MemOS searches exactly the scope's MemOS ids, as a reader id that never writes: by default once per
   MemOS backend, each excerpt's file (and so its KB) told from its text, or with ``attribution="per_kb"``
   each KB on its own (``memmy_kb.domain.recall.search``, which also re-checks the scope and merges);
   with ``attribution="combined"`` in one search naming nothing, as below;
3. (combined) the scope is read again (and narrowed the same way); if it changed during the search (a revoke, a leave, a toggle), the
   whole result is dropped: MemOS hits carry no KB id, so they cannot be filtered afterwards;
4. the hits become the context block (``memmy_kb.domain.recall.context_block``).

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
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memmy_kb.domain.access import (
    compute_recall_scope,
    narrow_recall_grants,
    narrow_scope,
    recall_grants,
    scope_of,
)
from memmy_kb.domain.engine import MemosApiKeyError, MemosError, MemosNotFound, backend_of
from memmy_kb.domain.recall.config import COMBINED, RecallConfig, RecallQuestion
from memmy_kb.domain.recall.context_block import ContextBlock, Excerpt, build_context
from memmy_kb.errors import RecallUnavailable
from memmy_kb.observability import logger

if TYPE_CHECKING:
    from memmy_kb.domain.engine import SearchHit
    from memmy_kb.domain.ports.engines import KnowledgeEngines
    from memmy_kb.domain.ports.knowledge_bases import GrantReader, RecallSources
    from memmy_kb.domain.recall.prints_cache import PrintsCache, RecallFiles
    from memmy_kb.domain.recall.rate_governor import RateGovernor
    from memmy_kb.records import GrantRecord

READER_PREFIX = "kb-reader-"


@dataclass(frozen=True)
class RecallResult:
    """The excerpts kept (sanitised, in order) and the block, for a scope of ``scope_size`` KBs.

    ``discarded``: the scope changed during the search and hits were dropped: every hit in combined
    mode, the hits of the KBs that left the scope (and the unattributed hits of their searches) otherwise. ``partial``: some searches
    failed and the excerpts are those of the others. ``degraded``: near MemOS's rate limit the governor
    grouped KBs that would have been searched alone (``saved`` searches fewer).
    """

    block: ContextBlock
    scope_size: int
    discarded: bool
    partial: bool = False
    saved: int = 0

    @property
    def degraded(self) -> bool:
        return self.saved > 0


@dataclass
class _Stopwatch:
    """The milliseconds of each step of one recall, for its log line (never the query or an excerpt)."""

    clock: Callable[[], float]
    started: float
    last: float
    timings: dict[str, float] = field(default_factory=dict)

    @classmethod
    def start(cls, clock: Callable[[], float]) -> _Stopwatch:
        now = clock()
        return cls(clock, now, now)

    def lap(self, step: str) -> None:
        now = self.clock()
        self.timings[step] = round((now - self.last) * 1000, 1)
        self.last = now

    def total(self) -> dict[str, float]:
        return {**self.timings, "total_ms": round((self.clock() - self.started) * 1000, 1)}


def reader_id(user_id: str) -> str:
    """The MemOS ``user_id`` recall searches as: used for nothing else, so it holds no memories of its own."""
    return f"{READER_PREFIX}{user_id}"


def _empty(scope_size: int, *, discarded: bool) -> RecallResult:
    return RecallResult(ContextBlock("", ()), scope_size=scope_size, discarded=discarded)


def _unavailable() -> RecallUnavailable:
    return RecallUnavailable("Recall is unavailable right now; try again shortly.")


def _block(excerpts: list[Excerpt], question: RecallQuestion, config: RecallConfig) -> ContextBlock:
    return build_context(excerpts, max_chars=config.max_context_chars, limit=question.context_limit)


def recall(
    grants: RecallSources,
    memos: KnowledgeEngines,
    question: RecallQuestion,
    config: RecallConfig = RecallConfig(),  # noqa: B008 - frozen, never changed
    *,
    clock: Callable[[], float] = time.perf_counter,
    governor: RateGovernor | None = None,
    files: RecallFiles | None = None,
    prints: PrintsCache | None = None,
) -> RecallResult:
    """Search the caller's recall scope for ``question`` and return the excerpts and the context block.

    ``config.search_seconds`` bounds the searches together (they run at once: per KB, or combined per
    backend). Raises ``RecallUnavailable`` when MemOS fails, times out or cannot be authenticated with
    (per KB: for every KB still in scope). ``question.knowledge_base_ids`` narrows the scope to those KBs;
    one outside the scope raises ``InvalidInput`` (``knowledge_base_not_in_scope``), MemOS not called.
    ``governor`` (not combined) caps the searches per backend near MemOS's rate limit (None: no cap).
    ``files`` (not combined) lets each excerpt name its file, ``prints`` being the environment's cache of
    the KBs' fingerprints (None: none: excerpts name KBs only).
    """
    watch = _Stopwatch.start(clock)
    scope_grants = narrow_recall_grants(recall_grants(grants, question.user_id), question.knowledge_base_ids)
    watch.lap("scope_ms")
    if not scope_grants:
        logger.info("recall: empty scope, MemOS not called", extra={"scope_size": 0, **watch.timings})
        return _empty(0, discarded=False)
    if config.attribution != COMBINED:
        return _attributed(grants, memos, question, config, scope_grants, watch, governor, (files, prints))
    return _combined(grants, memos, question, config, scope_grants, watch)


def _attributed(
    grants: RecallSources,
    memos: KnowledgeEngines,
    question: RecallQuestion,
    config: RecallConfig,
    scope_grants: list[GrantRecord],
    watch: _Stopwatch,
    governor: RateGovernor | None,
    attribution: tuple[RecallFiles | None, PrintsCache | None],
) -> RecallResult:
    """Recall with every excerpt attributed to its file or KB (or the KBs it may be from): ``search``."""
    from memmy_kb.domain.recall.search import attributed_search

    scope_size = len(scope_grants)
    files, prints = attribution
    found = attributed_search(
        grants,
        memos,
        question,
        config,
        reader=reader_id(question.user_id),
        scope_grants=scope_grants,
        governor=governor,
        files=files,
        prints=prints,
    )
    watch.lap("search_ms")
    if found is None:
        logger.warning(
            "recall: MemOS unavailable for every KB searched, no excerpts",
            extra={"scope_size": scope_size, **watch.timings},
        )
        raise _unavailable()
    block = _block(
        [Excerpt(hit.title, hit.content, hit.score, sources, named) for hit, sources, named in found.hits],
        question,
        config,
    )
    discarded, partial = found.left > 0, found.failed > 0
    logger.info(
        "recall: served",
        extra={
            "scope_size": scope_size,
            "searches": found.searches,
            "failed_searches": found.failed,
            "left_kbs": found.left,
            "saved_searches": found.saved,
            "dropped_hits": found.dropped_hits,
            "attributed_hits": found.attributed,
            "print_indexes": found.indexes,
            "hits": len(found.hits),
            "kept": len(block.excerpts),
            "context_chars": len(block.text),
            "discarded": discarded,
            "partial": partial,
            **watch.total(),
        },
    )
    return RecallResult(block, scope_size=scope_size, discarded=discarded, partial=partial, saved=found.saved)


def _combined_search(
    memos: KnowledgeEngines, scope_grants: list[GrantRecord], question: RecallQuestion, search_seconds: float
) -> list[SearchHit]:
    """One search per MemOS backend of the scope (a search reaches one project), at once and within the
    one budget (``search``'s threads), merged by score; the first failure (by backend) raised."""
    from memmy_kb.domain.recall.governed import Search
    from memmy_kb.domain.recall.search import relevance, run_searches

    reader, limit = reader_id(question.user_id), question.limit
    by_backend: dict[str, list[GrantRecord]] = {}
    for g in scope_grants:
        by_backend.setdefault(backend_of(g.memos_backend), []).append(g)
    outcomes = run_searches(
        [Search(tuple(by_backend[backend])) for backend in sorted(by_backend)],
        lambda s: memos.engine(s.backend).search_memory(reader, question.query, s.memos_ids, limit=limit),
        lambda: None,
        search_seconds,
    )
    for outcome in outcomes:
        if outcome.error is not None:
            raise outcome.error
    hits = [hit for outcome in outcomes for hit in outcome.hits]
    if len(by_backend) > 1:
        hits.sort(key=lambda h: -relevance(h))
    return hits[:limit]


def _left_the_scope(grants: GrantReader, user_id: str, searched: list[str]) -> bool:
    """Whether a MemOS id searched is no longer in the caller's recall scope (read again now)."""
    now = {entry.memos_kb_id for entry in compute_recall_scope(grants, user_id)}
    return not set(searched) <= now


def _combined(
    grants: RecallSources,
    memos: KnowledgeEngines,
    question: RecallQuestion,
    config: RecallConfig,
    scope_grants: list[GrantRecord],
    watch: _Stopwatch,
) -> RecallResult:
    """Recall of the whole scope in one search per backend, dropped whole when the scope changed meanwhile."""
    scope = scope_of(scope_grants)
    try:
        hits = _combined_search(memos, scope_grants, question, config.search_seconds)
    except (MemosError, MemosApiKeyError) as err:
        watch.lap("search_ms")
        return _combined_failed(grants, question, scope_grants, watch, err)
    watch.lap("search_ms")
    # A revoke, leave or toggle that landed during the search wins: the hits cannot be attributed to
    # KBs, so the only safe answer is none of them.
    changed = narrow_scope(compute_recall_scope(grants, question.user_id), question.knowledge_base_ids) != scope
    watch.lap("recheck_ms")
    if changed:
        logger.info(
            "recall: scope changed during the search, result discarded",
            extra={"scope_size": len(scope), "hits": len(hits), "discarded": True, **watch.timings},
        )
        return _empty(len(scope), discarded=True)
    block = _block([Excerpt(hit.title, hit.content, hit.score) for hit in hits], question, config)
    logger.info(
        "recall: served",
        extra={
            "scope_size": len(scope),
            "hits": len(hits),
            "kept": len(block.excerpts),
            "context_chars": len(block.text),
            "discarded": False,
            **watch.total(),
        },
    )
    return RecallResult(block, scope_size=len(scope), discarded=False)


def _combined_failed(
    grants: RecallSources,
    question: RecallQuestion,
    scope_grants: list[GrantRecord],
    watch: _Stopwatch,
    err: MemosError | MemosApiKeyError,
) -> RecallResult:
    """The combined search failed: a scope change when a KB it searched left the scope (MemOS answering
    "not found" for a KB deleted meanwhile), else 503."""
    scope = scope_of(scope_grants)
    scope_size, searched = len(scope), sorted({entry.memos_kb_id for entry in scope})
    if isinstance(err, MemosNotFound) and _left_the_scope(grants, question.user_id, searched):
        logger.info(
            "recall: a KB left the scope during the search, result discarded",
            extra={"scope_size": scope_size, "memos_code": err.code, "discarded": True, **watch.timings},
        )
        return _empty(scope_size, discarded=True)
    logger.warning(
        "recall: MemOS unavailable, no excerpts",
        extra={
            "scope_size": scope_size,
            "error_type": type(err).__name__,
            "memos_code": getattr(err, "code", None),
            "http_status": getattr(err, "http_status", None),
            **watch.timings,
        },
    )
    raise _unavailable() from err
