"""Each MemOS backend's ``max_qps`` for the whole fleet of recall environments, shared fairly among users.

One shared token bucket per backend, an item of the table (``FleetItems``: read once, then written only
with a condition on its ``version``, as DynamoDB's conditional writes allow). It holds at most
``FLEET_BURST`` x ``max_qps`` tokens and fills at ``FLEET_FILL`` x ``max_qps`` a second (so no second
sees more than ``max_qps`` from the whole fleet), times its ``share`` (halved by
MemOS's "rate limited" answers, ``refused``; an eighth back every quiet second). An environment takes
tokens in blocks (``take``): what its recall needs, up to ``BLOCK`` when it recalls often and the bucket
is at least half full, one write for several searches; the tokens it took and did not spend lapse after ``HOLD_SECONDS``, so an
environment that goes quiet holds nothing, and no second sees more searches than the bucket gave.
Computed on the writer's clock: the item keeps the time it was filled at, each write moves it on.

Fair under pressure: the item counts the tokens each user (a short hash of the id) took in the current
window of ``WINDOW_SECONDS`` and the one before. A user who took an equal share of the bucket's fill
over them (divided among the users who took any), or more than an equal share of what it gave in them,
must leave ``RESERVE`` of the bucket (``reserve``); the others may empty it, so a light user's recalls find tokens while a heavy user's
script keeps it low. A refusal tells when the user's next token is due; recall waits for it, once, when
that is within ``SHORT_WAIT``.

When the bucket holds no token for the caller, ``take`` grants 0 with the seconds until one is due, and
the environment asks the table for that user again only then; each refusal doubles the wait and each grant
halves it (up to ``MAX_WAIT``), so however many environments a heavy user's script reaches, their asks settle near
what the bucket fills instead of a write per recall.
"""

from __future__ import annotations

import hashlib
import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

FLEET_BURST = 0.2
FLEET_FILL = 0.8
BLOCK = 4
HOLD_SECONDS = 0.5
WINDOW_SECONDS = 2.0
RESERVE = 0.25
MIN_SHARE = 1 / 16
RECOVERY_SECONDS = 1.0
RECOVERY_STEP = 0.125
SHORT_WAIT = 0.15  # seconds: the longest a recall waits, once, for a token due (``governed``)
MAX_WAIT = 4.0  # seconds: the longest an environment waits for a user before asking the table again
ATTEMPTS = 3  # conditional writes per take before the environment gives up for this recall
CONTENDED_WAIT = 0.05  # seconds to wait after ATTEMPTS writes all met newer items


class FleetItems(Protocol):
    """The shared items, one per backend: ``swap`` writes ``item`` when the stored one is at ``version``
    (None: there is none yet) and returns None; otherwise it writes nothing and returns the stored item
    (empty when there is none)."""

    def load(self, backend: str) -> Mapping[str, Any] | None: ...

    def swap(self, backend: str, version: int | None, item: Mapping[str, Any]) -> Mapping[str, Any] | None: ...


class MemoryFleetItems:
    """``FleetItems`` in this process (thread-safe): without a table, and the simulation's stand-in."""

    def __init__(self) -> None:
        self._items: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self.writes = 0  # conditional writes asked for, written or not (each costs a DynamoDB write)

    def load(self, backend: str) -> Mapping[str, Any] | None:
        with self._lock:
            item = self._items.get(backend)
            return None if item is None else dict(item)

    def swap(self, backend: str, version: int | None, item: Mapping[str, Any]) -> Mapping[str, Any] | None:
        with self._lock:
            self.writes += 1
            stored = self._items.get(backend)
            if (None if stored is None else stored["version"]) != version:
                return {} if stored is None else dict(stored)
            self._items[backend] = {**item, "users": dict(item["users"]), "before": dict(item["before"])}
            return None


