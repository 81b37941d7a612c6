"""A team's life: create (the caller its owner), rename, delete (then the cleanup removes the
memberships), and what its people see of it."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Final

from aws_lambda_powertools import Logger

from memmy_kb.domain.ports.cleanups import CleanupExecutions
from memmy_kb.domain.ports.knowledge_bases import KnowledgeBaseStore
from memmy_kb.domain.ports.profiles import ProfileStore
from memmy_kb.domain.ports.teams import TeamStore
from memmy_kb.domain.storage import AlreadyExists, ConditionFailed, ItemMissing
from memmy_kb.domain.teams.activity import team_activity
from memmy_kb.domain.teams.limits import TeamPolicy, team_limit_reached
from memmy_kb.domain.teams.roles import read_place, require_admin, require_team_owner
from memmy_kb.errors import Conflict, team_not_found
from memmy_kb.records import CleanupRecord, MembershipRecord, TeamRecord, utc_now

logger = Logger(child=True)

# How long a team's cleanup may run before the reconciler starts it again (as a KB's).
CLEANUP_GRACE: Final = timedelta(minutes=15)
# A share or unshare landing between the read of META and the delete is retried a few times.
_DELETE_ATTEMPTS: Final = 3


def new_team_id() -> str:
    return "tm_" + os.urandom(12).hex()  # as ``secrets.token_hex``, without its imports


@dataclass(frozen=True)
class TeamKbView:
    kb_id: str
    name: str
    owner_id: str
    shared_at: datetime


@dataclass(frozen=True)
class TeamView:
    """A team as one person sees it: their own membership, and the names of the people it names."""

    team: TeamRecord
    membership: MembershipRecord
    names: dict[str, str]
    members: list[MembershipRecord] = field(default_factory=list)
    kbs: list[TeamKbView] = field(default_factory=list)

    def name_of(self, user_id: str) -> str:
        return self.names.get(user_id, user_id)


def create_team(
    teams: TeamStore,
    profiles: ProfileStore,
    caller_id: str,
    name: str,
    *,
    policy: TeamPolicy,
    clock: Callable[[], datetime] = utc_now,
) -> TeamView:
    """A new team with the caller as its owner: META, the owner's membership and the caller's teams
    counter in one transaction (409 ``team_limit_reached`` when the counter is full)."""
    now = clock()
    team = TeamRecord(team_id=new_team_id(), name=name, owner_id=caller_id, member_count=1, created_at=now)
    profile = profiles.get_profile(caller_id)
    owner = MembershipRecord(
        user_id=caller_id,
        team_id=team.team_id,
        state="member",
        role="owner",
        joined_at=now,
        recall_default=profile.recall_new_shares if profile is not None else True,
    )
    try:
        teams.create_team(team, owner, max_teams=policy.limits.max_per_user)
    except ConditionFailed:
        raise team_limit_reached(policy.limits) from None
    except AlreadyExists:
        raise Conflict("Creating the team collided; try again.", code="team_conflict") from None
    names = {caller_id: profile.display_name} if profile is not None else {}
    return TeamView(team=team, membership=owner, names=names)


def rename_team(
    teams: TeamStore,
    profiles: ProfileStore,
    caller_id: str,
    team_id: str,
    name: str,
    *,
    policy: TeamPolicy,
    clock: Callable[[], datetime] = utc_now,
) -> TeamView:
    """Rename (owner or admin), logged as ``team_renamed`` with the new name."""
    _, membership = require_admin(teams, caller_id, team_id)
    activity = team_activity("team_renamed", team_id, caller_id, name, clock(), policy.retention_days)
    try:
        team = teams.rename_team(team_id, name, activity=activity)
    except ItemMissing:
        raise team_not_found() from None
    return _view(profiles, team, membership)


def delete_team(
    teams: TeamStore,
    executions: CleanupExecutions,
    caller_id: str,
    team_id: str,
    *,
    clock: Callable[[], datetime] = utc_now,
    new_id: Callable[[], str] | None = None,
) -> str:
    """Delete the team (owner only): META goes and the team leaves each of its KBs in one transaction,
    with the cleanup's outbox item; the cleanup then removes the memberships. Returns the cleanup id."""
    require_team_owner(teams, caller_id, team_id)
    for _ in range(_DELETE_ATTEMPTS):
        team = teams.get_team(team_id)
        if team is None or team.owner_id != caller_id:
            raise team_not_found()
        now = clock()
        cleanup = CleanupRecord(
            cleanup_id=(new_id or _cleanup_id)(),
            target="team",
            kb_id=team_id,  # a team's cleanup names the team where a KB's names the KB
            memos_kb_id="",
            owner_id=caller_id,
            created_at=now,
            next_attempt_at=now + CLEANUP_GRACE,
        )
        try:
            teams.delete_team(team, cleanup)
        except ConditionFailed:
            continue  # a KB was shared or unshared meanwhile (or the team changed hands): read again
        logger.info("team deleted", extra={"team_id": team_id, "cleanup_id": cleanup.cleanup_id})
        try:
            executions.start(cleanup.cleanup_id, cleanup.cleanup_id)
        except Exception:
            logger.exception("cleanup not started; the reconciler will start it", extra={"cleanup_id": cleanup.cleanup_id})
        return cleanup.cleanup_id
    raise Conflict("The team changed while it was being deleted; try again.", code="team_conflict")


