"""The MemOS rate governor across a fleet of recall environments, simulated: does ``max_qps`` hold?

1, 10, 50 and 200 environments, each running the real governor (``RateGovernor``, and with the fleet
budget its ``FleetBudget``) and recall's real plan within it (``governed``: ``governed_plan``, the
one short wait and ``regranted``) on a
simulated clock, recall against MemOS limiters, one per backend of ``max_qps`` 40 (a sliding second: the
41st search within one second is refused, 40309). The shared DynamoDB items are ``MemoryFleetItems``,
which accept a write only over the version it was read at, as DynamoDB's conditional writes do; each
environment keeps the item it last saw, so a write over a stale one fails and costs a write, as it would.

The load: one heavy user's script asks two recalls a second in every environment (2 to 400 a second);
ten light users ask one every two seconds each (5 a second), each in an environment drawn at random.
Every user's scope holds one KB on each backend, so a recall sends one search per backend (the default
plan): with one backend a recall is answered or not; with several (``SEVERAL_BACKENDS``: projects on
different plans, of ``max_qps`` 40, 20 and 10), a recall whose plan the budget cut to some of its
backends, or with a search refused twice, is answered partial (flagged), as recall answers it. A
search takes 80 ms, a refusal 20 ms; a refused search is tried once more after a pause of 50 to 250 ms
when the governor allows it; a DynamoDB write or read adds ``DYNAMODB_MS``. Compared: the
per-environment governor alone (each environment's bucket, its floor of one search per backend, halving
on refusals) and with the fleet budget.

Run: ``python -m bench.fleet_governor``.
"""

from __future__ import annotations

import heapq
import random
import statistics
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from memmy_kb.domain.engine import EngineBackend
from memmy_kb.domain.recall.fleet_budget import FleetBudget, MemoryFleetItems
from memmy_kb.domain.recall.governed import Governed, Search, governed_plan, regranted
from memmy_kb.domain.recall.rate_governor import RateGovernor
from memmy_kb.records import GrantRecord

MAX_QPS = 40
ENVIRONMENTS = (1, 10, 50, 200)
SEVERAL_BACKENDS = (40.0, 20.0, 10.0)  # projects on different plans: their max_qps
SEVERAL_ENVIRONMENTS = (50, 200)
SECONDS = 60.0
HEAVY_PER_ENV = 2.0
LIGHT_USERS = 10
LIGHT_RATE = 0.5
SEARCH_S, REFUSAL_S = 0.080, 0.020
PAUSE = (0.05, 0.25)
DYNAMODB_MS = 6.0  # a conditional PutItem or GetItem from Lambda in its region (single-digit ms)


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


class Limiter:
    """MemOS's rate for one backend: at most ``max_qps`` searches in any one second; past it, "rate limited"."""

    def __init__(self, max_qps: float = MAX_QPS) -> None:
        self.max_qps = max_qps
        self.accepted: deque[float] = deque()
        self.sent: list[float] = []
        self.refused = 0

    def search(self, at: float) -> bool:
        self.sent.append(at)
        while self.accepted and self.accepted[0] <= at - 1.0:
            self.accepted.popleft()
        if len(self.accepted) >= self.max_qps:
            self.refused += 1
            return False
        self.accepted.append(at)
        return True

    def busiest_second(self) -> int:
        window: deque[float] = deque()
        busiest = 0
        for at in sorted(self.sent):
            window.append(at)
            while window[0] <= at - 1.0:
                window.popleft()
            busiest = max(busiest, len(window))
        return busiest


class CountingItems(MemoryFleetItems):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def load(self, backend: str) -> Any:
        self.calls += 1
        return super().load(backend)

    def swap(self, backend: str, version: int | None, item: Any) -> Any:
        self.calls += 1
        return super().swap(backend, version, item)


class Engines:
    """What ``governed_plan`` reads of the MemOS pool: the backends and their ``max_qps``."""

    def __init__(self, rates: dict[str, float]) -> None:
        self._backends = [EngineBackend(backend, max_kbs=100, max_qps=qps) for backend, qps in rates.items()]

    def backends(self) -> list[EngineBackend]:
        return self._backends


def scope(user: str, backends: list[str]) -> list[Search]:
    """The user's plan: one KB on each backend, one search each."""
    at = datetime(2026, 12, 7, tzinfo=UTC)
    return [
        Search(
            (
                GrantRecord(
                    user_id=user,
                    kb_id=f"{user}-{b}",
                    role="owner",
                    recall=True,
                    memos_kb_id=f"m-{user}-{b}",
                    memos_backend=b,
                    owner_id=user,
                    granted_at=at,
                ),
            )
        )
        for b in backends
    ]


