"""``make load``: several users at once on the local stack, bounded in time and requests, with an oracle.

The stack runs as a subprocess on loopback (``bench.load_stack``: ``LocalStack`` with the abuse limits
raised). Each user is a thread with its own HTTP client, registering a profile and then picking actions
at random (seeded) until the time or the request budget runs out: create a KB, upload a small text file
through the real flow (``POST .../uploads``, the presigned POST to S3, the S3 -> SQS -> ingest -> MemOS
path the stack runs), share a KB by user id, phone or email, revoke, leave, turn recall on or off, recall,
delete a file, delete a KB; and the team actions (``bench.load_worker_teams``: create, invite, accept or
decline, share with a team, unshare, remove, leave, delete). Every document carries its KB's marker token, so each excerpt names its KB.

The oracle (``bench.load_oracle``) then checks:

1. every recall against the changes in flight around it: no excerpt of a KB that was definitely out of
   the caller's scope for the whole recall, the team actions counted as changes of the (user, KB) pairs
   they affect (``bench.load_oracle_teams``);
2. once the ingest has settled, every user's KB list (role and recall setting), every live KB's members
   and files, and the team memberships and team shares (``bench.load_checks_teams``) equal the
   client-side model of what succeeded;
3. after the reconciler has run (the stack's control endpoint) and the cleanups have finished, MemOS
   holds exactly the live KBs and files.

It prints requests per second, p50/p95/p99 latency per route, errors (5xx, no answer, or a status the
route should not give; 429s are counted apart), each process's memory before and after
(``bench.load_memory``: the stack's process and this one), the oracle's counts and its verdict. Exit
status 1 on any violation or error. ``bench.load_soak`` (``make soak``) runs the same for ten minutes and
judges the memory's trend.

The pieces: ``bench.load_stack_handle`` (the subprocess's start, URLs and stop), ``bench.load_model``
(settings, users, what succeeded), ``bench.load_worker`` (one user's thread), ``bench.load_probe`` (the
scripted story every run tells beside the random users, so that the recall switch and a pending team
invitation are put to the test however short the run), ``bench.load_checks`` (the comparisons after the
run) and ``bench.load_report``; this module runs them and is the CLI.

    python -m bench.load [--duration 60] [--requests 5000] [--users 6] [--seed N]

Each flag has an environment variable (``LOAD_DURATION``, ``LOAD_REQUESTS``, ``LOAD_USERS``,
``LOAD_SEED``, ``LOAD_SETTLE_SECONDS``).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

from bench import load_oracle as oracle
from bench import load_oracle_teams
from bench.load_checks import api_clients, check_final_lists, check_residue, settle_ingest
from bench.load_checks_teams import check_teams
from bench.load_memory import DRIVER, STACK, MemorySampler, sample_interval
from bench.load_model import Budget, LoadSettings, Model, User
from bench.load_probe import Probe, probe_users
from bench.load_report import LoadReport
from bench.load_stack import FAULTS
from bench.load_stack_handle import Stack, start_stack
from bench.load_worker import Worker


def make_users(count: int, tag: str) -> list[User]:
    return [
        User(
            user_id=f"load-{tag}-{i}",
            name=f"User{i}",
            email=f"load-{tag}-{i}@example.com",
            phone=f"+86139{int(tag, 16) % 10000:04d}{i:04d}",
        )
        for i in range(count)
    ]


def run(settings: LoadSettings, stack: Stack | None = None) -> LoadReport:
    """Start the stack, run the load, check the oracle, stop the stack; the report.

    With ``stack`` (``start_stack``), run on it and leave it running; ``settings.fault`` then breaks it
    before the load (for good: its users are new, so a later run still checks only its own); the other
    fault (``team-invitation-reads``) needs a stack of its own.
    """
    if settings.seed is None:
        settings.seed = random.SystemRandom().randrange(1_000_000)
    if stack is not None:
        if settings.fault not in (None, "recall-ignores-setting"):
            raise ValueError(
                f"the fault {settings.fault} is made at the stack's start: run it without a stack"
            )
        if settings.fault:
            stack.break_recall_scope()
        return _run_on(stack, settings)
    workdir = settings.workdir or Path(tempfile.mkdtemp(prefix="memmy-load-"))
    workdir.mkdir(parents=True, exist_ok=True)
    stack = start_stack(workdir, settings)
    try:
        report = _run_on(stack, settings)
    finally:
        stack.stop()
    if report.ok and settings.workdir is None:
        shutil.rmtree(workdir, ignore_errors=True)  # kept, with the stack's log, when something failed
        report.stack_log = None
    return report


def _run_on(stack: Stack, settings: LoadSettings) -> LoadReport:
    seed = settings.seed or 0
    tag = f"{seed % 0xFFFF:04x}"
    users = make_users(settings.users, tag)
    model = Model()
    workers = [
        Worker(stack, user, [u for u in users if u is not user], model, random.Random(seed * 1000 + i))
        for i, user in enumerate(users)
    ]
    probed = probe_users(tag)
    probe = Probe(stack, model, probed, seed * 1000 + len(users))
    processes = {STACK: stack.process.pid, DRIVER: os.getpid()}
    sampler = MemorySampler(processes, sample_interval(settings.duration), {STACK: stack.item_count}).start()
    try:
        load_started = sampler.sample()
        budget = Budget(settings.duration, settings.requests)
        started = time.monotonic()
        for worker in workers:
            worker.register(budget)
        threads = [
            threading.Thread(target=w.run, args=(budget,), name=f"load-{w.user.user_id}") for w in workers
        ]
        threads.append(threading.Thread(target=probe.run, name="load-probe"))
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.monotonic() - started
        load_ended = sampler.sample()
        team_changes = load_oracle_teams.team_changes(model.team_events)
        changes = [*model.changes, *team_changes]
        scope = oracle.check_scope(changes, model.recalls, model.markers, model.documents_since)
        notes: list[str] = [team_note(model, len(team_changes)), probe.note()]
        if model.uncertain_creates:
            notes.append(
                f"  note: {model.uncertain_creates} creates of unknown outcome (their MemOS KBs may remain)"
            )
        final, undetermined, runs = _final_checks(stack, settings, [*users, *probed], model, notes)
    finally:
        checked = sampler.stop()
    return LoadReport(
        settings=settings,
        elapsed=elapsed,
        requests=model.requests,
        scope=scope,
        violations=[*scope.violations, *probe.violations, *final],
        undetermined=undetermined,
        final_counts=dict(model.final_counts),
        driver_errors=model.driver_errors,
        reconcile_runs=runs,
        limits=stack.limits,
        stack_log=stack.log_path,
        notes=notes,
        memory=sampler.processes,
        marks=(load_started, load_ended, checked),
    )


def team_note(model: Model, changes: int) -> str:
    """How many team actions the run made (succeeded or unknown), by action, and the changes they gave."""
    actions = Counter(event.action for event in model.team_events)
    unknown = sum(1 for event in model.team_events if event.outcome.ok is None)
    by_action = ", ".join(f"{action} {n}" for action, n in actions.most_common()) or "none"
    return (
        f"  teams: {sum(actions.values())} team actions answered 2xx or not at all ({by_action}; {unknown} of unknown "
        f"outcome), {changes} (user, KB) changes derived for the oracle"
    )


def _final_checks(
    stack: Stack, settings: LoadSettings, users: list[User], model: Model, notes: list[str]
) -> tuple[list[oracle.Violation], int, int]:
    """Once the load is over: the lists, the files and MemOS against the model; the violations, the
    (user, KB) states left undetermined and the reconciler runs."""
    if not settings.final_checks:
        notes.append("  note: final checks (lists, files, MemOS residue) skipped")
        return [], 0, 0
    clients = api_clients(stack, users)
    try:
        if not settle_ingest(clients, model, settings.settle_seconds):
            notes.append(f"  note: uploads still in flight after {settings.settle_seconds:g} s")
        violations, live_files, undetermined = check_final_lists(clients, users, model)
        violations += check_teams(clients, users, model)
        c = model.final_counts
        notes.append(
            f"  teams after the run: {c['team memberships']} memberships (team, state, role) of the users' "
            f"lists, {c['team shares']} team shares of {c['live teams']} live teams compared with the model"
        )
    finally:
        for client in clients.values():
            client.close()
    residue, runs = check_residue(stack, live_files, settings.settle_seconds)
    return violations + residue, undetermined, runs


def main(argv: list[str] | None = None) -> int:
    defaults = LoadSettings.from_environment()
    parser = argparse.ArgumentParser(prog="python -m bench.load", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--duration", type=float, default=defaults.duration, help="seconds of load (LOAD_DURATION)"
    )
    parser.add_argument(
        "--requests", type=int, default=defaults.requests, help="request budget (LOAD_REQUESTS)"
    )
    parser.add_argument("--users", type=int, default=defaults.users, help="concurrent users (LOAD_USERS)")
    parser.add_argument("--seed", type=int, default=defaults.seed, help="random seed (LOAD_SEED)")
    parser.add_argument(
        "--settle-seconds",
        type=float,
        default=defaults.settle_seconds,
        help="how long to wait for the ingest and the cleanups after the load (LOAD_SETTLE_SECONDS)",
    )
    parser.add_argument("--keep-limits", action="store_true", help="keep template.yaml's abuse limits")
    parser.add_argument("--fault", choices=FAULTS, help="break the service on purpose")
    parser.add_argument(
        "--memos-qps", type=float, default=None, help="MemOS's rate limit in the emulator, searches a second"
    )
    parser.add_argument(
        "--workdir", type=Path, help="where the stack's log and home go (default: a temp dir)"
    )
    # Each option is named after the LoadSettings field it sets.
    report = run(LoadSettings(**vars(parser.parse_args(argv))))
    print(report.render(), flush=True)
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
