"""``make fair``'s figures and verdict (``bench.fair_recall``): per user and phase, the recalls, their
statuses, how many answers had the user's excerpts, p50/p95 latency and the ``Retry-After`` values seen;
then the pass criteria."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from http import HTTPStatus

from bench.load_report import percentile

LIGHT, HEAVY = "light", "heavy"
BEFORE, LOADED, AFTER = "alone, before", "with the other", "alone, after"
ALONE = (BEFORE, AFTER)  # her baseline: before the heavy user starts and after he stops, pooled
MAX_P50_RATIO = 2.0  # the light user's p50 under load, at most this times her p50 alone
STATUSES = (HTTPStatus.OK, HTTPStatus.TOO_MANY_REQUESTS, HTTPStatus.SERVICE_UNAVAILABLE)


@dataclass(frozen=True)
class Shot:
    """One recall: who sent it in which phase, when it was due and sent and answered (seconds since the
    run began), its status (0: no answer), whether it held excerpts of the caller's own document, and
    its ``Retry-After`` header."""

    user: str
    phase: str
    due: float
    start: float
    end: float
    status: int
    excerpts: bool = False
    retry_after: str | None = None

    @property
    def ms(self) -> float:
        return (self.end - self.start) * 1000


@dataclass
class FairReport:
    shots: list[Shot]
    header: str = ""
    notes: list[str] = field(default_factory=list)

    def of(self, user: str, *phases: str) -> list[Shot]:
        return [s for s in self.shots if s.user == user and (not phases or s.phase in phases)]

    def p50(self, user: str, *phases: str) -> float:
        shots = [s.ms for s in self.of(user, *phases) if s.status == HTTPStatus.OK]
        return percentile(shots, 50) if shots else float("nan")

    @property
    def ratio(self) -> float:
        """The light user's p50 with the heavy user, over her p50 alone."""
        return self.p50(LIGHT, LOADED) / self.p50(LIGHT, *ALONE)

    def criteria(self) -> list[tuple[bool, str]]:
        light = self.of(LIGHT)
        served = sum(1 for s in light if s.status == HTTPStatus.OK and s.excerpts)
        heavy = self.of(HEAVY, LOADED)
        statuses = Counter(s.status for s in heavy)
        others = {status: n for status, n in statuses.items() if status not in STATUSES[:2]}
        ratio = self.ratio
        return [
            (
                bool(light) and served == len(light),
                f"every light recall answered 200 with her excerpts ({served} of {len(light)})",
            ),
            (
                ratio <= MAX_P50_RATIO,  # False when either p50 is missing (nan)
                f"the light user's p50 with the heavy user within {MAX_P50_RATIO:g}x of alone ({ratio:.2f}x)",
            ),
            (
                statuses[HTTPStatus.TOO_MANY_REQUESTS] > 0,
                f"the heavy user limited with 429 ({statuses[HTTPStatus.TOO_MANY_REQUESTS]} of {len(heavy)})",
            ),
            (
                bool(heavy) and not others,
                f"the heavy user got no 503 ({statuses[HTTPStatus.SERVICE_UNAVAILABLE]}) and nothing but 200"
                f" and 429 (other: {_counts(others) or 'none'})",
            ),
        ]

    @property
    def ok(self) -> bool:
        return all(passed for passed, _ in self.criteria())

    def table(self) -> str:
        lines = [
            "| user  | phase          | recalls |  200 |  429 |  503 | other | 200 with excerpts | p50 ms | p95 ms"
            " | Retry-After seen (s: times) |",
            "|-------|----------------|---------|------|------|------|-------|-------------------|--------|-------"
            "-|-----------------------------|",
        ]
        for user, phase in ((LIGHT, BEFORE), (LIGHT, LOADED), (HEAVY, LOADED), (LIGHT, AFTER)):
            shots = self.of(user, phase)
            statuses = Counter(s.status for s in shots)
            other = len(shots) - sum(statuses[s] for s in STATUSES)
            answered = [s.ms for s in shots if s.status == HTTPStatus.OK]
            p50, p95 = (percentile(answered, q) for q in (50, 95)) if answered else (float("nan"),) * 2
            retry = _counts(Counter(s.retry_after for s in shots if s.retry_after is not None))
            lines.append(
                f"| {user:<5} | {phase:<14} | {len(shots):>7} | {statuses[HTTPStatus.OK]:>4}"
                f" | {statuses[HTTPStatus.TOO_MANY_REQUESTS]:>4} | {statuses[HTTPStatus.SERVICE_UNAVAILABLE]:>4}"
                f" | {other:>5} | {sum(s.excerpts for s in shots if s.status == HTTPStatus.OK):>17}"
                f" | {p50:>6.0f} | {p95:>6.0f} | {retry or '-':<27} |"
            )
        return "\n".join(lines)

    def render(self) -> str:
        late = max((s.start - s.due for s in self.shots), default=0.0)
        lines = [self.header, "", self.table(), ""]
        lines.append(
            f"light user's p50: {self.p50(LIGHT, *ALONE):.0f} ms alone, {self.p50(LIGHT, LOADED):.0f} ms with"
            f" the heavy user ({self.ratio:.2f}x)"
        )
        lines.append(f"open loop: each recall sent on its schedule, the latest {late * 1000:.0f} ms after it")
        lines += self.notes
        lines += [f"{'PASS' if passed else 'FAIL'}: {what}" for passed, what in self.criteria()]
        lines.append(f"verdict: {'PASS' if self.ok else 'FAIL'}")
        return "\n".join(lines)


def _counts(counter: Counter[str] | dict[int, int]) -> str:
    return ", ".join(f"{key}: {n}" for key, n in sorted(counter.items(), key=lambda kv: -kv[1]))
