"""Teams over the real handlers and the template's routes: invitations by phone, email and user id,
consent (accept, decline, block), roles, leaving, transfer, the limits, and deleting a team."""

from __future__ import annotations

from datetime import timedelta
from http import HTTPStatus

import pytest

from memmy_kb.adapters.dynamodb.cleanups import DynamoCleanupStore
from memmy_kb.composition import reset_composition
from memmy_kb.records import utc_now
from tests.support.sharing import ALICE_PHONE, BOB_PHONE, register
from tests.support.teams_api import accept, create_team, error, invite, join, team

NO_ACCOUNT = (HTTPStatus.NOT_FOUND, "account_not_found")


@pytest.fixture
def people(service):
    register(service, "alice", "Alice", phone=ALICE_PHONE)
    register(service, "bob", "Bob", phone=BOB_PHONE)
    register(service, "carol", "Carol", email="carol@example.com")
    register(service, "dave", "Dave")
    return service


def limits(monkeypatch, **env):
    for key, value in env.items():
        monkeypatch.setenv(key, str(value))
    reset_composition()


def test_create_invite_by_phone_email_and_user_id_then_accept(people):
    team_id = create_team(people)
    assert team_id.startswith("tm_")
    for identifier, user in (("139 0013 9000", "bob"), (" Carol@Example.com ", "carol"), ("dave", "dave")):
        reply = invite(people, team_id, identifier)
        assert reply.status == HTTPStatus.CREATED
        assert (reply.body["user_id"], reply.body["state"], reply.body["role"]) == (user, "invited", "member")
    invited = people.call("GET", "/teams", "bob").body["items"]
    assert [(t["id"], t["state"], t["invited_by"]["display_name"], t["owner"]["display_name"]) for t in invited] == [
        (team_id, "invited", "Alice", "Alice")
    ]
    assert (team(people, team_id, "bob")["members"], team(people, team_id, "bob")["knowledge_bases"]) == ([], [])
    joined = accept(people, team_id, "bob")
    assert (joined.status, joined.body["state"]) == (HTTPStatus.OK, "member")
    detail = team(people, team_id, "bob")
    assert (detail["member_count"], detail["invited_count"]) == (2, 2)
    assert [(m["user_id"], m["role"], m["state"]) for m in detail["members"]] == [
        ("alice", "owner", "member"),
        ("bob", "member", "member"),
        ("carol", "member", "invited"),
        ("dave", "member", "invited"),
    ]
    kinds = [e["kind"] for e in people.call("GET", f"/teams/{team_id}/activity", "bob").body["items"]]
    assert kinds == ["joined", "invited", "invited", "invited"]


def test_a_stranger_gets_the_404_of_no_team(people):
    team_id = create_team(people)
    for method, path in (("GET", f"/teams/{team_id}"), ("GET", f"/teams/{team_id}/activity"), ("DELETE", f"/teams/{team_id}")):
        assert error(people.call(method, path, "dave")) == (HTTPStatus.NOT_FOUND, "team_not_found")
    assert error(people.call("GET", "/teams/tm_missing", "alice")) == (HTTPStatus.NOT_FOUND, "team_not_found")


def test_an_identifier_two_accounts_claim_is_ambiguous(people):
    register(people, "bob2", "Bob Two", phone=BOB_PHONE)
    assert error(invite(people, create_team(people), BOB_PHONE)) == (HTTPStatus.CONFLICT, "identifier_ambiguous")


def test_blocking_is_answered_as_no_account(people):
    team_id = create_team(people)
    assert invite(people, team_id, "bob").status == HTTPStatus.CREATED
    declined = people.call("POST", f"/teams/{team_id}/decline", "bob", body={"block": "team"})
    assert declined.status == HTTPStatus.NO_CONTENT
    assert people.call("GET", "/teams", "bob").body["items"] == []
    assert error(invite(people, team_id, "bob")) == NO_ACCOUNT
    assert invite(people, team_id, "carol@example.com").status == HTTPStatus.CREATED
    assert people.call("POST", f"/teams/{team_id}/decline", "carol", body={"block": "owner"}).status == HTTPStatus.NO_CONTENT
    assert [b["user_id"] for b in people.call("GET", "/me/blocked", "carol").body["items"]] == ["alice"]
    assert error(invite(people, team_id, "carol@example.com")) == NO_ACCOUNT
    assert error(invite(people, create_team(people, name="另一个"), "carol")) == NO_ACCOUNT  # the owner is blocked
    assert error(invite(people, team_id, "nobody@example.com")) == NO_ACCOUNT


