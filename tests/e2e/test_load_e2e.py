"""``make load`` in short (bench/load.py): six users at once on a local stack of their own, and the oracle.

The first test is the bounded run ``make test`` includes; the second breaks the same stack on purpose
(recall ignores the reader's recall switch) and expects the oracle to catch the leak, so the short run is
known to be able to fail; the third breaks a stack of its own through teams (an invitation reads the
team's KBs) and expects the same. The oracle's logic has its unit tests in tests/unit/bench/test_load_oracle.py and,
for teams, tests/unit/bench/test_load_oracle_teams.py.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench import load

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.local_stack("stacks of its own under load, their memory sampled"),
]


class Stacks:
    """The load test's own stack (limits raised), shared by both tests: the clean run usually goes first,
    and a stack broken by the other test is replaced (xdist may run them in either order)."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.current: load.Stack | None = None

    def get(self, *, clean: bool) -> load.Stack:
        if self.current is not None and clean and self.current.broken:
            self.current.stop()
            self.current = None
        if self.current is None:
            self.current = load.start_stack(
                self.workdir / f"stack-{uuid.uuid4().hex[:6]}", load.LoadSettings()
            )
        return self.current

    def stop(self) -> None:
        if self.current is not None:
            self.current.stop()


@pytest.fixture(scope="module")
def stacks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stacks]:
    holder = Stacks(tmp_path_factory.mktemp("load"))
    try:
        yield holder
    finally:
        holder.stop()


def test_a_short_concurrent_load_passes_the_oracle(stacks):
    settings = load.LoadSettings(duration=10, requests=300, users=6, seed=12, settle_seconds=60)
    stack = stacks.get(clean=True)

    report = load.run(settings, stack)

    text = report.render()
    print(text)
    assert report.ok, f"{text}\n(stack log: {stack.log_path})"
    assert len(report.requests) >= 60, text
    routes = {r.route for r in report.requests}
    assert {"POST /recall", "POST /knowledge-bases/{kb}/members", "POST <presigned S3 POST>"} <= routes, text
    # The users used teams too, and the team lists were compared after the run.
    assert {"POST /teams", "POST /teams/{team}/members"} <= routes, text
    assert report.final_counts["team memberships"] > 0, text
    # The oracle was put to the test: excerpts came back and were attributed to their KBs.
    assert report.scope.attributed > 0, text
    assert report.scope.must_exclude > 0, text
    # Each process's memory was sampled, and the stack's DynamoDB items counted: the load added some.
    start, end, _ = report.marks
    stack_memory, driver_memory = report.memory
    assert stack_memory.at(start), text
    assert driver_memory.at(end), text
    assert stack_memory.items_at(end) > stack_memory.items_at(start) >= 0, text


def test_the_oracle_catches_recall_ignoring_the_recall_switch(stacks):
    """A leak shows once a user turns recall off on a KB with documents and recalls again, which a
    short random run does not always do: up to three short runs (one was enough in every trial here)."""
    stack = stacks.get(clean=False)
    reports = []
    for seed in (7, 8, 9):
        settings = load.LoadSettings(
            duration=6, requests=300, users=6, seed=seed, fault="recall-ignores-setting", final_checks=False
        )
        reports.append(load.run(settings, stack))
        if any(v.kind == "scope" for v in reports[-1].violations):
            break

    report = reports[-1]
    text = report.render()
    assert not report.ok, text
    scope = [v for v in report.violations if v.kind == "scope"]
    assert scope, "\n\n".join(r.render() for r in reports)
    assert "toggle-off" in scope[0].detail, text
    assert "verdict: FAIL" in text


def test_the_oracle_catches_an_invitation_read_as_a_membership(tmp_path):
    """A stack of its own, broken at its start: an invited user reads the team's KBs before accepting.
    The leak shows once an invitee recalls while a team of theirs holds a KB with documents: up to two
    runs (the first was enough in the trials here)."""
    reports = []
    for seed in (3, 4):
        settings = load.LoadSettings(
            duration=30,
            requests=1000,
            users=6,
            seed=seed,
            fault="team-invitation-reads",
            final_checks=False,
            workdir=tmp_path / f"run-{seed}",
        )
        reports.append(load.run(settings))
        if any(v.kind == "scope" for v in reports[-1].violations):
            break

    report = reports[-1]
    text = report.render()
    assert not report.ok, text
    assert [v for v in report.violations if v.kind == "scope"], "\n\n".join(r.render() for r in reports)
    assert "verdict: FAIL" in text
