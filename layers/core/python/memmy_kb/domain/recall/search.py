"""Attributed recall: every excerpt says which KB, and which file, it comes from (docs/architecture.md,
"Recall").

A MemOS hit names neither its KB nor its file. By default (``by_file``) recall searches each MemOS backend
of the scope once, over all of the scope's KBs on it (a search goes to one project with its key), and
tells each hit's file, and so its KB, from the MemOS file ids it gives, else from its text
(``memmy_kb.domain.recall.merge``). The ``per_kb``
plan, kept for comparison, searches each KB alone, at most ``max_searches`` searches: past that, the
first KBs (shares first) are searched alone and the rest in groups, one per backend.

The searches run at once on threads (each backend's client, whose connection pool is sized for them)
within the one recall budget; a search MemOS answers with "rate limited" is tried once more, after a
jittered pause, when the budget still allows it; meanwhile the main thread reads the KBs' names and the
sharers' profiles in one batched read and starts loading the fingerprints the environment does not hold
fresh (``memmy_kb.domain.recall.file_attribution``). Once every search has answered (or the budget is spent)
the scope is read again, once, and the hits of KBs that left it are dropped (``merge``). Some
searches failing and others answering gives the answered excerpts, flagged ``partial``; no search
answering for a KB still in scope is the 503 of a failed recall.

Near MemOS's rate limit the rate governor (``memmy_kb.domain.recall.rate_governor``) allows a backend fewer
searches than the plan has for it; ``cap_plan`` then keeps the first of them alone and merges the rest
into one group, down to one search of all the backend's KBs (``saved``: the searches it did not send).
The ``by_file`` plan sends one search per backend already, so it is never cut; but with the fleet's
budget (``memmy_kb.domain.recall.fleet_budget``) a backend may be granted no search at all: it is skipped
(``memmy_kb.domain.recall.governed``), the answer partial, or a 503 with ``Retry-After`` when every
backend was.

The scope given may be the request's narrowed one (``narrow_recall_grants``): the re-check asks only that
each hit's KBs are still in the caller's scope, so it holds for a narrowed scope as it is.
"""

from __future__ import annotations

import contextvars
import math
import random
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memmy_kb.domain.access import compute_recall_scope
from memmy_kb.domain.engine import (
    MemosApiKeyError,
    MemosError,
    MemosNotFound,
    MemosRateLimited,
    MemosUnavailable,
    SearchHit,
    backend_of,
)
from memmy_kb.domain.recall.context_block import SourceFile, SourceKb
from memmy_kb.domain.recall.file_attribution import PrintsLoading
from memmy_kb.domain.recall.governed import Governed, Search, governed, sendable
from memmy_kb.domain.recall.merge import merge_answered
from memmy_kb.domain.recall.prints_cache import PrintsCache
from memmy_kb.observability import put_backend_metrics

if TYPE_CHECKING:
    from memmy_kb.domain.ports.engines import KnowledgeEngines
    from memmy_kb.domain.ports.knowledge_bases import RecallSources
    from memmy_kb.domain.recall.config import RecallConfig, RecallQuestion
    from memmy_kb.domain.recall.prints_cache import RecallFiles
    from memmy_kb.domain.recall.rate_governor import RateGovernor
    from memmy_kb.records import GrantRecord, KnowledgeBaseRecord, ProfileRecord

_SearchFailure = MemosError | MemosApiKeyError


@dataclass(frozen=True, eq=False)
class Outcome:
    """What one search gave: its hits, or the error it failed with."""

    search: Search
    hits: tuple[SearchHit, ...] = ()
    error: _SearchFailure | None = None
    rate_limited: int = 0  # "rate limited" answers it met (the first one is retried)


@dataclass(frozen=True)
class Attributed:
    """The merged hits with their KBs and files, and what happened to the searches: ``left``, the searched
    KBs that left the scope meanwhile; ``attributed``, the hits kept that name a file; ``dropped_hits``,
    those dropped by the re-check; ``indexes``, the KBs whose fingerprints were ready."""

    hits: list[tuple[SearchHit, tuple[SourceKb, ...], tuple[SourceFile, ...]]]
    searches: int
    failed: int
    left: int
    saved: int = 0  # searches the rate governor took off the plan (0: not degraded)
    attributed: int = 0
    dropped_hits: int = 0
    indexes: int = 0


def plan(grants: list[GrantRecord], max_searches: int) -> list[Search]:
    """The searches for a scope: one per KB, or, past ``max_searches`` KBs, as many alone as leave room
    (shares first, then by id) and the rest in one group per MemOS backend. Only when the scope spans
    more backends than ``max_searches`` are there more searches (one per backend)."""
    ordered = sorted({g.kb_id: g for g in grants}.values(), key=lambda g: (g.role == "owner", g.kb_id))
    if len(ordered) <= max_searches:
        return [Search((g,)) for g in ordered]
    alone = max(max_searches - 1, 0)
    while alone > 0 and alone + len({backend_of(g.memos_backend) for g in ordered[alone:]}) > max_searches:
        alone -= 1
    groups: dict[str, list[GrantRecord]] = {}
    for g in ordered[alone:]:
        groups.setdefault(backend_of(g.memos_backend), []).append(g)
    return [*(Search((g,)) for g in ordered[:alone]), *(Search(tuple(groups[b])) for b in sorted(groups))]


