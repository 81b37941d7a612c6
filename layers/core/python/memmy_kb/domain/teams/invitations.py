"""Invitations: a person added to a team is invited, never made a member; they accept, or decline and
may block the team or its owner (docs/teams.md, "Roles and consent").

Identifiers resolve as shares resolve them (``memmy_kb.domain.sharing.shares``). An invitation to
someone who blocked the team or its owner is answered as one to an account that does not exist.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Literal

from memmy_kb.domain.ports.knowledge_bases import KnowledgeBaseStore
from memmy_kb.domain.ports.profiles import ProfileStore
from memmy_kb.domain.ports.teams import InviteReads, TeamStore
from memmy_kb.domain.sharing import profiles as blocks
from memmy_kb.domain.sharing.limits import ShareLimits, attempt_counter, attempt_slot, count_attempt
from memmy_kb.domain.sharing.shares import SharePolicy, parse_identifier, resolve_identifier
from memmy_kb.domain.storage import AlreadyExists, ConditionFailed, ItemMissing
from memmy_kb.domain.teams.activity import team_activity
from memmy_kb.domain.teams.limits import TeamPolicy, member_limit_reached, team_limit_reached
from memmy_kb.domain.teams.roles import admin_only, read_place
from memmy_kb.errors import Conflict, DomainError, NotFound, team_not_found
from memmy_kb.records import MembershipRecord, ShareReads, TeamRecord, utc_now

INVITE: Literal["invite"] = "invite"
_HOUR = 3600


def _window(policy: TeamPolicy) -> ShareLimits:
    """The hourly invitation limit as the share attempts' sliding window (``memmy_kb.domain.sharing.limits``)."""
    return ShareLimits(attempts=policy.limits.invites_per_hour, window_seconds=_HOUR)


def _no_account() -> NotFound:
    return NotFound("No Memmy account has this user id, phone or email.", code="account_not_found")


def invite(
    teams: TeamStore,
    profiles: ProfileStore,
    caller_id: str,
    team_id: str,
    identifier: str,
    *,
    policy: TeamPolicy,
    clock: Callable[[], datetime] = utc_now,
) -> tuple[MembershipRecord, str]:
    """Invite the account behind ``identifier`` (owner or admin); returns the invitation and the invitee's
    display name. One batched read, then one transaction: the invitation, the team's invited count under
    the member cap, and the inviter's hourly counter. A refusal after the lookup still counts the attempt,
    so the limit also bounds probing for accounts."""
    now = clock()
    wanted = parse_identifier(identifier)
    limits = _window(policy)
    counter = attempt_counter(caller_id, limits, now, INVITE)
    reads = teams.read_invite(team_id, caller_id, identifier=wanted.lookup, user_id=wanted.user_id, counter=counter)
    team = _inviting_team(reads)
    if team.member_count + team.invited_count >= policy.limits.max_members:
        raise member_limit_reached(policy.limits)
    slot = attempt_slot(caller_id, limits, now, reads.attempts, INVITE)
    counted = slot is None
    if counted:
        count_attempt(policy.counters, caller_id, limits, now, INVITE)  # 429 past the limit

    def refuse(error: DomainError) -> DomainError:
        if not counted:
            count_attempt(policy.counters, caller_id, limits, now, INVITE)
        return error

    try:
        invitee_id = resolve_identifier(ShareReads(claimants=reads.claimants, profile=reads.profile))
    except Conflict as ambiguous:
        raise refuse(ambiguous) from None
    if invitee_id is None:
        raise refuse(_no_account())
    if invitee_id == caller_id:
        raise refuse(Conflict("You are already in this team.", code="already_member"))
    profile = reads.profile if reads.profile and reads.profile.user_id == invitee_id else profiles.get_profile(invitee_id)
    if profile is not None and (team_id in profile.blocked_teams or team.owner_id in profile.blocked):
        raise refuse(_no_account())
    invitation = MembershipRecord(
        user_id=invitee_id, team_id=team_id, state="invited", role="member", invited_by=caller_id, invited_at=now
    )
    activity = team_activity("invited", team_id, caller_id, invitee_id, now, policy.retention_days)
    try:
        teams.put_invitation(
            invitation, owner_id=team.owner_id, max_members=policy.limits.max_members, attempts=slot, activity=activity
        )
    except AlreadyExists:
        current = teams.get_membership(invitee_id, team_id)
        already = current is not None and current.state == "member"
        raise refuse(
            Conflict("This account is already a member.", code="already_member")
            if already
            else Conflict("This account is already invited.", code="already_invited")
        ) from None
    except ItemMissing:
        raise refuse(team_not_found()) from None
    except ConditionFailed as err:
        if err.item == "blocked":
            raise refuse(_no_account()) from None
        if err.item in ("attempts", "owner"):
            raise refuse(_retry_later()) from None
        if err.item == "inviter":
            raise refuse(admin_only()) from None
        raise refuse(member_limit_reached(policy.limits)) from None
    return invitation, profile.display_name if profile is not None else invitee_id