def test_roles_removal_leaving_and_transfer(people):
    team_id = create_team(people)
    for user in ("bob", "carol", "dave"):
        join(people, team_id, user)
    assert people.call("PATCH", f"/teams/{team_id}/members/bob", "alice", body={"role": "admin"}).status == HTTPStatus.NO_CONTENT
    assert error(people.call("DELETE", f"/teams/{team_id}/members/alice", "bob")) == (HTTPStatus.FORBIDDEN, "team_owner_only")
    assert error(people.call("DELETE", f"/teams/{team_id}/members/bob", "carol")) == (HTTPStatus.FORBIDDEN, "team_admin_only")
    assert error(people.call("PATCH", f"/teams/{team_id}", "carol", body={"name": "x"})) == (HTTPStatus.FORBIDDEN, "team_admin_only")
    renamed = people.call("PATCH", f"/teams/{team_id}", "bob", body={"name": "  市场部  "})
    assert (renamed.status, renamed.body["name"]) == (HTTPStatus.OK, "市场部")
    assert people.call("DELETE", f"/teams/{team_id}/members/dave", "bob").status == HTTPStatus.NO_CONTENT
    assert people.call("DELETE", f"/teams/{team_id}/members/carol", "carol").status == HTTPStatus.NO_CONTENT
    assert error(people.call("DELETE", f"/teams/{team_id}/members/alice", "alice")) == (
        HTTPStatus.UNPROCESSABLE_ENTITY,
        "owner_cannot_leave",
    )
    assert error(people.call("DELETE", f"/teams/{team_id}", "bob")) == (HTTPStatus.FORBIDDEN, "team_owner_only")
    assert people.call("PATCH", f"/teams/{team_id}/members/bob", "alice", body={"role": "owner"}).status == HTTPStatus.NO_CONTENT
    detail = team(people, team_id)
    assert (detail["owner"]["user_id"], detail["role"]) == ("bob", "admin")
    assert people.call("DELETE", f"/teams/{team_id}/members/alice", "alice").status == HTTPStatus.NO_CONTENT
    assert [(m["user_id"], m["role"]) for m in team(people, team_id, "bob")["members"]] == [("bob", "owner")]


def test_the_member_limit_counts_invitations(people, monkeypatch):
    limits(monkeypatch, TEAM_MAX_MEMBERS=2)
    team_id = create_team(people)
    assert invite(people, team_id, "bob").status == HTTPStatus.CREATED
    assert error(invite(people, team_id, "carol")) == (HTTPStatus.CONFLICT, "team_member_limit_reached")


def test_the_teams_limit(people, monkeypatch):
    limits(monkeypatch, TEAM_MAX_PER_USER=1)
    team_id = create_team(people)
    assert error(people.call("POST", "/teams", "alice", body={"name": "二"})) == (HTTPStatus.CONFLICT, "team_limit_reached")
    create_team(people, "bob", "Bob's")
    assert invite(people, team_id, "bob").status == HTTPStatus.CREATED
    assert error(accept(people, team_id, "bob")) == (HTTPStatus.CONFLICT, "team_limit_reached")


def test_invitations_past_the_hourly_limit_are_429(people, monkeypatch):
    limits(monkeypatch, TEAM_INVITES_PER_HOUR=2)
    team_id = create_team(people)
    assert invite(people, team_id, "bob").status == HTTPStatus.CREATED
    assert invite(people, team_id, "carol").status == HTTPStatus.CREATED
    refused = invite(people, team_id, "dave")
    assert error(refused) == (HTTPStatus.TOO_MANY_REQUESTS, "rate_limited")
    assert int(refused.headers["Retry-After"]) >= 1


def test_a_deleted_team_leaves_no_membership_after_the_cleanup(people, monkeypatch):
    limits(monkeypatch, TEAM_MAX_PER_USER=1)
    team_id = create_team(people)
    join(people, team_id, "bob")
    assert invite(people, team_id, "carol").status == HTTPStatus.CREATED
    assert people.call("DELETE", f"/teams/{team_id}", "alice").status == HTTPStatus.NO_CONTENT
    for user in ("alice", "bob", "carol"):
        assert people.call("GET", "/teams", user).body["items"] == []
    assert error(people.call("GET", f"/teams/{team_id}", "bob")) == (HTTPStatus.NOT_FOUND, "team_not_found")
    due = DynamoCleanupStore(people.stores.table).query_due_cleanups(utc_now() + timedelta(days=1), 10)
    [cleanup] = [c for c in due if c.target == "team" and c.kb_id == team_id]
    assert any(people.invoke("CleanupFunction", {"cleanup_id": cleanup.cleanup_id})["done"] for _ in range(3))
    left = list(
        people.stores.table.query(
            IndexName="GSI1",
            KeyConditionExpression="GSI1PK = :team",
            ExpressionAttributeValues={":team": {"S": f"TEAM#{team_id}"}},
        )
    )
    assert left == []
    # The members' teams counters went back down: each may be in one team again.
    assert create_team(people, "bob", "Bob's")
    assert create_team(people, "alice", "Alice's")


def test_a_plain_decline_blocks_nothing(people):
    team_id = create_team(people)
    assert invite(people, team_id, "bob").status == HTTPStatus.CREATED
    assert people.call("POST", f"/teams/{team_id}/decline", "bob").status == HTTPStatus.NO_CONTENT
    assert people.call("GET", "/teams", "bob").body["items"] == []
    assert invite(people, team_id, "bob").status == HTTPStatus.CREATED  # invited again: no block
    kinds = [e["kind"] for e in people.call("GET", f"/teams/{team_id}/activity", "alice").body["items"]]
    assert kinds == ["invited", "declined", "invited"]
