"""``/teams``: teams, their members and invitations (docs/teams.md)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field

from memmy_kb.api.models.base import ApiModel, Name
from memmy_kb.domain.display import shown
from memmy_kb.records import MembershipState, TeamRole

if TYPE_CHECKING:
    from memmy_kb.domain.teams.teams import TeamView
    from memmy_kb.records import MembershipRecord


class CreateTeamRequest(ApiModel):
    name: Name


class RenameTeamRequest(ApiModel):
    name: Name


class InviteRequest(ApiModel):
    identifier: Annotated[str, Field(min_length=1, max_length=320, description="A user id, phone number or email")]


class TeamRoleRequest(ApiModel):
    role: Annotated[TeamRole, Field(description='"owner" transfers ownership; the old owner becomes an admin')]


class DeclineRequest(ApiModel):
    block: Literal["team", "owner"] | None = None


class TeamPerson(ApiModel):
    user_id: str
    display_name: str

    @classmethod
    def of(cls, view: TeamView, user_id: str) -> TeamPerson:
        return cls(user_id=user_id, display_name=shown(view.name_of(user_id)) or user_id)


class Team(ApiModel):
    id: str
    name: str
    owner: TeamPerson
    role: TeamRole  # the caller's own
    state: MembershipState  # the caller's own
    invited_by: TeamPerson | None
    member_count: int
    invited_count: int
    kb_count: int
    created_at: datetime

    @classmethod
    def fields_of(cls, view: TeamView) -> dict[str, object]:
        team, mine = view.team, view.membership
        return {
            "id": team.team_id,
            "name": shown(team.name) or team.team_id,
            "owner": TeamPerson.of(view, team.owner_id),
            "role": mine.role,
            "state": mine.state,
            "invited_by": TeamPerson.of(view, mine.invited_by) if mine.invited_by else None,
            "member_count": team.member_count,
            "invited_count": team.invited_count,
            "kb_count": team.kb_count,
            "created_at": team.created_at,
        }

    @classmethod
    def from_view(cls, view: TeamView) -> Team:
        return cls.model_validate(cls.fields_of(view))


class TeamList(ApiModel):
    items: list[Team]

    @classmethod
    def from_views(cls, views: list[TeamView]) -> TeamList:
        return cls(items=[Team.from_view(v) for v in views])


class TeamMember(ApiModel):
    user_id: str
    display_name: str
    role: TeamRole
    state: MembershipState
    invited_at: datetime | None
    joined_at: datetime | None

    @classmethod
    def from_record(cls, view: TeamView, member: MembershipRecord, name: str | None = None) -> TeamMember:
        return cls(
            user_id=member.user_id,
            display_name=shown(name or view.name_of(member.user_id)) or member.user_id,
            role=member.role,
            state=member.state,
            invited_at=member.invited_at,
            joined_at=member.joined_at,
        )


class TeamKnowledgeBase(ApiModel):
    id: str
    name: str
    owner: TeamPerson
    shared_at: datetime


class TeamDetail(Team):
    members: list[TeamMember]
    knowledge_bases: list[TeamKnowledgeBase]

    @classmethod
    def from_detail(cls, view: TeamView) -> TeamDetail:
        return cls.model_validate(
            {
                **Team.fields_of(view),
                "members": [TeamMember.from_record(view, m) for m in view.members],
                "knowledge_bases": [
                    TeamKnowledgeBase(
                        id=k.kb_id, name=shown(k.name) or k.kb_id, owner=TeamPerson.of(view, k.owner_id), shared_at=k.shared_at
                    )
                    for k in view.kbs
                ],
            }
        )
