"""The limits of teams (docs/teams.md, "Limits") and what guards a team's writes besides roles."""

from __future__ import annotations

from dataclasses import dataclass

from memmy_kb.domain.ports.activity import RateCounters
from memmy_kb.errors import Conflict


@dataclass(frozen=True)
class TeamLimits:
    """The limits of ``memmy_kb.settings.Settings`` (team_*)."""

    max_members: int = 1000  # members plus open invitations per team
    max_per_user: int = 100  # teams a user owns or belongs to
    invites_per_hour: int = 100  # invitations one person sends per hour


@dataclass(frozen=True)
class TeamPolicy:
    """The limits, the counters the hourly one is kept in, and how long team activity is kept."""

    counters: RateCounters
    limits: TeamLimits
    retention_days: int


def member_limit_reached(limits: TeamLimits) -> Conflict:
    return Conflict(
        f"A team holds at most {limits.max_members} members and open invitations.",
        code="team_member_limit_reached",
    )


def team_limit_reached(limits: TeamLimits) -> Conflict:
    return Conflict(f"You can belong to at most {limits.max_per_user} teams.", code="team_limit_reached")
