"""The MemOS rate governor across a fleet of recall environments, simulated: does ``max_qps`` hold?

1, 10, 50 and 200 environments, each running the real governor (``RateGovernor``, and with the fleet
budget its ``FleetBudget``) on a simulated clock, recall against one MemOS limiter of ``max_qps`` 40 (a
sliding second: the 41st search within one second is refused, 40309). The shared DynamoDB item is
``MemoryFleetItems``, which accepts a write only over the version it was read at, as DynamoDB's
conditional writes do; each environment keeps the item it last saw, so a write over a stale one fails
and costs a write, as it would.

The load: one heavy user's script asks two recalls a second in every environment (2 to 400 a second);
ten light users ask one every two seconds each (5 a second), each in an environment drawn at random.
A recall searches one backend once (the default plan). A search takes 80 ms, a refusal 20 ms; a refused
search is tried once more after a pause of 50 to 250 ms when the governor allows it; a DynamoDB write
or read adds ``DYNAMODB_MS``. Compared: the per-environment governor alone (each environment's bucket,
its floor of one search per backend, halving on refusals) and with the fleet budget.

Run: ``python -m bench.fleet_governor``.
"""

from __future__ import annotations

import heapq
import random
import statistics
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from memmy_kb.domain.fleet_budget import FleetBudget, MemoryFleetItems
from memmy_kb.domain.rate_governor import RateGovernor

MAX_QPS = 40
ENVIRONMENTS = (1, 10, 50, 200)
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
    """MemOS's rate: at most ``MAX_QPS`` searches in any one second; past it, "rate limited"."""

    def __init__(self) -> None:
        self.accepted: deque[float] = deque()
        self.sent: list[float] = []
        self.refused = 0

    def search(self, at: float) -> bool:
        self.sent.append(at)
        while self.accepted and self.accepted[0] <= at - 1.0:
            self.accepted.popleft()
        if len(self.accepted) >= MAX_QPS:
            self.refused += 1
            return False
        self.accepted.append(at)
        return True

    def busiest_second(self) -> int:
        window: deque[float] = deque()
        busiest = 0
        for at in self.sent:
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


@dataclass
class Outcomes:
    answered: dict[str, int] = field(default_factory=lambda: {"heavy": 0, "light": 0})
    unavailable: dict[str, int] = field(default_factory=lambda: {"heavy": 0, "light": 0})
    latency: dict[str, list[float]] = field(default_factory=lambda: {"heavy": [], "light": []})

    def done(self, kind: str, ok: bool, seconds: float) -> None:
        (self.answered if ok else self.unavailable)[kind] += 1
        self.latency[kind].append(seconds)


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


def simulate(environments: int, fleet: bool, seed: int = 7) -> dict[str, Any]:
    """One run: every recall's outcome and latency, MemOS's view, the DynamoDB calls."""
    rng = random.Random(seed)
    clock, limiter, items, outcomes = Clock(), Limiter(), CountingItems(), Outcomes()
    start = clock.now
    governors = [
        RateGovernor(clock, fleet=FleetBudget(items, clock) if fleet else None) for _ in range(environments)
    ]
    queue: list[tuple[float, int, str, tuple[Any, ...]]] = []
    for seq, (t, env, kind, user) in enumerate(_arrivals(rng, environments)):
        queue.append((start + t, seq, "start", (env, kind, user, start + t)))
    heapq.heapify(queue)
    seq = len(queue)
    while queue:
        at, _, step, (env, kind, user, began) = heapq.heappop(queue)
        clock.now = at
        governor = governors[env]
        calls = items.calls
        if step == "start":
            allowed = governor.grants({"p1": 1}, {"p1": MAX_QPS}, user)["p1"].count
        else:
            allowed = 1 if governor.retried("p1", user) else 0
        sent_at = at + (items.calls - calls) * DYNAMODB_MS / 1000
        if not allowed:
            outcomes.done(kind, False, sent_at - began)
            continue
        if limiter.search(sent_at):
            outcomes.done(kind, True, sent_at + SEARCH_S - began)
            continue
        clock.now = max(clock.now, sent_at + REFUSAL_S)
        governor.refused("p1")
        if step == "retry":
            outcomes.done(kind, False, sent_at + REFUSAL_S - began)
            continue
        seq += 1
        heapq.heappush(queue, (sent_at + REFUSAL_S + rng.uniform(*PAUSE), seq, "retry", (env, kind, user, began)))
    recalls = sum(outcomes.answered.values()) + sum(outcomes.unavailable.values())
    every = sorted(outcomes.latency["heavy"] + outcomes.latency["light"])
    light = sorted(outcomes.latency["light"])
    return {
        "environments": environments,
        "fleet": fleet,
        "sent_per_second": len(limiter.sent) / SECONDS,
        "busiest_second": limiter.busiest_second(),
        "refused": limiter.refused,
        "recalls": recalls,
        "answered": sum(outcomes.answered.values()),
        "unavailable": sum(outcomes.unavailable.values()),
        "light_answered": outcomes.answered["light"],
        "light_recalls": outcomes.answered["light"] + outcomes.unavailable["light"],
        "p50_ms": 1000 * statistics.median(every),
        "p95_ms": 1000 * every[int(0.95 * (len(every) - 1))],
        "light_p50_ms": 1000 * statistics.median(light),
        "dynamodb_per_recall": items.calls / recalls,
    }


def run() -> list[dict[str, Any]]:
    results = []
    for environments in ENVIRONMENTS:
        for fleet in (False, True):
            result = simulate(environments, fleet)
            print(figure(result), flush=True)
            results.append(result)
    return results


def what(result: dict[str, Any]) -> str:
    mode = "fleet budget" if result["fleet"] else "per-environment governor only"
    return f"{result['environments']} environments ({HEAVY_PER_ENV * result['environments'] + LIGHT_USERS * LIGHT_RATE:g} recalls/s wanted), {mode}"


def figure(r: dict[str, Any]) -> str:
    return (
        f"sent {r['sent_per_second']:.1f}/s (busiest second {r['busiest_second']} vs limit {MAX_QPS}), "
        f"{r['refused']:,} refused; {r['answered']:,} of {r['recalls']:,} answered, 0 partial (one backend), "
        f"{r['unavailable']:,} 503; light users {r['light_answered']} of {r['light_recalls']} answered "
        f"(p50 {r['light_p50_ms']:.0f} ms); p50 {r['p50_ms']:.0f} ms, p95 {r['p95_ms']:.0f} ms; "
        f"DynamoDB {r['dynamodb_per_recall']:.2f} calls per recall"
    )


def rows(results: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return [("MemOS budget across environments (simulated)", what(r), figure(r)) for r in results]


if __name__ == "__main__":
    run()
