"""A team's activity log (``ACTIVITY#TEAM#<team>``): invitations, joins, declines, removals, leaves,
role changes and renames, readable by the team's members. Entries ride in the transaction of the
action they record and are kept as long as a KB's (``memmy_kb.domain.knowledge_bases.activity``)."""

from __future__ import annotations

from datetime import datetime

from memmy_kb.domain.knowledge_bases.activity import MAX_PAGE, ActivityPage, new_activity
from memmy_kb.domain.ports.activity import ActivityLog
from memmy_kb.domain.ports.teams import TeamStore
from memmy_kb.domain.teams.roles import require_member
from memmy_kb.records import ActivityKind, ActivityRecord


def team_log(team_id: str) -> str:
    """The id of a team's log beside the KBs' logs: entries carry it as their ``kb_id``."""
    return f"TEAM#{team_id}"


def team_activity(
    kind: ActivityKind, team_id: str, actor_id: str, subject: str, now: datetime, retention_days: int
) -> ActivityRecord:
    return new_activity(kind, team_log(team_id), actor_id, subject, now, retention_days)


def list_team_activity(
    teams: TeamStore,
    log: ActivityLog,
    caller_id: str,
    team_id: str,
    *,
    limit: int,
    cursor: str | None,
    now: datetime,
) -> ActivityPage:
    """A page of the team's activity, newest first (members only; anyone else the 404 of no team)."""
    require_member(teams, caller_id, team_id)
    items, next_cursor = log.query_activity(
        team_log(team_id), limit=max(1, min(limit, MAX_PAGE)), cursor=cursor, now=int(now.timestamp())
    )
    return ActivityPage(items=items, next_cursor=next_cursor)