def plan_by_backend(grants: list[GrantRecord]) -> list[Search]:
    """One search per MemOS backend for all of the scope's KBs on it (shares first, then by id)."""
    ordered = sorted({g.kb_id: g for g in grants}.values(), key=lambda g: (g.role == "owner", g.kb_id))
    groups: dict[str, list[GrantRecord]] = {}
    for g in ordered:
        groups.setdefault(backend_of(g.memos_backend), []).append(g)
    return [Search(tuple(groups[b])) for b in sorted(groups)]


def relevance(hit: SearchHit) -> float:
    """A hit's score as the merge ranks it: without one, or with one that is no finite number (a NaN
    would scramble the whole sort, an infinity outrank every real score), it ranks after every scored hit."""
    score = hit.score
    return score if score is not None and math.isfinite(score) else -1.0


# MemOS's most hits per search we ask for (the API's most excerpts a recall).
MAX_SEARCH_HITS = 25


def _asked(search: Search, limit: int, max_per_kb: int) -> int:
    """The hits to ask of one search: for one KB at most ``max_per_kb`` (never over ``limit``); for several,
    ``limit`` when no KB's cap can bind, else the most MemOS gives (25), so that one KB's many hits ranked
    first still leave the others' hits once ``max_per_kb`` is applied after attribution."""
    if len(search.grants) == 1:
        return min(limit, max_per_kb)
    return limit if limit <= max_per_kb else MAX_SEARCH_HITS


def _source(
    grant: GrantRecord, kbs: dict[str, KnowledgeBaseRecord], owners: dict[str, ProfileRecord]
) -> SourceKb:
    kb = kbs.get(grant.kb_id)
    name = kb.name if kb is not None else grant.kb_id
    if grant.role == "owner":
        return SourceKb(grant.kb_id, name)
    # The same owner name and masked contact as the "shared with me" list shows (guarantee 9).
    from memmy_kb.domain.directory import masked_contact
    from memmy_kb.domain.display import shown

    profile = owners.get(grant.owner_id)
    # As the list names them: the profile's name (without a profile, the KB's); one that shows nothing
    # gives the owner's id.
    listed = profile.display_name if profile else (kb.owner_name if kb else None)
    owner_name = shown(listed or "") or grant.owner_id
    contact = masked_contact(profile.phone, profile.email) if profile else None
    from memmy_kb.domain.team_reach import TeamGrant

    if isinstance(grant, TeamGrant) and grant.teams:  # read only through teams: the first names it
        team_id, team_name = grant.teams[0]
        return SourceKb(grant.kb_id, name, owner_name, contact, team_id, shown(team_name) or team_id)
    return SourceKb(grant.kb_id, name, owner_name, contact)


def run_searches(
    searches: list[Search],
    search: Callable[[Search], list[SearchHit]],
    meanwhile: Callable[[], None],
    deadline_seconds: float,
) -> list[Outcome]:
    """Every search at once on its own thread (each in a copy of this context, so the invocation's
    deadline bounds it too), ``meanwhile()`` on this one; a search not answered by the deadline failed."""
    deadline = time.monotonic() + deadline_seconds
    # A single search too runs on a thread: waiting for it here would let it (and its retry) outlast the
    # budget, and would read the names only before it instead of during it.
    executor = ThreadPoolExecutor(max_workers=len(searches), thread_name_prefix="recall-search")
    try:
        futures = [
            executor.submit(contextvars.copy_context().run, _outcome, s, search, deadline) for s in searches
        ]
        meanwhile()
        wait(futures, timeout=max(deadline - time.monotonic(), 0))
        return [_finished(s, f) for s, f in zip(searches, futures, strict=True)]
    finally:
        # Late searches end by their own timeouts; nothing waits for them.
        executor.shutdown(wait=False, cancel_futures=True)


# The pause before a rate-limited search is tried again: uniform in this range (seconds), so searches
# refused together do not come back together; never past the recall budget.
RATE_LIMIT_PAUSE = (0.05, 0.25)


def _outcome(
    target: Search,
    search: Callable[[Search], list[SearchHit]],
    deadline: float,
    pause: Callable[[float], None] = time.sleep,
) -> Outcome:
    """``search(target)``'s hits or error; a "rate limited" answer is tried once more after a jittered
    pause when the budget (``deadline``, monotonic) leaves room for the pause and a search."""
    refused = 0
    while True:
        try:
            return Outcome(target, hits=tuple(search(target)), rate_limited=refused)
        except MemosRateLimited as err:
            refused += 1
            wait_for = random.uniform(*RATE_LIMIT_PAUSE)  # noqa: S311 - jitter, not a secret
            if err.retry_after is not None:
                wait_for = max(wait_for, err.retry_after)
            if refused > 1 or time.monotonic() + wait_for >= deadline - RATE_LIMIT_PAUSE[1]:
                return Outcome(target, error=err, rate_limited=refused)
            pause(wait_for)
        except (MemosError, MemosApiKeyError) as err:
            return Outcome(target, error=err, rate_limited=refused)