def _inviting_team(reads: InviteReads) -> TeamRecord:
    """The team, when the inviter may invite to it: 404 for a stranger or someone invited, 403 for a member."""
    if reads.team is None or reads.inviter is None or reads.inviter.state != "member":
        raise team_not_found()
    if reads.inviter.role not in ("owner", "admin"):
        raise admin_only()
    return reads.team


def _retry_later() -> Conflict:
    return Conflict("Other invitations landed at the same time; try again.", code="team_conflict")


def accept(
    teams: TeamStore,
    profiles: ProfileStore,
    caller_id: str,
    team_id: str,
    *,
    policy: TeamPolicy,
    clock: Callable[[], datetime] = utc_now,
) -> MembershipRecord:
    """Join a team one is invited to: the membership (still invited), the team's counts and the caller's
    teams counter (409 ``team_limit_reached``) in one transaction. The member's "recall new shares"
    becomes their default for the team's KBs."""
    _, membership = read_place(teams, caller_id, team_id)
    if membership.state != "invited":
        raise Conflict("You are already a member of this team.", code="already_member")
    profile = profiles.get_profile(caller_id)
    now = clock()
    joined = membership.model_copy(
        update={"state": "member", "joined_at": now, "recall_default": profile.recall_new_shares if profile else True}
    )
    activity = team_activity("joined", team_id, caller_id, caller_id, now, policy.retention_days)
    try:
        teams.accept_invitation(joined, max_teams=policy.limits.max_per_user, activity=activity)
    except ItemMissing:
        raise team_not_found() from None
    except ConditionFailed as err:
        if err.item == "membership":
            raise team_not_found() from None  # cancelled, or accepted by a concurrent request
        raise team_limit_reached(policy.limits) from None
    return joined


def decline(
    teams: TeamStore,
    kbs: KnowledgeBaseStore,
    profiles: ProfileStore,
    caller_id: str,
    team_id: str,
    *,
    block: Literal["team", "owner"] | None,
    policy: TeamPolicy,
    share_policy: SharePolicy,
    clock: Callable[[], datetime] = utc_now,
) -> None:
    """Decline an invitation; ``block`` "team" refuses the team's invitations from now on (in the same
    transaction), "owner" blocks the team's owner as blocking from ``POST /me/blocked`` does."""
    team, membership = read_place(teams, caller_id, team_id)
    if membership.state != "invited":
        raise team_not_found()
    if block == "owner":
        blocks.block(kbs, profiles, caller_id, team.owner_id, policy=share_policy, clock=clock)
    activity = team_activity("declined", team_id, caller_id, caller_id, clock(), policy.retention_days)
    try:
        teams.delete_membership(membership, activity=activity, block_team=block == "team")
    except ItemMissing:
        raise team_not_found() from None
