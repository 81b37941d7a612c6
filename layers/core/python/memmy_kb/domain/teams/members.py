"""A team's members: remove a member or cancel an invitation, leave, make an admin or a member, and
transfer ownership (docs/teams.md, "Roles and consent")."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from memmy_kb.domain.ports.teams import TeamStore
from memmy_kb.domain.storage import ConditionFailed, ItemMissing
from memmy_kb.domain.teams.activity import team_activity
from memmy_kb.domain.teams.limits import TeamPolicy
from memmy_kb.domain.teams.roles import admin_only, owner_only, require_member
from memmy_kb.errors import Conflict, InvalidInput, NotFound, team_not_found
from memmy_kb.records import ActivityKind, MembershipRecord, TeamRole, utc_now


def _member_not_found() -> NotFound:
    return NotFound("This account is not in the team.", code="member_not_found")


def _changed() -> Conflict:
    return Conflict("The membership changed at the same time; try again.", code="team_conflict")


def remove_member(
    teams: TeamStore,
    caller_id: str,
    team_id: str,
    member_id: str,
    *,
    policy: TeamPolicy,
    clock: Callable[[], datetime] = utc_now,
) -> None:
    """Remove a member or cancel an invitation (the owner; an admin, but not the owner or another
    admin), or leave (oneself; the owner cannot: 422 ``owner_cannot_leave``)."""
    _, caller = require_member(teams, caller_id, team_id)
    kind: ActivityKind
    if member_id == caller_id:
        if caller.role == "owner":
            raise InvalidInput(
                "The owner cannot leave the team; transfer ownership or delete the team first.",
                code="owner_cannot_leave",
            )
        target, kind = caller, "team_left"
    else:
        if caller.role not in ("owner", "admin"):
            raise admin_only()
        found = teams.get_membership(member_id, team_id)
        if found is None:
            raise _member_not_found()
        if found.role == "owner" or (found.role == "admin" and caller.role != "owner"):
            raise owner_only()
        target, kind = found, "removed"
    _delete(teams, target, kind, caller_id, policy, clock)


def _delete(
    teams: TeamStore,
    target: MembershipRecord,
    kind: ActivityKind,
    caller_id: str,
    policy: TeamPolicy,
    clock: Callable[[], datetime],
) -> None:
    activity = team_activity(kind, target.team_id, caller_id, target.user_id, clock(), policy.retention_days)
    try:
        teams.delete_membership(target, activity=activity)
    except ItemMissing:
        raise (team_not_found() if target.user_id == caller_id else _member_not_found()) from None
    except ConditionFailed:
        raise _changed() from None


def set_role(
    teams: TeamStore,
    caller_id: str,
    team_id: str,
    member_id: str,
    role: TeamRole,
    *,
    policy: TeamPolicy,
    clock: Callable[[], datetime] = utc_now,
) -> None:
    """Make a member an admin or an admin a member (owner only); ``owner`` transfers ownership to a
    member, the old owner becoming an admin."""
    team, caller = require_member(teams, caller_id, team_id)
    if caller.role != "owner" or team.owner_id != caller_id:
        raise owner_only()
    if member_id == caller_id:
        raise InvalidInput("The owner's role changes only by transferring ownership.", code="owner_role_fixed")
    target = teams.get_membership(member_id, team_id)
    if target is None:
        raise _member_not_found()
    if target.state != "member":
        raise InvalidInput("Only a member who accepted can be given a role.", code="not_a_member")
    now = clock()
    activity = team_activity("role_changed", team_id, caller_id, f"{member_id}:{role}", now, policy.retention_days)
    try:
        if role == "owner":
            teams.transfer_ownership(team_id, caller_id, member_id, activity=activity)
        else:
            teams.set_role(team_id, member_id, role, activity=activity)
    except ItemMissing:
        raise _member_not_found() from None
    except ConditionFailed:
        raise _changed() from None
