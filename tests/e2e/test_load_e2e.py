"""``make load`` in short (bench/load.py): six users at once on a local stack of their own, and the oracle.

The first test is the bounded run ``make test`` includes; the second breaks the same stack on purpose
(recall ignores the reader's recall switch) and expects the oracle to catch the leak, so the short run is
known to be able to fail; the third breaks a stack of its own through teams (an invitation reads the
team's KBs) and expects the same. Both leaks are certain to be tried in one run, however slow the
machine: the run's probe (bench/load_probe.py) tells the story that exposes each. The oracle's logic
has its unit tests in tests/unit/bench/test_load_oracle.py and, for teams,
tests/unit/bench/test_load_oracle_teams.py.
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
    # The probe told its whole story on the clean stack without a leak (a refused step is a violation).
    assert "probe: a note recalled by its owner" in text, text
    # Each process's memory was sampled, and the stack's DynamoDB items counted: the load added some.
    start, end, _ = report.marks
    stack_memory, driver_memory = report.memory
    assert stack_memory.at(start), text
    assert driver_memory.at(end), text
    assert stack_memory.items_at(end) > stack_memory.items_at(start) >= 0, text


def _scope_violations_of(report: load.LoadReport, user_suffix: str) -> list[str]:
    return [
        v.detail for v in report.violations if v.kind == "scope" and f"-probe-{user_suffix}'s" in v.detail
    ]


def test_the_oracle_catches_recall_ignoring_the_recall_switch(stacks):
    """The probe (bench/load_probe.py) turns recall off on a KB whose note has come back and recalls
    again in every run, so one short run on the broken stack shows the leak, however few requests the
    random users make on a slow machine."""
    stack = stacks.get(clean=False)
    settings = load.LoadSettings(
        duration=6, requests=300, users=6, seed=7, fault="recall-ignores-setting", final_checks=False
    )
    report = load.run(settings, stack)

    text = report.render()
    assert not report.ok, text
    leaks = _scope_violations_of(report, "a")
    assert leaks, text
    assert "toggle-off" in leaks[0], text
    assert not [v for v in report.violations if v.kind == "probe"], text
    assert "verdict: FAIL" in text


def test_the_oracle_catches_an_invitation_read_as_a_membership(tmp_path):
    """A stack of its own, broken at its start: an invited user reads the team's KBs before accepting.
    The probe's invitee recalls while only invited to a team holding a KB with an ingested note, so one
    short run shows the leak."""
    settings = load.LoadSettings(
        duration=6,
        requests=300,
        users=6,
        seed=3,
        fault="team-invitation-reads",
        final_checks=False,
        workdir=tmp_path / "run",
    )
    report = load.run(settings)

    text = report.render()
    assert not report.ok, text
    leaks = _scope_violations_of(report, "b")
    assert leaks, text
    assert "never-granted" in leaks[0], text
    assert not [v for v in report.violations if v.kind == "probe"], text
    assert "verdict: FAIL" in text