@dataclass(frozen=True)
class Bucket:
    """The shared item's fields: tokens at ``at``; the share of ``max_qps`` and when it last changed; the
    tokens each user took in ``window``."""

    version: int
    tokens: float
    at: float
    share: float = 1.0
    share_at: float = 0.0
    window: int = 0
    users: Mapping[str, int] = field(default_factory=dict)
    before: Mapping[str, int] = field(default_factory=dict)  # the counts of the window before

    @classmethod
    def parse(cls, item: Mapping[str, Any]) -> Bucket:
        def counts(name: str) -> dict[str, int]:
            return {str(k): int(v) for k, v in dict(item.get(name) or {}).items()}

        return cls(
            int(item["version"]),
            float(item["tokens"]),
            float(item["at"]),
            float(item.get("share", 1.0)),
            float(item.get("share_at", 0.0)),
            int(item.get("window", 0)),
            counts("users"),
            counts("before"),
        )

    def item(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "tokens": self.tokens,
            "at": self.at,
            "share": self.share,
            "share_at": self.share_at,
            "window": self.window,
            "users": dict(self.users),
            "before": dict(self.before),
        }

    def filled(self, now: float, max_qps: float) -> Bucket:
        """The bucket at ``now``: the share recovered, the tokens filled, a new window's counts cleared."""
        share, share_at = self.share, self.share_at
        if share < 1.0 and now - share_at >= RECOVERY_SECONDS:
            share = min(1.0, share + math.floor((now - share_at) / RECOVERY_SECONDS) * RECOVERY_STEP)
            share_at = now
        rate = FLEET_FILL * max_qps * share
        tokens = min(capacity(max_qps, share), self.tokens + max(0.0, now - self.at) * rate)
        window = int(now // WINDOW_SECONDS)
        users, before = self.users, self.before
        if window != self.window:
            users, before = {}, (self.users if window == self.window + 1 else {})
        return replace(
            self,
            tokens=tokens,
            at=max(now, self.at),
            share=share,
            share_at=share_at,
            window=window,
            users=users,
            before=before,
        )


def capacity(max_qps: float, share: float = 1.0) -> float:
    return max(1.0, FLEET_BURST * max_qps * share)


def reserve(max_qps: float, share: float = 1.0) -> float:
    """What a user past their fair share must leave in the bucket: ``RESERVE`` of it, and at least one
    whole search when the bucket holds two or more (a small backend's bucket, of ``max_qps`` 10, holds 2)."""
    room = capacity(max_qps, share)
    return max(RESERVE * room, min(1.0, room - 1.0))


def user_key(user: str) -> str:
    """The item's key for a user: a short hash, no id stored."""
    return hashlib.sha256(user.encode()).hexdigest()[:10]


@dataclass(frozen=True)
class Grant:
    """Searches allowed now (``count``), and when none were (or fewer than asked), the seconds until one is due
    and whether the user's own use is why (``past_share``: past their fair share, or most of what the
    bucket gave lately was theirs), which recall answers 429 rather than 503."""

    count: int
    retry_after: float = 0.0
    past_share: bool = False


def decide(bucket: Bucket, now: float, max_qps: float, user: str, need: int, block: int) -> tuple[Bucket, Grant]:
    """The bucket after ``user`` takes what it may of ``max(need, block)`` tokens, and what it got."""
    full = bucket.filled(now, max_qps)
    rate = FLEET_FILL * max_qps * full.share
    taken = full.users.get(user, 0) + full.before.get(user, 0)
    given = sum(full.users.values()) + sum(full.before.values())
    active = len(set(full.users) | set(full.before) | {user})
    # Past an equal share of the fill over the two windows so far, or of what the bucket gave in them
    # while others took some too (a script that has just started next to a light user).
    fair = rate * (WINDOW_SECONDS + now % WINDOW_SECONDS) / active
    past = taken >= fair or (active > 1 and taken * active > given)
    keep = reserve(max_qps, full.share) if past else 0.0
    # A block only while the bucket is at least half full: under pressure each take is what it needs, so
    # no token lapses unspent in an environment and each user is charged for their own searches.
    plenty = full.tokens >= capacity(max_qps, full.share) / 2
    got = min(max(need, block) if plenty else need, math.floor(full.tokens - keep))
    if got < 1:
        own = past or 2 * taken > given > 0  # (alone, a user who took any is why)
        return full, Grant(0, max((keep + 1 - full.tokens) / rate, 0.0), past_share=own)
    users = {**full.users, user: full.users.get(user, 0) + got}
    return replace(full, version=full.version + 1, tokens=full.tokens - got, users=users), Grant(got)


@dataclass
class _Local:
    held: int = 0
    until: float = 0.0
    # per user: the bucket had none for them until then, and whether their own use was why (``past_share``)
    empty_until: dict[str, tuple[float, bool]] = field(default_factory=dict)
    streak: dict[str, int] = field(default_factory=dict)  # per user: refusals less grants, in this environment
    seen: Bucket | None = None
    wanted: list[float] = field(default_factory=list)  # when this environment's recent searches were wanted


class FleetBudget:
    """One environment's side of the shared buckets (thread-safe; one per environment)."""

    def __init__(self, items: FleetItems, clock: Callable[[], float] = time.time) -> None:
        self._items = items
        self._clock = clock
        self._local: dict[str, _Local] = {}
        self._lock = threading.Lock()

    def take(self, backend: str, need: int, user: str, max_qps: float) -> Grant:
        """Up to ``need`` searches to ``backend`` for ``user``: the tokens this environment holds, then a
        block from the shared bucket (at most ``ATTEMPTS`` conditional writes; none while it is spent)."""
        with self._lock:
            now = self._clock()
            local = self._local.setdefault(backend, _Local())
            if local.until <= now:
                local.held = 0
            local.wanted = [t for t in local.wanted if t > now - HOLD_SECONDS] + [now] * need
            spent = min(need, local.held)
            local.held -= spent
            if spent == need:
                return Grant(spent)
            key = user_key(user)
            local.empty_until = {u: until for u, until in local.empty_until.items() if until[0] > now}
            if key in local.empty_until:
                until, own = local.empty_until[key]
                return Grant(spent, until - now, own)
            block = min(BLOCK, len(local.wanted))
            grant = self._from_shared(backend, local, now, need - spent, key, max_qps, block)
            return Grant(spent + grant.count, grant.retry_after, grant.past_share)

    def _from_shared(
        self, backend: str, local: _Local, now: float, need: int, user: str, max_qps: float, block: int
    ) -> Grant:
        stored = local.seen
        if stored is None:
            loaded = self._items.load(backend)
            stored = Bucket.parse(loaded) if loaded else None
        for _ in range(ATTEMPTS):
            base = stored or Bucket(0, capacity(max_qps), now, share_at=now)
            after, grant = decide(base, now, max_qps, user, need, block)
            if grant.count == 0:
                # Each refusal doubles the wait (at most MAX_WAIT), each grant halves it: environments that keep asking
                # for a user the bucket refuses ask less, until their asks are about what it fills.
                # A first refusal's token due within SHORT_WAIT is asked for when due (recall waits for it).
                streak = local.streak[user] = local.streak.get(user, 0) + 1
                wait = min(MAX_WAIT, max(grant.retry_after, 1 / (FLEET_FILL * max_qps)) * 2 ** (streak - 1))
                if streak == 1 and grant.retry_after <= SHORT_WAIT:
                    wait = grant.retry_after
                local.seen, local.empty_until[user] = stored, (now + wait, grant.past_share)
                return Grant(0, wait, grant.past_share)
            current = self._items.swap(backend, stored.version if stored else None, after.item())
            # (a failed swap returns the stored item: the next attempt decides on it, no read)
            if current is None:
                if local.streak.get(user, 0) > 1:
                    local.streak[user] -= 1  # a grant shortens the next wait by one step, not to nothing
                else:
                    local.streak.pop(user, None)
                local.seen = after
                local.held, local.until = grant.count - min(need, grant.count), now + HOLD_SECONDS
                return Grant(min(need, grant.count))
            stored = Bucket.parse(current) if current else None
        local.seen = stored
        return Grant(0, CONTENDED_WAIT)

    def refused(self, backend: str, max_qps: float) -> None:
        """MemOS answered "rate limited": the fleet's share of ``max_qps`` halves (once a second at most,
        however many environments saw it), and this environment's tokens go."""
        with self._lock:
            now = self._clock()
            local = self._local.setdefault(backend, _Local())
            local.held = 0
            stored = local.seen
            for _ in range(ATTEMPTS):
                if stored is None:
                    loaded = self._items.load(backend)
                    stored = Bucket.parse(loaded) if loaded else Bucket(0, capacity(max_qps), now, share_at=now)
                full = stored.filled(now, max_qps)
                if now - stored.share_at < RECOVERY_SECONDS and stored.share < 1.0:
                    local.seen = stored
                    return  # halved within the last second already
                share = max(MIN_SHARE, full.share / 2)
                after = replace(
                    full,
                    version=full.version + 1,
                    share=share,
                    share_at=now,
                    tokens=min(full.tokens, capacity(max_qps, share)),
                )
                current = self._items.swap(backend, stored.version or None, after.item())
                if current is None:
                    local.seen = after
                    return
                stored = Bucket.parse(current) if current else None

    def share(self, backend: str) -> float:
        """The fleet's share of the backend's rate as this environment last saw it (1.0: none refused)."""
        with self._lock:
            local = self._local.get(backend)
            return 1.0 if local is None or local.seen is None else local.seen.share
