"""Abuse limits of sharing (SECURITY.md): identifier lookups per owner, blocks per user (a sibling
window with the same limit) and new members per owner per day (the capacity of one KB:
``memmy_kb.domain.knowledge_bases.capacity``).

Share attempts are counted in a sliding window, estimated from two fixed windows as
``previous * (1 - elapsed fraction) + current`` (each window also holds at most ``limit`` on its own): one
conditional UpdateItem per attempt, no read. New members per UTC day are a counter the share transaction
itself bumps under a condition, so it costs no extra call either.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from memmy_kb.domain.ports.activity import RateCounters
from memmy_kb.errors import TooManyRequests
from memmy_kb.records import CountCap, WindowCount


@dataclass(frozen=True)
class ShareLimits:
    """The limits of ``memmy_kb.settings.Settings`` (share_attempt_*, new_members_per_day)."""

    attempts: int = 100
    window_seconds: int = 3600
    members_per_day: int = 100


def retry_after(previous: int, current: int, limit: int, elapsed: float) -> float:
    """Windows (a fraction: 1.0 is one window) until one more attempt fits: ``elapsed`` is the fraction of the
    current window gone, ``current`` counts the refused attempt if it was counted."""
    if current + 1 <= limit and previous > 0:
        fits_at = 1 - (limit - 1 - current) / previous  # fraction of this window at which it fits
        if fits_at <= 1:
            return max(fits_at - elapsed, 0.0)
    later = max(1 - (limit - 1) / current, 0.0) if current else 0.0
    return (1 - elapsed) + later


def count_share_attempt(counters: RateCounters, owner_id: str, limits: ShareLimits, now: datetime) -> None:
    """Count one identifier lookup by ``owner_id``; TooManyRequests (429) past the limit."""
    _count_attempt(counters, attempt_counter(owner_id, limits, now), limits, now, "share")


def count_block_attempt(counters: RateCounters, user_id: str, limits: ShareLimits, now: datetime) -> None:
    """Count one ``POST /me/blocked`` by ``user_id`` in a sibling of the share-attempt window (same limit,
    its own counter); TooManyRequests (429) past the limit. Unblocking frees a place in the block list,
    never in this window, so blocking and unblocking cannot enumerate ids."""
    name = f"block#{user_id}"
    _count_attempt(counters, (name, int(now.timestamp() // limits.window_seconds)), limits, now, "block")


def count_attempt(
    counters: RateCounters, user_id: str, limits: ShareLimits, now: datetime, kind: str
) -> None:
    """Count one attempt of ``kind`` (``share``, ``invite``) by ``user_id`` in its own window; TooManyRequests
    (429) past the limit."""
    _count_attempt(counters, attempt_counter(user_id, limits, now, kind), limits, now, kind)


def _count_attempt(
    counters: RateCounters, counter: tuple[str, int], limits: ShareLimits, now: datetime, what: str
) -> None:
    seconds = limits.window_seconds
    name, window = counter
    elapsed = _elapsed(window, limits, now)
    counts = counters.count_in_window(name, window, cap=limits.attempts, expires_at=_expires_at(window, limits))
    if counts is not None:
        current, previous = counts
        if previous * (1 - elapsed) + current <= limits.attempts:
            return
    else:
        current, previous = limits.attempts, 0
    wait = retry_after(previous, current, limits.attempts, elapsed) * seconds
    raise TooManyRequests(
        f"Too many {what} attempts: at most {limits.attempts} every {_duration(seconds)}. Try again later.",
        retry_after=max(1, math.ceil(wait)),
    )


def attempt_counter(owner_id: str, limits: ShareLimits, now: datetime, kind: str = "share") -> tuple[str, int]:
    """The counter of ``owner_id``'s attempts of ``kind`` (share attempts; a team's invitations,
    ``invite``) and ``now``'s window in it, to read before the attempt."""
    return f"{kind}#{owner_id}", int(now.timestamp() // limits.window_seconds)


def attempt_slot(
    owner_id: str, limits: ShareLimits, now: datetime, counts: tuple[int, int], kind: str = "share"
) -> WindowCount | None:
    """One more attempt, for the share's transaction to count, given the window counts read (this
    window's, the previous one's); None when it would go past the limit (``count_share_attempt`` then
    counts it and answers 429).

    The sliding estimate after it, ``previous * (1 - elapsed) + current + 1``, stays within the limit
    exactly while ``current < room``: the transaction's condition, which holds the limit against
    concurrent attempts without a second read.
    """
    name, window = attempt_counter(owner_id, limits, now, kind)
    elapsed = _elapsed(window, limits, now)
    current, previous = counts
    room = min(limits.attempts, math.floor(limits.attempts - previous * (1 - elapsed)))
    if current >= room:
        return None
    return WindowCount(
        name=name, window=window, room=room, previous=previous, expires_at=_expires_at(window, limits)
    )


def _elapsed(window: int, limits: ShareLimits, now: datetime) -> float:
    """The fraction of ``window`` gone at ``now``."""
    return (now.timestamp() - window * limits.window_seconds) / limits.window_seconds


def _expires_at(window: int, limits: ShareLimits) -> int:
    """When a counter last counted in ``window`` may go: once ``window`` is no longer even the previous one."""
    return (window + 2) * limits.window_seconds


def members_cap(owner_id: str, limits: ShareLimits, now: datetime) -> CountCap:
    """The counter of new members ``owner_id`` adds on ``now``'s UTC day."""
    day = now.date().isoformat()
    return CountCap(
        name=f"members#{owner_id}#{day}", limit=limits.members_per_day, expires_at=int(now.timestamp()) + 2 * 86400
    )


def members_refused(limits: ShareLimits, now: datetime) -> TooManyRequests:
    midnight = datetime.combine(now.date() + timedelta(days=1), datetime.min.time(), tzinfo=now.tzinfo)
    return TooManyRequests(
        f"You can add at most {limits.members_per_day} new members a day. Try again tomorrow.",
        retry_after=max(1, math.ceil((midnight - now).total_seconds())),
    )


def _duration(seconds: int) -> str:
    if seconds % 3600 == 0:
        hours = seconds // 3600
        return "hour" if hours == 1 else f"{hours} hours"
    if seconds % 60 == 0:
        return f"{seconds // 60} minutes"
    return f"{seconds} seconds"