@dataclass
class Recall:
    kind: str
    user: str
    began: float
    wanted: int
    pending: int = 0
    answered: int = 0
    finished: float = 0.0


@dataclass
class Outcomes:
    answered: dict[str, int] = field(default_factory=lambda: {"heavy": 0, "light": 0})
    partial: dict[str, int] = field(default_factory=lambda: {"heavy": 0, "light": 0})
    unavailable: dict[str, int] = field(default_factory=lambda: {"heavy": 0, "light": 0})
    limited: dict[str, int] = field(default_factory=lambda: {"heavy": 0, "light": 0})
    latency: dict[str, list[float]] = field(default_factory=lambda: {"heavy": [], "light": []})

    def done(self, recall: Recall, limited: bool = False) -> None:
        """A recall whose searches have all ended: answered (every backend), partial (some), or none: 503,
        or 429 when the budget refused the user for their own use (``limited``)."""
        if limited:
            tally = self.limited
        elif recall.answered == recall.wanted:
            tally = self.answered
        elif recall.answered:
            tally = self.partial
        else:
            tally = self.unavailable
        tally[recall.kind] += 1
        self.latency[recall.kind].append(recall.finished - recall.began)


def _arrivals(rng: random.Random, environments: int) -> list[tuple[float, int, str, str]]:
    events = []
    for env in range(environments):
        t = rng.expovariate(HEAVY_PER_ENV)
        while t < SECONDS:
            events.append((t, env, "heavy", "heavy"))
            t += rng.expovariate(HEAVY_PER_ENV)
    for n in range(LIGHT_USERS):
        t = rng.expovariate(LIGHT_RATE)
        while t < SECONDS:
            events.append((t, rng.randrange(environments), "light", f"light{n}"))
            t += rng.expovariate(LIGHT_RATE)
    return sorted(events)


class Fleet:
    """The environments, MemOS's limiters and the event queue of one run."""

    def __init__(self, environments: int, fleet: bool, rates: tuple[float, ...], seed: int) -> None:
        self.rng = random.Random(seed)
        self.clock, self.items, self.outcomes = Clock(), CountingItems(), Outcomes()
        self.ids = [f"p{n + 1}" for n in range(len(rates))]
        self.engines = Engines(dict(zip(self.ids, rates, strict=True)))
        self.limiters = {backend: Limiter(qps) for backend, qps in zip(self.ids, rates, strict=True)}
        self.governors = [
            RateGovernor(self.clock, fleet=FleetBudget(self.items, self.clock) if fleet else None)
            for _ in range(environments)
        ]
        self.queue: list[tuple[float, int, str, tuple[Any, ...]]] = []
        self.seq = 0

    def push(self, at: float, step: str, args: tuple[Any, ...]) -> None:
        self.seq += 1
        heapq.heappush(self.queue, (at, self.seq, step, args))

    def start(self, env: int, recall: Recall) -> None:
        calls = self.items.calls
        plan = governed_plan(self.engines, self.governors[env], scope(recall.user, self.ids), recall.user)  # type: ignore[arg-type]
        sent_at = self.clock.now + (self.items.calls - calls) * DYNAMODB_MS / 1000
        wait = plan.short_wait()
        if wait is not None:  # ``sendable`` sleeps, then asks again for the skipped
            self.push(sent_at + wait, "regrant", (env, recall, plan))
            return
        self.send_plan(env, recall, plan, sent_at)

    def regrant(self, env: int, recall: Recall, plan: Governed) -> None:
        calls = self.items.calls
        plan = regranted(self.engines, self.governors[env], plan, recall.user)  # type: ignore[arg-type]
        self.send_plan(env, recall, plan, self.clock.now + (self.items.calls - calls) * DYNAMODB_MS / 1000)

    def send_plan(self, env: int, recall: Recall, plan: Governed, sent_at: float) -> None:
        recall.pending, recall.finished = len(plan.searches), sent_at
        if not plan.searches:  # ``sendable``: a 429 or 503 with Retry-After, nothing sent
            self.outcomes.done(recall, limited=plan.past_share)
        for search in plan.searches:
            self.send(env, recall, search.backend, sent_at, retry=False)

    def retry(self, env: int, recall: Recall, backend: str) -> None:
        calls = self.items.calls
        if not self.governors[env].retried(backend, recall.user):  # ``governed``: no retry, the search fails
            self.end(recall, self.clock.now, ok=False)
            return
        self.send(
            env, recall, backend, self.clock.now + (self.items.calls - calls) * DYNAMODB_MS / 1000, retry=True
        )

    def send(self, env: int, recall: Recall, backend: str, at: float, retry: bool) -> None:
        if self.limiters[backend].search(at):
            self.end(recall, at + SEARCH_S, ok=True)
            return
        self.clock.now = max(self.clock.now, at + REFUSAL_S)
        self.governors[env].refused(backend)
        if retry:
            self.end(recall, at + REFUSAL_S, ok=False)
        else:
            self.push(at + REFUSAL_S + self.rng.uniform(*PAUSE), "retry", (env, recall, backend))

    def end(self, recall: Recall, at: float, ok: bool) -> None:
        recall.pending -= 1
        recall.answered += ok
        recall.finished = max(recall.finished, at)
        if recall.pending == 0:
            self.outcomes.done(recall)

    def run(self) -> None:
        start = self.clock.now
        for t, env, kind, user in _arrivals(self.rng, len(self.governors)):
            self.push(start + t, "start", (env, Recall(kind, user, start + t, len(self.ids))))
        while self.queue:
            at, _, step, args = heapq.heappop(self.queue)
            self.clock.now = at
            getattr(self, step)(*args)


