"""``make load``'s report: requests per second, p50/p95/p99 latency per route, errors, each process's memory
before and after, the oracle's counts and its verdict."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from bench import load_oracle as oracle
from bench.load_memory import ProcessMemory
from bench.load_model import RATE_LIMITED, LoadSettings, RequestRecord


def _percentiles(latencies: list[float]) -> str:
    return " | ".join(f"{percentile(latencies, q):>7.0f}" for q in (50, 95, 99))


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of non-empty ``values``."""
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


@dataclass
class LoadReport:
    settings: LoadSettings
    elapsed: float
    requests: list[RequestRecord]
    scope: oracle.ScopeCheck
    violations: list[oracle.Violation]
    undetermined: int
    reconcile_runs: int
    limits: dict[str, str]
    stack_log: Path | None = None
    notes: list[str] = field(default_factory=list)
    final_counts: dict[str, int] = field(default_factory=dict)
    driver_errors: list[str] = field(default_factory=list)
    memory: list[ProcessMemory] = field(default_factory=list)
    # The load's start and end, and the end of the checks after it, on the memory samples' clock.
    marks: tuple[float, float, float] = (0.0, 0.0, 0.0)

    @property
    def errors(self) -> list[RequestRecord]:
        return [r for r in self.requests if not r.expected]

    @property
    def rate_limited(self) -> int:
        return sum(1 for r in self.requests if r.status == RATE_LIMITED)

    @property
    def ok(self) -> bool:
        return not self.violations and not self.errors and not self.driver_errors

    def table(self) -> str:
        by_route: dict[str, list[RequestRecord]] = defaultdict(list)
        for record in self.requests:
            by_route[record.route].append(record)
        header = (
            f"| {'route':<45} | {'requests':>8} | {'p50 ms':>7} | {'p95 ms':>7} | {'p99 ms':>7} | {'429':>4} "
            f"| {'errors':>6} |"
        )
        rule = "|" + "|".join("-" * len(cell) for cell in header.split("|")[1:-1]) + "|"
        lines = [header, rule]
        for route in sorted(by_route, key=lambda r: -len(by_route[r])):
            records = by_route[route]
            latencies = [(r.end - r.start) * 1000 for r in records]
            lines.append(
                f"| {route:<45} | {len(records):>8} | {_percentiles(latencies)} | "
                f"{sum(r.status == RATE_LIMITED for r in records):>4} | {sum(not r.expected for r in records):>6} |"
            )
        every = [(r.end - r.start) * 1000 for r in self.requests] or [0.0]
        lines.append(
            f"| {'all':<45} | {len(self.requests):>8} | {_percentiles(every)} | {self.rate_limited:>4} | "
            f"{len(self.errors):>6} |"
        )
        return "\n".join(lines)

    def memory_lines(self) -> list[str]:
        """Each process's RSS before the load, at its end, after the checks, and the highest sampled."""
        if not self.memory:
            return []
        start, end, checked = self.marks

        def mib(value: float | None) -> str:
            return f"{value:.0f}" if value is not None else "n/a"

        lines = [
            f"{'memory (RSS, MiB)':<26} {'before':>7} {'end of load':>12} {'after checks':>13} {'highest':>8}"
        ]
        for process in self.memory:
            lines.append(
                f"  {f'{process.name} (pid {process.pid})':<24} {mib(process.at(start)):>7} "
                f"{mib(process.at(end)):>12} {mib(process.at(checked)):>13} {mib(process.peak):>8}"
            )
        for process in self.memory:
            counts = [process.items_at(mark) for mark in (start, end, checked)]
            if all(count is not None for count in counts):
                lines.append(
                    f"  {process.name}'s DynamoDB items: {counts[0]:,} before, {counts[1]:,} at the end, "
                    f"{counts[2]:,} after the checks"
                )
        lines.append("  (no desktop service: the users call the API directly)")
        return lines

    def render(self) -> str:
        s = self.settings
        rps = len(self.requests) / self.elapsed if self.elapsed else 0.0
        lines = [
            f"make load: {s.users} users, {self.elapsed:.1f} s (limit {s.duration:g} s, {s.requests} requests), "
            f"seed {s.seed}, limits {self.limits or 'as in template.yaml'}"
            + (f", FAULT {s.fault}" if s.fault else ""),
            "",
            self.table(),
            "",
            f"throughput: {rps:.1f} requests/s; errors (5xx, no answer, unexpected status): {len(self.errors)}; "
            f"rate limited (429): {self.rate_limited}",
            *self.memory_lines(),
        ]
        statuses: dict[tuple[str, int], int] = defaultdict(int)
        for record in self.errors:
            statuses[(record.route, record.status)] += 1
        lines += [
            f"  error: {route} -> {status or 'no answer'} x{n}"
            for (route, status), n in sorted(statuses.items())
        ]
        sc = self.scope
        lines += [
            f"oracle: {sc.recalls} recalls, {sc.excerpts} excerpts, {sc.attributed} (recall, KB) pairs returned "
            f"and checked, {sc.must_exclude} exclusions required of KBs with documents "
            f"({', '.join(f'{what} {n}' for what, n in sc.must_exclude_by.most_common()) or 'none'}); "
            f"{self.undetermined} final (user, KB) states undetermined; reconciler runs: {self.reconcile_runs}",
            *self.notes,
        ]
        if self.settings.final_checks:
            c = Counter(self.final_counts)
            lines.append(
                f"after the run: {c['grants']} grants (role, recall), {c['members']} members and {c['files']} "
                f"files of {c['live KBs']} live KBs compared with the model; MemOS compared after the reconciler"
            )
        shown = self.violations[:20]
        lines += [f"  VIOLATION {v}" for v in shown]
        if len(self.violations) > len(shown):
            lines.append(f"  ... and {len(self.violations) - len(shown)} more")
        lines += [f"  DRIVER ERROR {error}" for error in self.driver_errors]
        verdict = "PASS" if self.ok else "FAIL"
        lines.append(f"verdict: {verdict} ({len(self.violations)} violations, {len(self.errors)} errors)")
        if not self.ok and self.stack_log is not None:
            lines.append(f"stack log: {self.stack_log}")
        return "\n".join(lines)
