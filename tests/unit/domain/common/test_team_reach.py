"""Read-time expansion of memberships into KBs (``memmy_kb.domain.team_reach``) and the access and recall
rules built on it (``memmy_kb.domain.access``), on the fake store."""

from __future__ import annotations

import pytest

from memmy_kb.domain.access import compute_recall_scope, recall_grants, require_access, require_owner
from memmy_kb.domain.ports.team_shares import Reach
from memmy_kb.domain.team_reach import TeamGrant, readable, recall_reach, team_grants
from memmy_kb.errors import Forbidden, NotFound
from memmy_kb.records import MembershipRecord, TeamKb, TeamRecord
from tests.support.factories import T0, grant_record, kb_record, owner_grant_for
from tests.support.teams import new_membership, new_team


def team_listing(team_id: str, *kb_ids: str, owner: str = "alice") -> TeamRecord:
    shared = {
        kb: TeamKb(memos_kb_id=f"m-{kb}", owner_id=owner, shared_by=owner, shared_at=T0) for kb in kb_ids
    }
    return new_team(team_id, owner).model_copy(update={"kbs": shared, "kb_count": len(shared)})


def reach(*teams: TeamRecord, memberships: list[MembershipRecord], grants=()) -> Reach:
    return Reach(list(grants), memberships, {t.team_id: t for t in teams})


def test_a_member_reads_each_kb_of_their_teams_once_naming_every_team():
    seen = team_grants(
        reach(
            team_listing("tm_a", "kb_1", "kb_2"),
            team_listing("tm_b", "kb_2"),
            memberships=[new_membership("bob", "tm_b"), new_membership("bob", "tm_a")],
        ),
        "bob",
    )
    assert sorted(seen) == ["kb_1", "kb_2"]
    assert seen["kb_2"].teams == (("tm_a", "团队 tm_a"), ("tm_b", "团队 tm_b"))
    assert (seen["kb_1"].role, seen["kb_1"].memos_kb_id, seen["kb_1"].owner_id) == ("reader", "m-kb_1", "alice")


def test_an_invitation_or_a_team_without_meta_reads_nothing():
    invited = reach(team_listing("tm_a", "kb_1"), memberships=[new_membership("bob", "tm_a", state="invited")])
    gone = reach(memberships=[new_membership("bob", "tm_a")])
    assert team_grants(invited, "bob") == {} == team_grants(gone, "bob")


def test_recall_follows_each_members_choice_then_their_default():
    chose = new_membership("bob", "tm_a", recall_default=False).model_copy(update={"recall": {"kb_1": True}})
    scope = recall_reach(reach(team_listing("tm_a", "kb_1", "kb_2"), memberships=[chose]), "bob")
    assert [g.kb_id for g in scope] == ["kb_1"]
    # Two teams listing a KB: on when either membership's choice is.
    off = new_membership("bob", "tm_b").model_copy(update={"recall": {"kb_1": False}})
    both = reach(team_listing("tm_a", "kb_1"), team_listing("tm_b", "kb_1"), memberships=[chose, off])
    assert [g.kb_id for g in recall_reach(both, "bob")] == ["kb_1"]


def test_a_direct_grant_wins_and_is_one_scope_entry():
    direct = grant_record("bob", "kb_1", recall=True)
    teams = reach(team_listing("tm_a", "kb_1"), memberships=[new_membership("bob", "tm_a")], grants=[direct])
    (entry,) = recall_reach(teams, "bob")
    assert (type(entry), entry.kb_id, entry.recall) == (type(direct), "kb_1", True)
    assert [type(g) for g in readable(teams, "bob")] == [type(direct)]


def test_a_kb_held_directly_with_recall_off_stays_off_when_a_team_lists_it():
    # E.g. the owner turned recall off for their own KB, then shared it with a team they are in: the
    # membership's default for new shares does not turn it back on.
    direct = grant_record("bob", "kb_1", recall=False)
    teams = reach(team_listing("tm_a", "kb_1"), memberships=[new_membership("bob", "tm_a")], grants=[direct])
    assert recall_reach(teams, "bob") == []


@pytest.fixture
def shared(stores):
    """alice's kb_1 listed by tm_a; bob a member of it, dave invited; carol nobody."""
    kb = kb_record()
    stores.table.seed(kb, owner_grant_for(kb), team_listing("tm_a", "kb_1"))
    stores.table.seed(new_membership("bob", "tm_a"), new_membership("dave", "tm_a", state="invited"))
    return stores


def test_access_through_a_team_is_a_readers(shared):
    grant = require_access(shared.kbs, "bob", "kb_1")
    assert isinstance(grant, TeamGrant)
    assert grant.role == "reader"
    with pytest.raises(Forbidden):
        require_owner(shared.kbs, "bob", "kb_1")
    for stranger in ("dave", "carol"):
        with pytest.raises(NotFound) as refused:
            require_owner(shared.kbs, stranger, "kb_1")
        assert refused.value.code == "kb_not_found"


def test_the_recall_scope_expands_memberships_and_drops_a_removed_member(shared):
    assert {e.kb_id for e in compute_recall_scope(shared.kbs, "bob")} == {"kb_1"}
    assert recall_grants(shared.kbs, "dave") == []
    del shared.table.memberships[("bob", "tm_a")]
    assert compute_recall_scope(shared.kbs, "bob") == frozenset()
