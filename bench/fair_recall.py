"""``make fair``: recall is fair when one user's script hammers it (docs/load-test.md, "Fair recall").

A local stack of its own (``bench.load_stack``, in a subprocess) runs the MemOS emulator limited to
``--memos-qps`` searches a second (10), and the stack's backend with that ``max_qps``, so the fleet's
MemOS budget is small. Two users register, and each creates a KB and uploads a document to it through
the real flow, as ``make load``'s users do (``bench.load_worker``); once the ingest has settled and each
one's recall finds her own document, recalls are sent open loop (each on its schedule, concurrently, never
waiting for an answer):

1. the light user alone, 1 recall a second, for ``--baseline`` seconds;
2. the heavy user at 10 a second and the light user at 1 a second together, for ``--duration`` seconds;
3. the light user alone again for ``--baseline`` seconds. Her p50 alone is over 1 and 3 together: the
   machine's own load drifts over a minute (other work on a shared machine), and a baseline on both
   sides of the load keeps that drift from passing for the heavy user's effect.

It passes when every one of the light user's recalls answered 200 with her excerpts, her p50 with the
heavy user is within 2x of her p50 alone, and the heavy user is held by the per-user limit (429s) and
never by the fleet's budget (no 503, nothing but 200 and 429). Exit status 1 otherwise.

    python -m bench.fair_recall [--duration 60] [--baseline 10] [--set RECALL_BURST=1000]

``--set NAME=VALUE`` changes a function's setting in the stack's template copy, e.g. the per-user limit,
to watch the criteria fail.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http import HTTPStatus
from pathlib import Path

import httpx

from bench import load_oracle as oracle
from bench.fair_recall_report import AFTER, BEFORE, HEAVY, LIGHT, LOADED, FairReport, Shot
from bench.load_checks import settle_ingest
from bench.load_model import Budget, LoadSettings, Model, User
from bench.load_stack import parse_setting
from bench.load_stack_handle import Stack, start_stack
from bench.load_worker import QUERY, RECALL_LIMIT, Worker

RATES = {LIGHT: 1.0, HEAVY: 10.0}  # recalls a second
# Seconds after the phase's start of each user's first recall: the light user's fall halfway between two
# of the heavy user's, not at the same instant as one (every tenth of them would be, otherwise).
OFFSETS = {LIGHT: 0.5 / RATES[HEAVY], HEAVY: 0.0}
SETUP_SECONDS = 90  # the registrations, KBs and uploads, the ingest, and the first recalls finding them
SENDERS = 64  # threads sending recalls: more than the recalls in flight at once, so none waits for one


@dataclass
class FairSettings:
    duration: float = 60.0
    baseline: float = 10.0
    memos_qps: float = 10.0
    function_settings: dict[str, str] = field(default_factory=dict)
    workdir: Path | None = None


@dataclass
class Caller:
    """One of the two users: her client (the worker's) and the marker of her KB's document."""

    name: str
    worker: Worker
    marker: str = ""

    @property
    def http(self) -> httpx.Client:
        return self.worker.http

    def recall(self, phase: str, due: float, t0: float) -> Shot:
        start = time.monotonic() - t0
        try:
            response = self.http.post("/recall", json={"query": QUERY, "limit": RECALL_LIMIT})
        except httpx.HTTPError:
            return Shot(self.name, phase, due, start, time.monotonic() - t0, 0)
        end = time.monotonic() - t0
        excerpts = False
        if response.status_code == HTTPStatus.OK:
            items = response.json()["items"]
            excerpts = self.marker in oracle.markers_in(f"{i['title']}\n{i['content']}" for i in items)
        retry_after = response.headers.get("Retry-After")
        return Shot(self.name, phase, due, start, end, response.status_code, excerpts, retry_after)


def set_up(stack: Stack, tag: str) -> dict[str, Caller]:
    """Both users registered, each with a KB holding a document whose excerpts her recall returns."""
    model = Model()
    callers: dict[str, Caller] = {}
    budget = Budget(SETUP_SECONDS, 100)
    for i, name in enumerate((LIGHT, HEAVY)):
        user = User(
            f"fair-{tag}-{name}", name.title(), f"fair-{tag}-{name}@example.com", f"+86137{tag}{i:04d}"
        )
        worker = Worker(stack, user, [], model, random.Random(i))
        worker.register(budget)
        if not (worker.do_create(budget) and worker.do_upload(budget)):
            raise RuntimeError("the setup ran out of time")
        owned = model.owned(user.user_id)
        if len(owned) != 1 or not any(u.stored for u in owned[0].uploads.values()):
            raise RuntimeError(f"{name}'s KB or upload failed: {model.requests}")
        callers[name] = Caller(name, worker, owned[0].marker)
    if not settle_ingest({c.worker.user.user_id: c.http for c in callers.values()}, model, SETUP_SECONDS):
        raise RuntimeError(f"the uploads were not ingested within {SETUP_SECONDS} s")
    for caller in callers.values():
        _until_found(caller)
    return callers


def _until_found(caller: Caller) -> None:
    """Recall, a second apart, until the answer holds the caller's own excerpts (the index has them)."""
    deadline = time.monotonic() + SETUP_SECONDS
    while not (shot := caller.recall("setup", 0.0, time.monotonic())).excerpts:
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"{caller.name}'s recall did not find her document (last status {shot.status})"
            )
        time.sleep(1)


