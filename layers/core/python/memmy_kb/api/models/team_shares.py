"""``/knowledge-bases/{kb_id}/teams``: share a KB with a team, list and unshare (docs/teams.md)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated

from pydantic import Field

from memmy_kb.api.models.base import ApiModel, TeamPerson
from memmy_kb.domain.display import shown

if TYPE_CHECKING:
    from memmy_kb.domain.sharing.team_shares import TeamShareView


class ShareWithTeamRequest(ApiModel):
    team_id: Annotated[str, Field(min_length=1, max_length=64, description="The team's id (tm_…)")]


class TeamShare(ApiModel):
    team_id: str
    name: str
    shared_by: TeamPerson
    shared_at: datetime

    @classmethod
    def from_view(cls, view: TeamShareView) -> TeamShare:
        return cls(
            team_id=view.team_id,
            name=shown(view.name) or view.team_id,
            shared_by=TeamPerson(
                user_id=view.shared_by, display_name=shown(view.shared_by_name) or view.shared_by
            ),
            shared_at=view.shared_at,
        )


class TeamShareList(ApiModel):
    items: list[TeamShare]

    @classmethod
    def from_views(cls, views: list[TeamShareView]) -> TeamShareList:
        return cls(items=[TeamShare.from_view(v) for v in views])
