"""Members: who may remove whom, leaving, roles and ownership, and deleting a team with its cleanup."""

from __future__ import annotations

from http import HTTPStatus

from memmy_kb.domain.deletion.cleanup import Cleaner
from memmy_kb.domain.teams import members, teams
from memmy_kb.domain.teams.activity import list_team_activity
from memmy_kb.records import utc_now
from tests.support.domain import refused
from tests.support.fakes import (
    FakeBackendSlots,
    FakeCleanupExecutions,
    FakeKnowledgeEngine,
    FakeUploadObjects,
)
from tests.support.teams import World

NO_TEAM = (HTTPStatus.NOT_FOUND, "team_not_found")


def _remove(world: World, caller: str, team_id: str, member: str) -> None:
    members.remove_member(world.teams, caller, team_id, member, policy=world.policy)


def _role(world: World, caller: str, team_id: str, member: str, role: str) -> None:
    members.set_role(world.teams, caller, team_id, member, role, policy=world.policy)  # type: ignore[arg-type]


def test_an_admin_removes_members_but_not_the_owner_or_another_admin(world: World, team_id: str) -> None:
    for user in ("bob", "carol", "dave"):
        world.join(team_id, user)
    _role(world, "alice", team_id, "bob", "admin")
    _role(world, "alice", team_id, "carol", "admin")
    assert refused(lambda: _remove(world, "bob", team_id, "alice")) == (HTTPStatus.FORBIDDEN, "team_owner_only")
    assert refused(lambda: _remove(world, "bob", team_id, "carol")) == (HTTPStatus.FORBIDDEN, "team_owner_only")
    assert refused(lambda: _remove(world, "dave", team_id, "bob")) == (HTTPStatus.FORBIDDEN, "team_admin_only")
    _remove(world, "bob", team_id, "dave")
    assert world.membership("dave", team_id) is None
    assert world.stores.table.counters["teams#dave"]["n"] == 0
    team = world.teams.get_team(team_id)
    assert team is not None
    assert team.member_count == 3


def test_members_leave_but_the_owner_cannot(world: World, team_id: str) -> None:
    world.join(team_id, "bob")
    assert refused(lambda: _remove(world, "alice", team_id, "alice")) == (
        HTTPStatus.UNPROCESSABLE_ENTITY,
        "owner_cannot_leave",
    )
    _remove(world, "bob", team_id, "bob")
    assert world.membership("bob", team_id) is None
    assert refused(lambda: _remove(world, "bob", team_id, "bob")) == NO_TEAM
    kinds = [e.kind for e in list_team_activity(world.teams, world.stores.activity, "alice", team_id, limit=10, cursor=None, now=utc_now()).items]
    assert kinds == ["team_left", "joined", "invited"]


def test_an_admin_cancels_an_invitation(world: World, team_id: str) -> None:
    world.join(team_id, "bob")
    _role(world, "alice", team_id, "bob", "admin")
    world.invite(team_id, "carol", by="bob")
    _remove(world, "bob", team_id, "carol")
    team = world.teams.get_team(team_id)
    assert team is not None
    assert (team.member_count, team.invited_count) == (2, 0)


def test_only_the_owner_changes_roles_and_transfers(world: World, team_id: str) -> None:
    world.join(team_id, "bob")
    world.join(team_id, "carol")
    _role(world, "alice", team_id, "bob", "admin")
    assert refused(lambda: _role(world, "bob", team_id, "carol", "admin")) == (HTTPStatus.FORBIDDEN, "team_owner_only")
    _role(world, "alice", team_id, "carol", "owner")
    team = world.teams.get_team(team_id)
    assert team is not None
    assert team.owner_id == "carol"
    roles = {m.user_id: m.role for m in world.teams.query_team_members(team_id)}
    assert roles == {"alice": "admin", "bob": "admin", "carol": "owner"}
    _remove(world, "alice", team_id, "alice")  # no longer the owner: may leave


def test_a_stranger_and_an_invited_person_see_no_team(world: World, team_id: str) -> None:
    world.invite(team_id, "bob")
    detail = teams.get_team(world.teams, world.stores.kbs, world.stores.profiles, "bob", team_id)
    assert (detail.team.name, detail.members, detail.kbs, detail.name_of("alice")) == ("销售部", [], [], "Alice")
    assert refused(lambda: teams.get_team(world.teams, world.stores.kbs, world.stores.profiles, "dave", team_id)) == NO_TEAM
    activity = lambda: list_team_activity(world.teams, world.stores.activity, "bob", team_id, limit=10, cursor=None, now=utc_now())  # noqa: E731
    assert refused(activity) == NO_TEAM


def test_deleting_a_team_leaves_no_membership_after_the_cleanup(world: World, team_id: str) -> None:
    world.join(team_id, "bob")
    world.invite(team_id, "carol")
    executions = FakeCleanupExecutions()
    assert refused(lambda: teams.delete_team(world.teams, executions, "bob", team_id)) == (HTTPStatus.FORBIDDEN, "team_owner_only")
    cleanup_id = teams.delete_team(world.teams, executions, "alice", team_id)
    assert world.teams.get_team(team_id) is None
    assert refused(lambda: teams.get_team(world.teams, world.stores.kbs, world.stores.profiles, "bob", team_id)) == NO_TEAM
    cleaner = Cleaner(
        world.stores.cleanups, world.stores.contents, FakeKnowledgeEngine(), FakeUploadObjects(), FakeBackendSlots(), teams=world.teams
    )
    assert cleaner.run(cleanup_id) is True
    assert world.teams.query_team_members(team_id) == []
    assert world.stores.table.counters["teams#bob"]["n"] == 0
    assert world.stores.table.counters["teams#alice"]["n"] == 0


def test_the_teams_limit_refuses_a_create(world: World, team_id: str) -> None:
    world.with_limits(max_per_user=1)
    create = lambda: teams.create_team(world.teams, world.stores.profiles, "alice", "第二", policy=world.policy)  # noqa: E731
    assert refused(create) == (HTTPStatus.CONFLICT, "team_limit_reached")
