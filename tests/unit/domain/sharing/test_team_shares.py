"""Sharing a KB with a team and unsharing it (``memmy_kb.domain.sharing.team_shares``), on the fake store."""

from __future__ import annotations

import pytest

from memmy_kb.domain.knowledge_bases.manage import list_knowledge_bases, set_recall
from memmy_kb.domain.sharing.team_shares import (
    TeamLimits,
    list_team_shares,
    share_with_team,
    unshare_from_team,
)
from memmy_kb.errors import DomainError, Forbidden, NotFound
from tests.support.factories import T0, kb_record, owner_grant_for, profile_record
from tests.support.teams import new_membership, new_team

LIMITS = TeamLimits()


def share(stores, kb_id="kb_1", team_id="tm_a", caller="alice", limits=LIMITS):
    return share_with_team(stores.kbs, caller, kb_id, team_id, limits=limits, retention_days=30, clock=lambda: T0)


def unshare(stores, kb_id="kb_1", team_id="tm_a", caller="alice"):
    unshare_from_team(stores.kbs, caller, kb_id, team_id, retention_days=30, clock=lambda: T0)


def code_of(action) -> str | None:
    with pytest.raises(DomainError) as refused:
        action()
    return refused.value.code


@pytest.fixture
def team(stores):
    """alice owns kb_1 and kb_2 and the team tm_a; bob is a member, erin an admin, dave invited."""
    for kb_id in ("kb_1", "kb_2"):
        kb = kb_record(kb_id)
        stores.table.seed(kb, owner_grant_for(kb))
    stores.table.seed(new_team("tm_a", "alice"), new_membership("alice", "tm_a", role="owner"))
    stores.table.seed(new_membership("bob", "tm_a"), new_membership("erin", "tm_a", role="admin"))
    stores.table.seed(new_membership("dave", "tm_a", state="invited"), profile_record("alice", display_name="Alice"))
    return stores


def test_a_share_lists_the_kb_on_both_sides_and_logs_it(team):
    shared = share(team)
    assert (shared.kb_count, shared.kbs["kb_1"].shared_by) == (1, "alice")
    stored = team.table.teams["tm_a"]
    assert (set(stored.kbs), stored.kb_count, stored.version) == ({"kb_1"}, 1, 1)
    assert team.table.kbs["kb_1"].teams == {"tm_a"}
    assert [(a.kind, a.subject) for a in team.table.activity.values()] == [("team_shared", "tm_a")]
    views = list_team_shares(team.kbs, team.profiles, "alice", "kb_1")
    assert [(v.team_id, v.shared_by_name) for v in views] == [("tm_a", "Alice")]


@pytest.mark.parametrize(
    ("caller", "team_id", "error", "code"),
    [
        ("dave", "tm_a", NotFound, "kb_not_found"),  # not the KB's: the missing KB's answer
        ("alice", "tm_nope", NotFound, "team_not_found"),
    ],
)
def test_share_refusals(team, caller, team_id, error, code):
    with pytest.raises(error) as refused:
        share(team, team_id=team_id, caller=caller)
    assert refused.value.code == code


def test_only_a_member_of_the_team_shares_with_it(team):
    del team.table.memberships[("alice", "tm_a")]
    assert code_of(lambda: share(team)) == "team_not_found"
    team.table.seed(new_membership("alice", "tm_a", state="invited"))
    assert code_of(lambda: share(team)) == "team_not_found"
    assert team.table.teams["tm_a"].kbs == {}


def test_twice_and_past_either_limit_is_409(team):
    share(team)
    assert code_of(lambda: share(team)) == "already_shared"
    assert code_of(lambda: share(team, "kb_2", limits=TeamLimits(max_team_kbs=1))) == "team_kb_limit_reached"
    team.table.seed(new_team("tm_b", "alice"), new_membership("alice", "tm_b", role="owner"))
    assert code_of(lambda: share(team, team_id="tm_b", limits=TeamLimits(max_kb_teams=1))) == "kb_team_limit_reached"
    assert team.table.kbs["kb_1"].teams == {"tm_a"}


def test_unshare_by_the_kb_owner_or_a_team_admin_not_a_member(team):
    share(team)
    with pytest.raises(Forbidden):
        unshare(team, caller="bob")
    assert code_of(lambda: unshare(team, caller="dave")) == "team_not_found"
    unshare(team, caller="erin")
    assert (team.table.teams["tm_a"].kbs, team.table.teams["tm_a"].version, team.table.kbs["kb_1"].teams) == (
        {},
        2,
        frozenset(),
    )
    assert code_of(lambda: unshare(team)) == "team_share_not_found"


def test_the_kb_list_and_the_toggle_of_a_team_reader(team):
    share(team)
    (view,) = list_knowledge_bases(team.kbs, "bob")
    assert (view.kb.kb_id, view.grant.role, view.grant.recall) == ("kb_1", "reader", True)
    assert set_recall(team.kbs, team.profiles, "bob", "kb_1", False).grant.recall is False
    assert team.table.memberships[("bob", "tm_a")].recall == {"kb_1": False}
    assert list_knowledge_bases(team.kbs, "erin")[0].grant.recall is True
    with pytest.raises(NotFound):
        set_recall(team.kbs, team.profiles, "dave", "kb_1", True)
