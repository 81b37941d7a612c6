"""``TeamShareStore``'s contract (the KB store's team shares), on the fake and on DynamoDB: a KB listed by
a team's META and the team on the KB's, written together or not at all, and the reads that expand a
caller's memberships."""

from __future__ import annotations

import pytest

from memmy_kb.domain.storage import AlreadyExists, ConditionFailed, ItemMissing
from memmy_kb.records import KnowledgeBaseRecord, TeamKb
from tests.support.factories import T0, activity_for, grant_record, kb_record, owner_grant_for
from tests.support.store_contract import Backend, refused, stored_kb
from tests.support.teams import new_membership, new_team

SHARE = TeamKb(memos_kb_id="m-kb_1", owner_id="alice", shared_by="alice", shared_at=T0)


@pytest.fixture
def team(backend: Backend, kb: KnowledgeBaseRecord) -> Backend:
    """tm_a, alice's, with bob a member and dave invited."""
    backend.seed(new_team("tm_a", "alice"), new_membership("alice", "tm_a", role="owner"))
    backend.seed(new_membership("bob", "tm_a"), new_membership("dave", "tm_a", state="invited"))
    return backend


def put(backend: Backend, kb_id: str = "kb_1", team_id: str = "tm_a", share: TeamKb = SHARE, **caps: int) -> None:
    limits = {"max_team_kbs": 50, "max_kb_teams": 20, **caps}
    backend.kbs.put_team_share(
        team_id, kb_id, share, activity=activity_for("team_shared", kb_id, team_id), **limits
    )


def test_a_share_lists_the_kb_on_both_sides_and_the_members_reach_reads_it(team: Backend) -> None:
    put(team)

    teams = team.kbs.batch_get_teams(["tm_a", "tm_nope"])
    assert list(teams) == ["tm_a"]
    assert (teams["tm_a"].kbs, teams["tm_a"].kb_count, teams["tm_a"].version) == ({"kb_1": SHARE}, 1, 1)
    assert stored_kb(team).teams == {"tm_a"}
    reach = team.kbs.read_reach("bob", with_grants=True)
    assert ([m.team_id for m in reach.memberships], list(reach.teams), reach.grants) == (["tm_a"], ["tm_a"], [])
    # An invitation is read, its team is not.
    invited = team.kbs.read_reach("dave", with_grants=False)
    assert ([m.state for m in invited.memberships], invited.teams) == (["invited"], {})


def test_the_reach_with_grants_reads_them_beside_the_memberships(team: Backend) -> None:
    other = kb_record("kb_2", owner_id="carol")
    team.seed(other, owner_grant_for(other), grant_record("bob", "kb_2", owner_id="carol"))
    reach = team.kbs.read_reach("bob", with_grants=True)
    assert [g.kb_id for g in reach.grants] == ["kb_2"]
    assert team.kbs.read_reach("bob", with_grants=False).grants == []


def test_refusals_name_what_stopped_the_share_and_write_nothing(team: Backend) -> None:
    put(team)
    assert refused(AlreadyExists, lambda: put(team)) == "team_share"
    second = kb_record("kb_2", owner_id="alice")
    team.seed(second, owner_grant_for(second))
    assert refused(ConditionFailed, lambda: put(team, "kb_2", max_team_kbs=1)) == "team_kb_count"
    team.seed(new_team("tm_b", "alice"), new_membership("alice", "tm_b", role="owner"))
    assert refused(ConditionFailed, lambda: put(team, team_id="tm_b", max_kb_teams=1)) == "kb_team_count"
    assert refused(ItemMissing, lambda: put(team, "kb_2", team_id="tm_nope")) == "team"
    not_owner = SHARE.model_copy(update={"shared_by": "bob"})
    assert refused(ItemMissing, lambda: put(team, "kb_2", share=not_owner)) == "kb"
    assert stored_kb(team, "kb_2").teams == frozenset()
    assert team.kbs.batch_get_teams(["tm_b"])["tm_b"].kbs == {}


def test_a_sharer_who_is_no_longer_a_member_shares_nothing(team: Backend) -> None:
    team.seed(new_membership("alice", "tm_a", role="owner", state="invited"))
    assert refused(ItemMissing, lambda: put(team)) == "team"
    assert stored_kb(team).teams == frozenset()


def test_an_unshare_takes_both_sides_and_a_second_one_finds_nothing(team: Backend) -> None:
    put(team)
    team.kbs.delete_team_share("tm_a", "kb_1", activity=activity_for("team_unshared", "kb_1", "tm_a"))
    stored = team.kbs.batch_get_teams(["tm_a"])["tm_a"]
    assert (stored.kbs, stored.kb_count, stored.version, stored_kb(team).teams) == ({}, 0, 2, frozenset())
    assert refused(
        ItemMissing, lambda: team.kbs.delete_team_share("tm_a", "kb_1", activity=activity_for("team_unshared", "kb_1", "tm_a"))
    ) == "team_share"


def test_a_members_recall_choice_is_kept_on_their_membership_only_while_a_member(team: Backend) -> None:
    team.kbs.update_membership_recall("bob", "tm_a", "kb_1", False)
    (membership,) = team.kbs.read_reach("bob", with_grants=False).memberships
    assert (membership.recall, membership.recalls("kb_1"), membership.recalls("kb_9")) == ({"kb_1": False}, False, True)
    assert refused(ItemMissing, lambda: team.kbs.update_membership_recall("dave", "tm_a", "kb_1", True)) == "membership"
    assert refused(ItemMissing, lambda: team.kbs.update_membership_recall("carol", "tm_a", "kb_1", True)) == "membership"


def test_a_share_decides_on_the_team_and_the_callers_membership_read_together(team: Backend) -> None:
    reads = team.kbs.read_team_share("bob", "tm_a")
    assert (reads.team is not None, reads.membership is not None) == (True, True)
    assert reads.membership is not None
    assert reads.membership.state == "member"
    stranger = team.kbs.read_team_share("carol", "tm_nope")
    assert (stranger.team, stranger.membership) == (None, None)