def paced(callers: list[Caller], phase: str, seconds: float, t0: float) -> list[Shot]:
    """Each caller's recalls at her rate for ``seconds``, each sent when due, whatever is in flight."""
    start = time.monotonic() - t0
    schedule = sorted(
        (start + OFFSETS[c.name] + k / RATES[c.name], c.name)
        for c in callers
        for k in range(round(seconds * RATES[c.name]))
    )
    by_name = {c.name: c for c in callers}
    with ThreadPoolExecutor(SENDERS, thread_name_prefix="fair") as senders:
        futures = []
        for due, name in schedule:
            delay = due - (time.monotonic() - t0)
            if delay > 0:
                time.sleep(delay)
            futures.append(senders.submit(by_name[name].recall, phase, due, t0))
        return [f.result() for f in futures]


def run(settings: FairSettings) -> FairReport:
    """Start the stack, set the users up, run both phases, stop the stack; the report."""
    workdir = settings.workdir or Path(tempfile.mkdtemp(prefix="memmy-fair-"))
    load_settings = LoadSettings(
        keep_limits=True, memos_qps=settings.memos_qps, function_settings=settings.function_settings
    )
    stack = start_stack(workdir, load_settings)
    try:
        callers = set_up(stack, f"{random.SystemRandom().randrange(10_000):04d}")
        try:
            t0 = time.monotonic()
            shots = paced([callers[LIGHT]], BEFORE, settings.baseline, t0)
            shots += paced([callers[LIGHT], callers[HEAVY]], LOADED, settings.duration, t0)
            shots += paced([callers[LIGHT]], AFTER, settings.baseline, t0)
        finally:
            for caller in callers.values():
                caller.http.close()
                caller.worker.storage.close()
    finally:
        stack.stop()
    header = (
        f"fair recall: MemOS at {settings.memos_qps:g} searches/s; the light user alone at"
        f" {RATES[LIGHT]:g} recall/s for {settings.baseline:g} s, the heavy user at {RATES[HEAVY]:g}/s"
        f" with her for {settings.duration:g} s, then she alone again for {settings.baseline:g} s;"
        f"\n  recall settings {stack.recall_limits}"
    )
    report = FairReport(shots, header)
    if report.ok and settings.workdir is None:
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        report.notes.append(f"stack log: {stack.log_path}")
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fair_recall", description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of both users together")
    parser.add_argument(
        "--baseline", type=float, default=10.0, help="seconds of the light user alone, before and again after"
    )
    parser.add_argument("--memos-qps", type=float, default=10.0, help="MemOS's rate in the emulator")
    parser.add_argument(
        "--set",
        dest="function_settings",
        type=parse_setting,
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a function's setting in the stack's template copy (RECALL_BURST=1000 lifts the limit)",
    )
    parser.add_argument(
        "--workdir", type=Path, help="where the stack's log and home go (default: a temp dir)"
    )
    args = parser.parse_args(argv)
    args.function_settings = dict(args.function_settings)
    if args.duration <= 0 or args.baseline <= 0:
        parser.error("--duration and --baseline must be more than 0 seconds")
    report = run(FairSettings(**vars(args)))
    print(report.render(), flush=True)
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