def _finished(target: Search, future: Future[Outcome]) -> Outcome:
    if future.done():
        return future.result()
    return Outcome(
        target, error=MemosUnavailable("no answer within the recall budget", endpoint="/search/memory")
    )


def attributed_search(
    grants: RecallSources,
    memos: KnowledgeEngines,
    question: RecallQuestion,
    config: RecallConfig,
    *,
    reader: str,
    scope_grants: list[GrantRecord],
    governor: RateGovernor | None = None,
    files: RecallFiles | None = None,
    prints: PrintsCache | None = None,
) -> Attributed | None:
    """Search the scope as ``reader`` (one search per backend, or per KB with ``attribution="per_kb"``),
    re-check the scope once, attribute and merge; None when every search failed for a KB still in the
    scope (the caller answers 503). With a ``governor``, each backend gets no more searches than it allows
    now. With ``files``, each hit is matched against the searched KBs' files (``prints``: the
    environment's cache of their fingerprints)."""
    from memmy_kb.domain.recall.config import PER_KB

    query, limit, max_per_kb = question.query, question.limit, config.max_per_kb
    planned = plan(scope_grants, config.max_searches) if config.attribution == PER_KB else plan_by_backend(scope_grants)
    sent = Governed(planned, []) if governor is None else sendable(memos, governor, planned, reader)
    searches = sent.searches
    names: dict[str, tuple[dict[str, KnowledgeBaseRecord], dict[str, ProfileRecord]]] = {}
    loading = None if files is None else PrintsLoading(files, prints if prints is not None else PrintsCache())
    deadline = time.monotonic() + config.search_seconds

    def meanwhile() -> None:
        shared = [g.owner_id for g in scope_grants if g.role != "owner"]
        names["read"] = grants.batch_get_kbs_and_profiles((g.kb_id for g in scope_grants), shared)
        if loading is not None:
            loading.start((g.kb_id for g in scope_grants), names["read"][0])

    outcomes = run_searches(
        searches,
        governed(
            lambda s: memos.engine(s.backend).search_memory(
                reader, query, s.memos_ids, limit=_asked(s, limit, max_per_kb)
            ),
            governor,
            reader,
        ),
        meanwhile,
        config.search_seconds,
    )
    ready = {} if loading is None else loading.finish(deadline)
    _publish(outcomes, planned, [*searches, *sent.skipped])
    failures = [o for o in outcomes if o.error is not None]
    if len(failures) == len(outcomes) and not any(isinstance(o.error, MemosNotFound) for o in failures):
        return None  # nothing answered, and no failure a scope change could explain: no re-read
    # Once every search has answered: hits of KBs that left the scope go (``merge``); a failure of a
    # search one of whose KBs left is explained by it.
    now = compute_recall_scope(grants, question.user_id)
    answered = [o for o in outcomes if o.error is None]
    # A search the budget skipped counts as failed (the answer is partial) while its KBs are in scope.
    failed = sum(1 for o in failures if o.search.entries <= now) + sum(1 for s in sent.skipped if s.entries <= now)
    if failed and not answered:
        return None
    kbs, owners = names["read"]
    merged = merge_answered(
        [(o.hits, o.search.grants) for o in answered],
        in_scope=frozenset(entry.kb_id for entry in now),
        ready=ready,
        files=files,
        limit=limit,
        max_per_kb=max_per_kb,
        relevance=relevance,
        source=lambda g: _source(g, kbs, owners),
    )
    searched = frozenset(e for o in outcomes for e in o.search.entries)
    return Attributed(
        merged.hits,
        searches=len(searches),
        failed=failed,
        left=len(searched - now),
        saved=len(planned) - len(searches) - len(sent.skipped),
        attributed=merged.attributed,
        dropped_hits=merged.dropped,
        indexes=len(ready),
    )


def _publish(outcomes: list[Outcome], planned: list[Search], searches: list[Search]) -> None:
    """Per backend: the searches sent, the "rate limited" answers met, the searches the governor saved."""
    per_backend: dict[str, int] = {}
    refused_by: dict[str, int] = {}
    saved: dict[str, int] = {}
    for o in outcomes:
        per_backend[o.search.backend] = per_backend.get(o.search.backend, 0) + 1
        if o.rate_limited:
            refused_by[o.search.backend] = refused_by.get(o.search.backend, 0) + o.rate_limited
    for search in planned:
        saved[search.backend] = saved.get(search.backend, 0) + 1
    for search in searches:
        saved[search.backend] -= 1
    put_backend_metrics("MemosSearches", per_backend)
    if refused_by:
        put_backend_metrics("MemosRateLimited", refused_by)
    if any(saved.values()):
        put_backend_metrics("MemosSearchesSaved", {b: n for b, n in saved.items() if n})