def _cleanup_id() -> str:
    return "cl_" + os.urandom(12).hex()


def list_teams(teams: TeamStore, profiles: ProfileStore, caller_id: str) -> list[TeamView]:
    """The caller's teams and open invitations, newest first; memberships whose team is gone are left out."""
    memberships = teams.query_memberships(caller_id)
    found = teams.batch_get_teams(m.team_id for m in memberships)
    live = [(found[m.team_id], m) for m in memberships if m.team_id in found]
    people = {t.owner_id for t, _ in live} | {m.invited_by for _, m in live if m.invited_by}
    names = {uid: p.display_name for uid, p in profiles.batch_get_profiles(people).items()}
    views = [TeamView(team=t, membership=m, names=names) for t, m in live]
    views.sort(key=lambda v: (v.team.created_at, v.team.team_id), reverse=True)
    return views


def get_team(
    teams: TeamStore, kbs: KnowledgeBaseStore, profiles: ProfileStore, caller_id: str, team_id: str
) -> TeamView:
    """The team with its members and KBs for a member; its name and inviter only for someone invited."""
    team, membership = read_place(teams, caller_id, team_id)
    if membership.state != "member":
        return _view(profiles, team, membership)
    members = teams.query_team_members(team_id)
    people = {team.owner_id, *(m.user_id for m in members), *(k.owner_id for k in team.kbs.values())}
    records, owners = kbs.batch_get_kbs_and_profiles(team.kbs, people)
    names = {uid: p.display_name for uid, p in owners.items()}
    order = {"owner": 0, "admin": 1, "member": 2}
    members.sort(key=lambda m: (m.state != "member", order[m.role], m.joined_at or m.invited_at or team.created_at))
    shared = [
        TeamKbView(kb_id, records[kb_id].name, entry.owner_id, entry.shared_at)
        for kb_id, entry in team.kbs.items()
        if kb_id in records
    ]
    shared.sort(key=lambda k: k.shared_at)
    return TeamView(team=team, membership=membership, names=names, members=members, kbs=shared)


def _view(profiles: ProfileStore, team: TeamRecord, membership: MembershipRecord) -> TeamView:
    people = {team.owner_id, *([membership.invited_by] if membership.invited_by else [])}
    names = {uid: p.display_name for uid, p in profiles.batch_get_profiles(people).items()}
    return TeamView(team=team, membership=membership, names=names)
