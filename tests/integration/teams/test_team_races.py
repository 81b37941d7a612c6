"""Teams under concurrency, on moto's DynamoDB: the member cap (members plus open invitations) holds
whatever the order of concurrent invitations and accepts."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from http import HTTPStatus

import pytest

from memmy_kb.adapters.dynamodb.activity import DynamoRateCounters
from memmy_kb.adapters.dynamodb.teams import DynamoTeamStore
from memmy_kb.domain.teams import invitations
from memmy_kb.domain.teams.limits import TeamLimits, TeamPolicy
from memmy_kb.errors import DomainError
from tests.support.sharing import register
from tests.support.teams_api import create_team

PEOPLE = [f"user{i}" for i in range(12)]


@pytest.fixture
def people(service):
    register(service, "alice", "Alice")
    for user in PEOPLE:
        register(service, user, user.title())
    return service


def _policy(service, max_members: int) -> TeamPolicy:
    return TeamPolicy(DynamoRateCounters(service.stores.table), TeamLimits(max_members=max_members), 180)


def _outcome(action) -> str:
    try:
        action()
    except DomainError as err:
        return err.code
    return "ok"


def test_concurrent_invitations_fill_the_cap_exactly(people):
    team_id = create_team(people)
    store, profiles, policy = DynamoTeamStore(people.stores.table), people.stores.profiles, _policy(people, 4)

    def invite(user: str) -> str:
        return _outcome(lambda: invitations.invite(store, profiles, "alice", team_id, user, policy=policy))

    with ThreadPoolExecutor(max_workers=12) as pool:
        outcomes = list(pool.map(invite, PEOPLE))
    assert outcomes.count("ok") == 3  # the owner holds the fourth seat
    assert set(outcomes) == {"ok", "team_member_limit_reached"}
    team = store.get_team(team_id)
    assert team is not None
    assert (team.member_count, team.invited_count) == (1, 3)


def test_concurrent_accepts_at_the_member_cap_never_exceed_it(people):
    team_id = create_team(people)
    store, profiles, policy = DynamoTeamStore(people.stores.table), people.stores.profiles, _policy(people, 4)
    invited = PEOPLE[:3]
    for user in invited:
        invitations.invite(store, profiles, "alice", team_id, user, policy=policy)

    def act(user: str) -> str:
        if user in invited:
            return _outcome(lambda: invitations.accept(store, profiles, user, team_id, policy=policy))
        return _outcome(lambda: invitations.invite(store, profiles, "alice", team_id, user, policy=policy))

    with ThreadPoolExecutor(max_workers=12) as pool:
        outcomes = dict(zip(PEOPLE, pool.map(act, PEOPLE), strict=True))
    assert [outcomes[u] for u in invited] == ["ok"] * 3
    assert {outcomes[u] for u in PEOPLE[3:]} == {"team_member_limit_reached"}
    team = store.get_team(team_id)
    assert team is not None
    assert (team.member_count, team.invited_count) == (4, 0)
    members = [m for m in store.query_team_members(team_id) if m.state == "member"]
    assert len(members) == 4
    assert people.call("GET", f"/teams/{team_id}", invited[0]).status == HTTPStatus.OK
