"""``make soak``: ``make load``'s scenario and oracle at 60 users for ten minutes, with a verdict on memory.

The load runs as ``bench.load`` runs it (its own stack, the same users and actions, the same oracle and
final checks), bounded by time only. Meanwhile each process's RSS is sampled (``bench.load_memory``:
the local stack's process and the load driver, every 5 s over ten minutes). The soak fails when the load
fails (a violation, an error) or when a process's memory keeps growing after the warm-up (the first
fifth of the load): its least-squares line rises by more than the limit (32 MiB) and the median of the
last third of the samples is more than half the limit above the first third's; the stack's memory is
taken less 4 KiB per DynamoDB item it holds, the data the service keeps by design
(``bench.load_memory.growth``).

    python -m bench.load_soak [--duration 600] [--users 60] [--seed N] [--limit-mib 32]

``SOAK_DURATION`` sets the duration (to try the soak shorter), ``LOAD_SEED`` the seed.
"""

from __future__ import annotations

import argparse
import os
import sys

from bench import load
from bench.load_memory import GROWTH_LIMIT_MIB, WARMUP_FRACTION, Growth, ProcessMemory, growth
from bench.load_model import LoadSettings
from bench.load_report import LoadReport

SOAK_SECONDS = 600.0
SOAK_USERS = 60
NO_REQUEST_LIMIT = 10**9
TIMELINE_POINTS = 11  # RSS at the start, every tenth of the load, and at its end


def verdicts(report: LoadReport, limit_mib: float) -> dict[str, Growth]:
    """Each process's growth over the load (its samples from the load's start to its end)."""
    start, end, _ = report.marks
    warmup = WARMUP_FRACTION * (end - start)
    return {
        process.name: growth(process.between(start, end), warmup_seconds=warmup, limit_mib=limit_mib)
        for process in report.memory
    }


def timeline(process: ProcessMemory, start: float, end: float, *, items: bool = False) -> str:
    """RSS (MiB), or the DynamoDB items held, at ``TIMELINE_POINTS`` evenly spaced times of the load."""
    step = (end - start) / (TIMELINE_POINTS - 1)
    times = [start + i * step for i in range(TIMELINE_POINTS)]
    values = [process.items_at(t) if items else process.at(t) for t in times]
    return " ".join(f"{v:.0f}" if v is not None else "n/a" for v in values)


def render(report: LoadReport, growths: dict[str, Growth]) -> str:
    start, end, _ = report.marks
    warmup = WARMUP_FRACTION * (end - start)
    lines = [f"memory over the load (RSS MiB at every tenth of its {end - start:.0f} s):"]
    for p in report.memory:
        lines.append(f"  {p.name:<12} {timeline(p, start, end)}")
        if any(s.items is not None for s in p.samples):
            lines.append(f"  {'  its items':<12} {timeline(p, start, end, items=True)}")
    lines.append(f"growth after the warm-up (the first {warmup:.0f} s):")
    lines += [f"  {name:<12} {g.describe()}" for name, g in growths.items()]
    ok = report.ok and all(g.measured and not g.growing for g in growths.values())
    lines.append(f"soak verdict: {'PASS' if ok else 'FAIL'}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.load_soak", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--duration",
        type=float,
        default=float(os.environ.get("SOAK_DURATION", SOAK_SECONDS)),
        help="seconds of load (SOAK_DURATION)",
    )
    parser.add_argument("--users", type=int, default=SOAK_USERS, help="concurrent users")
    seed = os.environ.get("LOAD_SEED")
    parser.add_argument(
        "--seed", type=int, default=int(seed) if seed else None, help="random seed (LOAD_SEED)"
    )
    parser.add_argument(
        "--limit-mib",
        type=float,
        default=GROWTH_LIMIT_MIB,
        help="growth after the warm-up that fails the soak",
    )
    args = parser.parse_args(argv)
    settings = LoadSettings(
        duration=args.duration, requests=NO_REQUEST_LIMIT, users=args.users, seed=args.seed
    )
    report = load.run(settings)
    growths = verdicts(report, args.limit_mib)
    print(report.render(), flush=True)
    print(render(report, growths), flush=True)
    return 0 if report.ok and all(g.measured and not g.growing for g in growths.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
