"""Who may do what in a team (docs/teams.md, "Roles and consent"): every decision reads the caller's
membership and the team's META, strongly consistent. A stranger, and an invited person for anything
but the invitation itself, gets the 404 of a team that does not exist."""

from __future__ import annotations

from memmy_kb.domain.ports.teams import TeamStore
from memmy_kb.errors import Forbidden, team_not_found
from memmy_kb.records import MembershipRecord, TeamRecord


def admin_only() -> Forbidden:
    return Forbidden("Only the team's owner or an admin may do this.", code="team_admin_only")


def owner_only() -> Forbidden:
    return Forbidden("Only the team's owner may do this.", code="team_owner_only")


def read_place(teams: TeamStore, user_id: str, team_id: str) -> tuple[TeamRecord, MembershipRecord]:
    """The team and the caller's invitation or membership; 404 ``team_not_found`` without either (a
    membership whose team's META is gone grants nothing)."""
    membership = teams.get_membership(user_id, team_id)
    team = teams.get_team(team_id) if membership is not None else None
    if membership is None or team is None:
        raise team_not_found()
    return team, membership


def require_member(teams: TeamStore, user_id: str, team_id: str) -> tuple[TeamRecord, MembershipRecord]:
    """A member (any role); invited or a stranger: 404."""
    team, membership = read_place(teams, user_id, team_id)
    if membership.state != "member":
        raise team_not_found()
    return team, membership


def require_admin(teams: TeamStore, user_id: str, team_id: str) -> tuple[TeamRecord, MembershipRecord]:
    """The owner or an admin; a member: 403."""
    team, membership = require_member(teams, user_id, team_id)
    if membership.role not in ("owner", "admin"):
        raise admin_only()
    return team, membership


def require_team_owner(teams: TeamStore, user_id: str, team_id: str) -> tuple[TeamRecord, MembershipRecord]:
    """The owner; an admin or a member: 403."""
    team, membership = require_member(teams, user_id, team_id)
    if membership.role != "owner" or team.owner_id != user_id:
        raise owner_only()
    return team, membership
