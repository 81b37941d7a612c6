"""Attributed recall: every excerpt says which KB it comes from (docs/architecture.md, "Recall").

A MemOS hit names neither its KB nor its file, and a search over several KBs cannot be split afterwards,
so the only way to know a hit's KB is to search that KB alone. Recall therefore plans one search per KB
of the scope, at most ``max_searches`` of them: past that, the first KBs (shares first: who wrote a text
matters most when it is someone else's) are searched alone and the rest in groups, one per MemOS backend
(a search goes to one project with its key), whose excerpts name every KB of the group.

The searches run at once on threads (each KB's backend's client, whose connection pool is sized for them)
within the one recall budget; a search MemOS answers with "rate limited" is tried once more, after a
jittered pause, when the budget still allows it; meanwhile the main thread reads the KBs' names and the sharers' profiles in
one batched read. Once every search has answered (or the budget is spent) the scope is read again, once:
a search whose KB (or any KB of its group) left the scope is dropped whole, whatever it answered. The
excerpts left are merged by score, at most ``max_per_kb`` per KB (per KB of a group) and ``limit`` in all.
Some searches failing and others answering gives the answered excerpts, flagged ``partial``; no search
answering for a KB still in scope is the 503 of a failed recall.

Near MemOS's rate limit the rate governor (``memmy_kb.domain.rate_governor``) allows a backend fewer
searches than the plan has for it; ``cap_plan`` then keeps the first of them alone and merges the rest
into one group, down to one search of all the backend's KBs (``degraded``: the recall's excerpts name
groups where they would have named KBs; ``saved``: the searches it did not send).

The scope given may be the request's narrowed one (``narrow_recall_grants``): the re-check asks only that
each search's KBs are still in the caller's scope, so it holds for a narrowed scope as it is.
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

from memmy_kb.domain.access import ScopeEntry, compute_recall_scope
from memmy_kb.domain.context_block import SourceKb
from memmy_kb.domain.engine import (
    MemosApiKeyError,
    MemosError,
    MemosNotFound,
    MemosRateLimited,
    MemosUnavailable,
    SearchHit,
    backend_of,
)
from memmy_kb.observability import put_backend_metrics

if TYPE_CHECKING:
    from memmy_kb.domain.ports import KnowledgeEngines, RecallSources
    from memmy_kb.domain.rate_governor import RateGovernor
    from memmy_kb.domain.recall_config import RecallConfig, RecallQuestion
    from memmy_kb.records import GrantRecord, KnowledgeBaseRecord, ProfileRecord

_SearchFailure = MemosError | MemosApiKeyError


@dataclass(frozen=True, eq=False)
class Search:
    """One MemOS search of the plan: one KB, or a group of KBs searched together."""

    grants: tuple[GrantRecord, ...]

    @property
    def entries(self) -> frozenset[ScopeEntry]:
        return frozenset(ScopeEntry(g.kb_id, g.memos_kb_id) for g in self.grants)

    @property
    def memos_ids(self) -> list[str]:
        return sorted({g.memos_kb_id for g in self.grants})

    @property
    def backend(self) -> str:
        """The MemOS backend of the search (``plan`` never groups KBs of two backends)."""
        return backend_of(self.grants[0].memos_backend)


@dataclass(frozen=True, eq=False)
class Outcome:
    """What one search gave: its hits, or the error it failed with."""

    search: Search
    hits: tuple[SearchHit, ...] = ()
    error: _SearchFailure | None = None
    rate_limited: int = 0  # "rate limited" answers it met (the first one is retried)


@dataclass(frozen=True)
class Attributed:
    """The merged hits with their sources, and what happened to the searches."""

    hits: list[tuple[SearchHit, tuple[SourceKb, ...]]]
    searches: int
    failed: int
    dropped: int
    saved: int = 0  # searches the rate governor took off the plan (0: not degraded)


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


def cap_plan(searches: list[Search], allowed: dict[str, int]) -> list[Search]:
    """``searches`` with at most ``allowed[backend]`` searches per backend: the first of a backend's
    searches stay as they are, the rest merge into one group (all of them when one search is allowed)."""
    by_backend: dict[str, list[Search]] = {}
    for search in searches:
        by_backend.setdefault(search.backend, []).append(search)
    capped: list[Search] = []
    for backend, planned in by_backend.items():
        keep = max(1, allowed.get(backend, len(planned)))
        if len(planned) <= keep:
            capped += planned
            continue
        merged = tuple(g for search in planned[keep - 1 :] for g in search.grants)
        capped += [*planned[: keep - 1], Search(merged)]
    return capped


def governed_plan(
    memos: KnowledgeEngines, governor: RateGovernor, searches: list[Search]
) -> list[Search]:
    """The plan within what the governor allows each backend now (its ``max_qps`` from the secret)."""
    wanted: dict[str, int] = {}
    for search in searches:
        wanted[search.backend] = wanted.get(search.backend, 0) + 1
    try:
        limits = {b.id: b.max_qps for b in memos.backends()}
    except MemosApiKeyError:
        # An unusable secret: the searches meet the same error and fail closed (503) as without a governor.
        limits = {}
    return cap_plan(searches, governor.allowances(wanted, limits))


def relevance(hit: SearchHit) -> float:
    """A hit's score as the merge ranks it: without one, or with one that is no finite number (a NaN
    would scramble the whole sort, an infinity outrank every real score), it ranks after every scored hit."""
    score = hit.score
    return score if score is not None and math.isfinite(score) else -1.0


def _cap(search: Search, limit: int, max_per_kb: int) -> int:
    """At most ``max_per_kb`` excerpts per KB searched (a group's KBs together), never over ``limit``."""
    return min(limit, max_per_kb * len(search.grants))


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


def _governed(
    search: Callable[[Search], list[SearchHit]], governor: RateGovernor | None
) -> Callable[[Search], list[SearchHit]]:
    """``search``, telling the governor of every retry (a first attempt's token was taken with its
    allowance, ``governed_plan``) and of every "rate limited" answer."""
    if governor is None:
        return search
    tried: set[Search] = set()  # each search runs on a thread of its own: no two threads add one key

    def attempt(target: Search) -> list[SearchHit]:
        if target in tried:
            governor.retried(target.backend)
        tried.add(target)
        try:
            return search(target)
        except MemosRateLimited:
            governor.refused(target.backend)
            raise

    return attempt


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
) -> Attributed | None:
    """Search each KB of the scope (or its group) as ``reader``, re-check the scope once, merge; None when
    every search failed for a KB still in the scope (the caller answers 503). With a ``governor``, each
    backend gets no more searches than it allows now."""
    query, limit, max_per_kb = question.query, question.limit, config.max_per_kb
    planned = plan(scope_grants, config.max_searches)
    searches = planned if governor is None else governed_plan(memos, governor, planned)
    names: dict[str, tuple[dict[str, KnowledgeBaseRecord], dict[str, ProfileRecord]]] = {}

    def read_names() -> None:
        shared = [g.owner_id for g in scope_grants if g.role != "owner"]
        names["read"] = grants.batch_get_kbs_and_profiles((g.kb_id for g in scope_grants), shared)

    outcomes = run_searches(
        searches,
        _governed(
            lambda s: memos.engine(s.backend).search_memory(
                reader, query, s.memos_ids, limit=_cap(s, limit, max_per_kb)
            ),
            governor,
        ),
        read_names,
        config.search_seconds,
    )
    _publish(outcomes, planned, searches)
    failures = [o for o in outcomes if o.error is not None]
    if len(failures) == len(outcomes) and not any(isinstance(o.error, MemosNotFound) for o in failures):
        return None  # nothing answered, and no failure a scope change could explain: no re-read
    # Once every search has answered: a search whose KB (or one of its group) left the scope is dropped.
    now = compute_recall_scope(grants, question.user_id)
    kept = [o for o in outcomes if o.search.entries <= now]
    answered = [o for o in kept if o.error is None]
    failed = len(kept) - len(answered)
    if failed and not answered:
        return None
    kbs, owners = names["read"]
    ranked = [
        (hit, index, rank, o.search) for index, o in enumerate(answered) for rank, hit in enumerate(o.hits)
    ]
    ranked.sort(key=lambda r: (-relevance(r[0]), r[1], r[2]))
    taken = [0] * len(answered)
    merged: list[tuple[SearchHit, tuple[SourceKb, ...]]] = []
    for hit, index, _, search in ranked:
        if len(merged) >= limit:
            break
        if taken[index] >= _cap(search, limit, max_per_kb):
            continue
        taken[index] += 1
        merged.append((hit, tuple(_source(g, kbs, owners) for g in search.grants)))
    return Attributed(
        merged,
        searches=len(searches),
        failed=failed,
        dropped=len(outcomes) - len(kept),
        saved=len(planned) - len(searches),
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
