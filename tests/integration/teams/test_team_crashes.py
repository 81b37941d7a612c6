"""Teams in the deletion model, kill point by kill point (docs/teams.md, "Deletion"): a KB shared with teams
deleted, then a team deleted, each request and each cleanup crashing at one point (the cleanup of a team
between any two of its writes, a page of two memberships at a time). After every step no member of the
deleted team reads its KBs (their list and recall's scope), no member's teams counter is below what it
must end at; once the reconciler has run, nothing of the team is left (memberships, invitations, the
outbox item), each counter is exact, and no team lists the deleted KB."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

import pytest

from memmy_kb.adapters.dynamodb.cleanups import DynamoCleanupStore
from memmy_kb.adapters.dynamodb.table import DynamoTable
from memmy_kb.adapters.dynamodb.teams import DynamoTeamStore
from memmy_kb.adapters.stepfunctions import CleanupStateMachine
from memmy_kb.composition import reset_composition
from tests.support.aws_runtime import Executions, Schedule
from tests.support.consistency import assert_consistent, settle
from tests.support.crashes import Killer, Target
from tests.support.deletion_flows import counter, delete, on_two_backends, reads, team_residue
from tests.support.sharing import register
from tests.support.teams import share_with_team
from tests.support.teams_api import create_team, invite, join
from tests.support.uploads import create_kb

__all__ = ["on_two_backends"]  # the autouse fixture: the KBs on two MemOS backends, as assert_consistent checks

PEOPLE = ("alice", "bob", "carol", "dave", "erin")
# The deleted team's memberships: alice (owner), bob, carol, erin (members) and dave (invited): five
# writes of its cleanup, in pages of two.
CLEANUP_WRITES = 5
# What each teams counter ends at: alice owns the team that stays, bob and erin are in it too.
COUNTS_AFTER = {"alice": 1, "bob": 1, "carol": 0, "dave": 0, "erin": 1}

KILL_POINTS: list[tuple[str, Target, str, int]] = [
    # DELETE of a KB shared with both teams: the one transaction (META, grants, both teams' entries, outbox)
    ("delete-kb", (DynamoCleanupStore, "delete_kb_with_outbox"), "before", 0),
    ("delete-kb", (DynamoCleanupStore, "delete_kb_with_outbox"), "after", 0),
    ("delete-kb", (CleanupStateMachine, "start"), "before", 0),
    ("cleanup-kb", (DynamoCleanupStore, "delete_kb_items"), "after", 0),
    # DELETE of a team: the one transaction (META, its KBs' entries, outbox), then the execution's start
    ("delete-team", (DynamoTeamStore, "delete_team"), "before", 0),
    ("delete-team", (DynamoTeamStore, "delete_team"), "after", 0),
    ("delete-team", (CleanupStateMachine, "start"), "before", 0),
    # the cleanup of the team: before and after each of its writes, and before its second page's read
    *(("cleanup-team", (DynamoTable, "transact"), when, n) for n in range(CLEANUP_WRITES) for when in ("before", "after")),
    ("cleanup-team", (DynamoTeamStore, "query_team_members"), "before", 1),
]


def _kill_id(point: tuple[str, Target, str, int]) -> str:
    phase, (cls, name), when, skip = point
    return f"{phase}:{cls.__name__}.{name}#{skip + 1}:{when}"


@pytest.mark.parametrize("point", KILL_POINTS, ids=_kill_id)
def test_a_crash_at_any_step_of_a_team_deletion_leaves_nothing_once_reconcile_has_run(service, monkeypatch, point):
    phase, target, when, skip = point
    monkeypatch.setenv("RECALL_BURST", "1000000")  # recall's scope is read after every step
    monkeypatch.setattr("memmy_kb.domain.deletion.cleanup.TABLE_DELETE_BATCH", 2)  # the cleanup in pages
    reset_composition()
    executions, schedule = Executions(service), Schedule(service)

    # Given a team alice deletes (bob, carol and erin members, dave invited) and one that stays (bob, erin),
    # a KB shared with the first only and one shared with both
    for user in PEOPLE:
        register(service, user, user.title())
    doomed, stays = create_team(service, name="doomed"), create_team(service, name="stays")
    for user in ("bob", "carol", "erin"):
        join(service, doomed, user)
    assert invite(service, doomed, "dave").status == HTTPStatus.CREATED
    for user in ("bob", "erin"):
        join(service, stays, user)
    team_kb, both_kb = create_kb(service, name="team-only"), create_kb(service, name="both")
    for kb_id, team_id in ((team_kb, doomed), (both_kb, doomed), (both_kb, stays)):
        assert share_with_team(service, kb_id, team_id).status == HTTPStatus.CREATED
    assert reads(service, "carol") == ({team_kb, both_kb}, 2)

    killer = Killer()
    killer.install(monkeypatch, [target])
    killer.arm(target, when, phase, skip=skip)
    problems: list[str] = []

    def check(step: str, *, team_gone: bool, kb_gone: bool) -> None:
        """After ``step``: what each member may read, and no counter below its end."""
        gone_team = DynamoTeamStore(service.stores.table).get_team(doomed) is None
        assert gone_team or not team_gone, f"after {step} the team is still there"
        for user in ("bob", "carol", "erin"):
            listed, scope = reads(service, user)
            expected = {both_kb} if user != "carol" and not kb_gone else set()
            if not gone_team:
                expected |= {team_kb} | (set() if kb_gone else {both_kb})
            if listed != expected or scope != len(expected):
                problems.append(f"after {step} {user} reads {sorted(listed)} (scope {scope}), not {sorted(expected)}")
        for user, end in COUNTS_AFTER.items():
            if counter(service, user) < end:
                problems.append(f"after {step} {user}'s teams counter is {counter(service, user)}, below {end}")

    # When the KB shared with both is deleted and cleaned up, then the team, each maybe crashing
    with killer.during("delete-kb"):
        delete(service, f"/knowledge-bases/{both_kb}", HTTPStatus.ACCEPTED)
    check("the KB's delete", team_gone=False, kb_gone=True)
    with killer.during("cleanup-kb"):
        executions.run_started()
    check("the KB's cleanup", team_gone=False, kb_gone=True)
    with killer.during("delete-team"):
        delete(service, f"/teams/{doomed}", HTTPStatus.NO_CONTENT)
    check("the team's delete", team_gone=True, kb_gone=True)
    with killer.during("cleanup-team"):
        executions.run_started()
    check("the team's cleanup", team_gone=True, kb_gone=True)
    assert killer.fired, f"the kill point {_kill_id(point)} was never reached"

    # Then, once the reconciler has run (and the cleanups it restarts), nothing of the team is left, every
    # counter is exact, no team lists the deleted KB, and the members read only what they still may
    killer.disarm()
    settle(service, executions, schedule)
    check("the reconcile", team_gone=True, kb_gone=True)
    assert not problems, "\n  ".join(problems)
    assert team_residue(service, doomed) == []
    assert {user: counter(service, user) for user in PEOPLE} == COUNTS_AFTER
    kept = service.stores.kbs.batch_get_teams([stays])[stays]
    assert (set(kept.kbs), kept.kb_count) == (set(), 0)
    assert service.call("GET", f"/knowledge-bases/{team_kb}/teams", "alice").body["items"] == []
    assert_consistent(service)


def test_an_accept_the_index_has_not_caught_up_with_is_cleaned_up_and_uncounted_once(service, monkeypatch):
    # Given bob's invitation, accepted (his teams counter 1) just before the team is deleted, and GSI1 still
    # listing him invited when the cleanup first reads it
    for user in ("alice", "bob"):
        register(service, user, user.title())
    team_id = create_team(service, name="doomed")
    assert invite(service, team_id, "bob").status == HTTPStatus.CREATED
    store = DynamoTeamStore(service.stores.table)
    before_the_accept = store.query_team_members(team_id)
    join_reply = service.call("POST", f"/teams/{team_id}/accept", "bob")
    assert join_reply.status == HTTPStatus.OK, join_reply.body
    assert counter(service, "bob") == 1
    executions, schedule = Executions(service), Schedule(service)
    lagging = [before_the_accept]
    real = DynamoTeamStore.query_team_members

    def index_lags(self: DynamoTeamStore, team: str) -> Any:
        return lagging.pop() if lagging else real(self, team)

    monkeypatch.setattr(DynamoTeamStore, "query_team_members", index_lags)

    # When the team is deleted and its cleanup runs (then the reconciler)
    assert service.call("DELETE", f"/teams/{team_id}", "alice").status == HTTPStatus.NO_CONTENT
    executions.run_started()
    assert not lagging, "the cleanup never read the index"
    settle(service, executions, schedule)

    # Then bob's membership is gone and his counter taken down once
    assert team_residue(service, team_id) == []
    assert (counter(service, "alice"), counter(service, "bob")) == (0, 0)
