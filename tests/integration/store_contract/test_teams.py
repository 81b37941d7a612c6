"""``TeamStore``'s contract, on the fake and on DynamoDB: each transaction's conditions and the storage
error that names the item which stopped it."""

from __future__ import annotations

import pytest

from memmy_kb.domain.storage import AlreadyExists, ConditionFailed, ItemMissing
from memmy_kb.records import ActivityRecord, CleanupRecord, MembershipRecord, TeamKb, TeamRecord
from tests.support.factories import T0, at, kb_record, owner_grant_for, profile_record
from tests.support.store_contract import Backend, entry, refused, stored_kb

TEAM = "tm_1"


def _log(kind: str, minute: int) -> ActivityRecord:
    return entry(kind, "x", minute, kb_id=f"TEAM#{TEAM}")


def _member(user: str, state: str = "member", role: str = "member") -> MembershipRecord:
    return MembershipRecord.model_validate(
        {"user_id": user, "team_id": TEAM, "state": state, "role": role, "invited_by": "alice", "invited_at": T0}
    )


@pytest.fixture
def team(backend: Backend) -> TeamRecord:
    """tm_1, alice's (created through the store), bob and carol registered."""
    backend.seed(profile_record("bob"), profile_record("carol"))
    record = TeamRecord(team_id=TEAM, name="销售部", owner_id="alice", member_count=1, created_at=T0)
    backend.teams.create_team(record, _member("alice", role="owner"), max_teams=5)
    return record


def _invite(backend: Backend, user: str, *, cap: int = 10, minute: int = 1) -> None:
    backend.teams.put_invitation(
        _member(user, "invited"), owner_id="alice", max_members=cap, attempts=None, activity=_log("invited", minute)
    )


def _accept(backend: Backend, user: str, *, max_teams: int = 5, minute: int = 2) -> None:
    joined = _member(user).model_copy(update={"joined_at": at(minute), "recall_default": False})
    backend.teams.accept_invitation(joined, max_teams=max_teams, activity=_log("joined", minute))


def test_create_reads_back_and_counts_the_owners_teams(backend: Backend, team: TeamRecord) -> None:
    stored = backend.teams.get_team(TEAM)
    assert stored is not None
    assert (stored.name, stored.owner_id, stored.member_count, stored.kbs) == ("销售部", "alice", 1, {})
    assert [m.role for m in backend.teams.query_memberships("alice")] == ["owner"]
    second = TeamRecord(team_id="tm_2", name="二", owner_id="alice", created_at=T0)
    owner = _member("alice", role="owner").model_copy(update={"team_id": "tm_2"})
    assert refused(ConditionFailed, lambda: backend.teams.create_team(second, owner, max_teams=1)) == "teams"
    assert refused(AlreadyExists, lambda: backend.teams.create_team(team, _member("alice", role="owner"), max_teams=5)) == "team"


def test_invitations_hold_the_seat_cap_and_refuse_blockers_and_members(backend: Backend, team: TeamRecord) -> None:
    _invite(backend, "bob", cap=2)
    assert refused(ConditionFailed, lambda: _invite(backend, "carol", cap=2)) == "members"
    assert refused(AlreadyExists, lambda: _invite(backend, "bob")) == "membership"
    backend.seed(profile_record("dave").model_copy(update={"blocked_teams": frozenset({TEAM})}))
    assert refused(ConditionFailed, lambda: _invite(backend, "dave")) == "blocked"
    stranger = _member("erin", "invited").model_copy(update={"invited_by": "carol"})
    put = lambda: backend.teams.put_invitation(stranger, owner_id="alice", max_members=10, attempts=None, activity=_log("invited", 3))  # noqa: E731
    assert refused(ConditionFailed, put) == "inviter"
    stored = backend.teams.get_team(TEAM)
    assert stored is not None
    assert (stored.member_count, stored.invited_count) == (1, 1)
    assert [m.user_id for m in backend.teams.query_team_members(TEAM)] == ["alice", "bob"]


