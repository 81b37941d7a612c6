"""Recall's searches (``Search``) within the rate governor (``memmy_kb.domain.recall.rate_governor``): the plan
it allows each backend now (``cap_plan`` groups the rest of a backend's KBs), the backends it allows
none (skipped: the recall is partial, or unavailable with ``Retry-After`` when none is left), and every
retry and "rate limited" answer told to it.

A backend's fleet budget refuses a search for a moment when its bucket is empty (a small backend's
bucket holds two searches, a big one's eight): when a backend skipped is due again within
``SHORT_WAIT``, the recall waits until then, once, and asks again for the skipped (``regranted``), so a light
user whose recall meets the bucket just after someone else's is answered whole, a little later, rather
than partial."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memmy_kb.domain.access import ScopeEntry
from memmy_kb.domain.engine import MemosApiKeyError, MemosRateLimited, MemosUnavailable, SearchHit, backend_of
from memmy_kb.domain.recall.fleet_budget import SHORT_WAIT
from memmy_kb.errors import RecallUnavailable, TooManyRequests

if TYPE_CHECKING:
    from memmy_kb.domain.ports.engines import KnowledgeEngines
    from memmy_kb.domain.recall.rate_governor import RateGovernor
    from memmy_kb.records import GrantRecord


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


@dataclass(frozen=True)
class Governed:
    """The searches to send, those of backends granted none, and the seconds until one is due for them."""

    searches: list[Search]
    skipped: list[Search]
    retry_after: float = 0.0
    past_share: bool = False  # every backend skipped refused the user for their own use (``Grant.past_share``)

    def retry_after_seconds(self) -> int:
        return max(1, math.ceil(self.retry_after))

    def short_wait(self) -> float | None:
        """The seconds to wait before asking again for the skipped backends, when one of them is due
        within ``SHORT_WAIT``; None when nothing was skipped or the wait would be too long."""
        if not self.skipped or self.retry_after > SHORT_WAIT:
            return None
        return self.retry_after


def governed_plan(memos: KnowledgeEngines, governor: RateGovernor, searches: list[Search], user: str = "") -> Governed:
    """The plan within what the governor allows each backend now (its ``max_qps`` from the secret)."""
    wanted: dict[str, int] = {}
    for search in searches:
        wanted[search.backend] = wanted.get(search.backend, 0) + 1
    try:
        limits = {b.id: b.max_qps for b in memos.backends()}
    except MemosApiKeyError:
        # An unusable secret: the searches meet the same error and fail closed (503) as without a governor.
        limits = {}
    grants = governor.grants(wanted, limits, user)
    capped = cap_plan(searches, {backend: grant.count for backend, grant in grants.items()})
    none = {backend for backend, grant in grants.items() if grant.count == 0}
    waits = [grants[backend].retry_after for backend in none]
    return Governed(
        [s for s in capped if s.backend not in none],
        [s for s in capped if s.backend in none],
        min(waits, default=0.0),
        bool(none) and all(grants[backend].past_share for backend in none),
    )


def regranted(memos: KnowledgeEngines, governor: RateGovernor, sent: Governed, user: str) -> Governed:
    """``sent`` with its skipped searches asked for again (after ``short_wait``)."""
    again = governed_plan(memos, governor, sent.skipped, user)
    return Governed([*sent.searches, *again.searches], again.skipped, again.retry_after, again.past_share)


def sendable(
    memos: KnowledgeEngines,
    governor: RateGovernor,
    searches: list[Search],
    user: str,
    sleep: Callable[[float], None] = time.sleep,
) -> Governed:
    """``governed_plan``, once more for the skipped backends after a ``short_wait``. When no backend was
    granted a search (the fleet's MemOS budget spent for the whole scope: nothing sent, nothing refused),
    raises 429 ``recall_rate_limited`` when the user's own use is why (``past_share``), otherwise
    ``RecallUnavailable`` (503); both with ``Retry-After``."""
    sent = governed_plan(memos, governor, searches, user)
    wait = sent.short_wait()
    if wait is not None:
        sleep(wait)
        sent = regranted(memos, governor, sent, user)
    if not sent.searches and sent.past_share:
        seconds = sent.retry_after_seconds()
        raise TooManyRequests(
            "This account's recalls are taking more than their share of the search service just now."
            f" Try again in {seconds} s.",
            retry_after=seconds,
            code="recall_rate_limited",
        )
    if not sent.searches:
        raise RecallUnavailable(
            "Recall is busy right now; try again shortly.", retry_after=sent.retry_after_seconds()
        )
    return sent


def governed(
    search: Callable[[Search], list[SearchHit]], governor: RateGovernor | None, user: str = ""
) -> Callable[[Search], list[SearchHit]]:
    """``search``, telling the governor of every retry (a first attempt's token was taken with its
    allowance, ``governed_plan``) and of every "rate limited" answer; a retry the governor does not
    allow fails without reaching MemOS (not counted as a second refusal)."""
    if governor is None:
        return search
    tried: set[Search] = set()  # each search runs on a thread of its own: no two threads add one key

    def attempt(target: Search) -> list[SearchHit]:
        if target in tried and not governor.retried(target.backend, user):
            raise MemosUnavailable("the MemOS budget granted no retry", endpoint="/search/memory")
        tried.add(target)
        try:
            return search(target)
        except MemosRateLimited:
            governor.refused(target.backend)
            raise

    return attempt