def simulate(
    environments: int, fleet: bool, seed: int = 7, rates: tuple[float, ...] = (MAX_QPS,)
) -> dict[str, Any]:
    """One run: every recall's outcome and latency, MemOS's view, the DynamoDB calls."""
    sim = Fleet(environments, fleet, rates, seed)
    sim.run()
    out = sim.outcomes
    recalls = sum(sum(tally.values()) for tally in (out.answered, out.partial, out.unavailable, out.limited))
    every = sorted(out.latency["heavy"] + out.latency["light"])
    light = sorted(out.latency["light"])
    sent = sum(len(limiter.sent) for limiter in sim.limiters.values())
    return {
        "environments": environments,
        "fleet": fleet,
        "rates": rates,
        "sent_per_second": sent / SECONDS,
        "busiest": [(limiter.busiest_second(), limiter.max_qps) for limiter in sim.limiters.values()],
        "refused": sum(limiter.refused for limiter in sim.limiters.values()),
        "recalls": recalls,
        "answered": sum(out.answered.values()),
        "partial": sum(out.partial.values()),
        "unavailable": sum(out.unavailable.values()),
        "limited": sum(out.limited.values()),
        "light_unavailable": out.unavailable["light"] + out.limited["light"],
        "light_answered": out.answered["light"],
        "light_partial": out.partial["light"],
        "light_recalls": len(light),
        "p50_ms": 1000 * statistics.median(every),
        "p95_ms": 1000 * every[int(0.95 * (len(every) - 1))],
        "light_p50_ms": 1000 * statistics.median(light),
        "dynamodb_per_recall": sim.items.calls / recalls,
    }


def run() -> list[dict[str, Any]]:
    results = []
    cases = [(n, (float(MAX_QPS),)) for n in ENVIRONMENTS] + [
        (n, SEVERAL_BACKENDS) for n in SEVERAL_ENVIRONMENTS
    ]
    for environments, rates in cases:
        for fleet in (False, True):
            result = simulate(environments, fleet, rates=rates)
            print(what(result), "|", figure(result), flush=True)
            results.append(result)
    return results


def what(result: dict[str, Any]) -> str:
    mode = "fleet budget" if result["fleet"] else "per-environment governor only"
    wanted = HEAVY_PER_ENV * result["environments"] + LIGHT_USERS * LIGHT_RATE
    rates = result["rates"]
    where = (
        "one backend"
        if len(rates) == 1
        else f"{len(rates)} backends of max_qps {'/'.join(f'{q:g}' for q in rates)}"
    )
    return f"{result['environments']} environments ({wanted:g} recalls/s wanted, {where}), {mode}"


def figure(r: dict[str, Any]) -> str:
    busiest = ", ".join(f"{n} vs limit {q:g}" for n, q in r["busiest"])
    return (
        f"sent {r['sent_per_second']:.1f}/s (busiest second {busiest}), "
        f"{r['refused']:,} refused; {r['answered']:,} of {r['recalls']:,} answered, {r['partial']:,} partial, "
        f"{r['limited']:,} 429, {r['unavailable']:,} 503; light users {r['light_answered']} of {r['light_recalls']} answered, "
        f"{r['light_partial']} partial (p50 {r['light_p50_ms']:.0f} ms); p50 {r['p50_ms']:.0f} ms, "
        f"p95 {r['p95_ms']:.0f} ms; DynamoDB {r['dynamodb_per_recall']:.2f} calls per recall"
    )


def rows(results: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return [("MemOS budget across environments (simulated)", what(r), figure(r)) for r in results]


if __name__ == "__main__":
    run()