def test_accept_once_and_within_the_teams_limit(backend: Backend, team: TeamRecord) -> None:
    _invite(backend, "bob")
    _invite(backend, "carol", minute=2)
    _accept(backend, "bob", minute=3)
    assert refused(ConditionFailed, lambda: _accept(backend, "bob", minute=4)) == "membership"
    own = TeamRecord(team_id="tm_c", name="carol's", owner_id="carol", member_count=1, created_at=T0)
    backend.teams.create_team(own, _member("carol", role="owner").model_copy(update={"team_id": "tm_c"}), max_teams=5)
    assert refused(ConditionFailed, lambda: _accept(backend, "carol", max_teams=1, minute=5)) == "teams"
    bob = backend.teams.get_membership("bob", TEAM)
    assert bob is not None
    assert (bob.state, bob.recall_default, bob.joined_at) == ("member", False, at(3))
    stored = backend.teams.get_team(TEAM)
    assert stored is not None
    assert (stored.member_count, stored.invited_count) == (2, 1)
    items, _ = backend.activity.query_activity(f"TEAM#{TEAM}", limit=10, cursor=None, now=0)
    assert [e.kind for e in items] == ["joined", "invited", "invited"]


def test_delete_membership_as_read_and_block_the_team(backend: Backend, team: TeamRecord) -> None:
    _invite(backend, "bob")
    assert refused(ConditionFailed, lambda: backend.teams.delete_membership(_member("bob"), activity=_log("removed", 5))) == "membership"
    backend.teams.delete_membership(_member("bob", "invited"), activity=_log("declined", 6), block_team=True)
    profile = backend.profiles.get_profile("bob")
    assert profile is not None
    assert profile.blocked_teams == frozenset({TEAM})
    assert refused(ItemMissing, lambda: backend.teams.delete_membership(_member("bob", "invited"), activity=_log("declined", 7))) == "membership"
    stored = backend.teams.get_team(TEAM)
    assert stored is not None
    assert (stored.member_count, stored.invited_count) == (1, 0)


def test_roles_and_transfer(backend: Backend, team: TeamRecord) -> None:
    _invite(backend, "bob")
    _accept(backend, "bob")
    backend.teams.set_role(TEAM, "bob", "admin", activity=_log("role_changed", 5))
    assert refused(ConditionFailed, lambda: backend.teams.set_role(TEAM, "alice", "member", activity=_log("role_changed", 6))) == "membership"
    assert refused(ConditionFailed, lambda: backend.teams.transfer_ownership(TEAM, "bob", "alice", activity=_log("role_changed", 7))) == "team"
    backend.teams.transfer_ownership(TEAM, "alice", "bob", activity=_log("role_changed", 8))
    roles = {m.user_id: m.role for m in backend.teams.query_team_members(TEAM)}
    assert roles == {"alice": "admin", "bob": "owner"}
    stored = backend.teams.get_team(TEAM)
    assert stored is not None
    assert stored.owner_id == "bob"


def test_delete_team_then_its_memberships(backend: Backend, team: TeamRecord) -> None:
    kb = kb_record("kb_1", owner_id="alice")
    backend.seed(kb.model_copy(update={"teams": frozenset({TEAM})}), owner_grant_for(kb))
    _invite(backend, "bob")
    _accept(backend, "bob")
    _invite(backend, "carol", minute=3)
    cleanup = CleanupRecord(
        cleanup_id="cl_1", target="team", kb_id=TEAM, memos_kb_id="", owner_id="alice", created_at=T0, next_attempt_at=T0
    )
    stale = team.model_copy(update={"version": 3})
    assert refused(ConditionFailed, lambda: backend.teams.delete_team(stale, cleanup)) == "team"
    current = backend.teams.get_team(TEAM)
    assert current is not None
    # As read after a share: the team's META lists the KB (the team-shares writes keep both sides together).
    shared = TeamKb(memos_kb_id=kb.memos_kb_id, owner_id="alice", shared_by="alice", shared_at=T0)
    backend.teams.delete_team(current.model_copy(update={"kbs": {"kb_1": shared}}), cleanup)
    assert backend.teams.get_team(TEAM) is None
    assert stored_kb(backend).teams == frozenset()
    head, _ = backend.cleanups.get_cleanup("cl_1")
    assert head is not None
    assert head.target == "team"
    assert backend.teams.delete_team_memberships(TEAM, 1) is False
    assert backend.teams.delete_team_memberships(TEAM, 10) is True
    assert backend.teams.query_memberships("bob") == []
    assert backend.teams.query_team_members(TEAM) == []
