"""Invitations: identifiers resolved as shares resolve them, blocks answered as no account, accept and
decline (with a block), and the limits on invitations."""

from __future__ import annotations

from http import HTTPStatus

import pytest

from memmy_kb.domain.sharing.profiles import register_profile
from memmy_kb.domain.teams import invitations
from memmy_kb.errors import TooManyRequests
from tests.support.domain import refused, register
from tests.support.factories import claims, profile_record
from tests.support.teams import BOB_PHONE, CAROL_EMAIL, World

NO_ACCOUNT = (HTTPStatus.NOT_FOUND, "account_not_found")
NO_TEAM = (HTTPStatus.NOT_FOUND, "team_not_found")


def test_invite_by_phone_email_or_user_id_names_the_account(world: World, team_id: str) -> None:
    assert world.invite(team_id, " +86 139-0013-9000 ").user_id == "bob"
    assert world.invite(team_id, "Carol@Example.com").user_id == "carol"
    invitation = world.invite(team_id, "dave")
    assert (invitation.user_id, invitation.state, invitation.invited_by) == ("dave", "invited", "alice")
    team = world.teams.get_team(team_id)
    assert team is not None
    assert (team.member_count, team.invited_count) == (1, 3)


def test_an_identifier_two_accounts_claim_is_ambiguous(world: World, team_id: str) -> None:
    register(world.stores, profile_record("bob2", display_name="Bob Two", phone=BOB_PHONE))
    assert refused(lambda: world.invite(team_id, BOB_PHONE)) == (HTTPStatus.CONFLICT, "identifier_ambiguous")


def test_unknown_accounts_are_not_found(world: World, team_id: str) -> None:
    assert refused(lambda: world.invite(team_id, "nobody@example.com")) == NO_ACCOUNT
    assert refused(lambda: world.invite(team_id, "no-such-user")) == NO_ACCOUNT


def test_someone_who_blocked_the_team_or_its_owner_is_answered_as_no_account(world: World, team_id: str) -> None:
    world.invite(team_id, "bob")
    invitations.decline(
        world.teams, world.stores.kbs, world.stores.profiles, "bob", team_id,
        block="team", policy=world.policy, share_policy=world.share_policy,
    )
    profile = world.stores.profiles.get_profile("bob")
    assert profile is not None
    assert team_id in profile.blocked_teams
    assert world.membership("bob", team_id) is None
    assert refused(lambda: world.invite(team_id, "bob")) == NO_ACCOUNT

    world.invite(team_id, CAROL_EMAIL)
    invitations.decline(
        world.teams, world.stores.kbs, world.stores.profiles, "carol", team_id,
        block="owner", policy=world.policy, share_policy=world.share_policy,
    )
    carol = world.stores.profiles.get_profile("carol")
    assert carol is not None
    assert "alice" in carol.blocked
    assert refused(lambda: world.invite(team_id, CAROL_EMAIL)) == NO_ACCOUNT


def test_accept_makes_a_member_with_the_recall_of_new_shares(world: World, team_id: str) -> None:
    world.stores.profiles.update_profile_settings("bob", recall_new_shares=False, now=world.stores.table.profiles["bob"].updated_at)
    world.join(team_id, "bob")
    joined = world.membership("bob", team_id)
    assert joined is not None
    assert (joined.state, joined.role, joined.recall_default) == ("member", "member", False)
    team = world.teams.get_team(team_id)
    assert team is not None
    assert (team.member_count, team.invited_count) == (2, 0)
    assert world.stores.table.counters["teams#bob"]["n"] == 1
    again = refused(lambda: invitations.accept(world.teams, world.stores.profiles, "bob", team_id, policy=world.policy))
    assert again == (HTTPStatus.CONFLICT, "already_member")
    assert refused(lambda: world.invite(team_id, "bob")) == (HTTPStatus.CONFLICT, "already_member")


def test_inviting_twice_is_409_and_strangers_and_members_cannot_invite(world: World, team_id: str) -> None:
    world.invite(team_id, "bob")
    assert refused(lambda: world.invite(team_id, "bob")) == (HTTPStatus.CONFLICT, "already_invited")
    assert refused(lambda: world.invite(team_id, "carol", by="bob")) == NO_TEAM  # invited, not a member
    invitations.accept(world.teams, world.stores.profiles, "bob", team_id, policy=world.policy)
    assert refused(lambda: world.invite(team_id, "carol", by="bob")) == (HTTPStatus.FORBIDDEN, "team_admin_only")
    assert refused(lambda: world.invite(team_id, "carol", by="dave")) == NO_TEAM


def test_the_member_limit_counts_open_invitations(world: World, team_id: str) -> None:
    world.with_limits(max_members=3)
    world.invite(team_id, "bob")
    world.invite(team_id, "carol")
    assert refused(lambda: world.invite(team_id, "dave")) == (HTTPStatus.CONFLICT, "team_member_limit_reached")


def test_the_teams_limit_refuses_an_accept(world: World, team_id: str) -> None:
    world.invite(team_id, "bob")
    world.with_limits(max_per_user=0)
    accept = lambda: invitations.accept(world.teams, world.stores.profiles, "bob", team_id, policy=world.policy)  # noqa: E731
    assert refused(accept) == (HTTPStatus.CONFLICT, "team_limit_reached")
    assert world.membership("bob", team_id).state == "invited"  # type: ignore[union-attr]


def test_invitations_past_the_hourly_limit_are_429_with_retry_after(world: World, team_id: str) -> None:
    world.with_limits(invites_per_hour=2)
    world.invite(team_id, "bob")
    assert refused(lambda: world.invite(team_id, "nobody@example.com")) == NO_ACCOUNT  # a refused lookup counts
    with pytest.raises(TooManyRequests) as err:
        world.invite(team_id, "carol")
    assert err.value.retry_after >= 1
    assert world.membership("carol", team_id) is None


def test_signing_in_again_keeps_the_teams_one_blocked(world: World, team_id: str) -> None:
    world.invite(team_id, "bob")
    invitations.decline(
        world.teams, world.stores.kbs, world.stores.profiles, "bob", team_id,
        block="team", policy=world.policy, share_policy=world.share_policy,
    )
    register_profile(world.stores.profiles, claims("bob", name="Bob", phone=BOB_PHONE))
    assert refused(lambda: world.invite(team_id, "bob")) == NO_ACCOUNT
