"""``/knowledge-bases``: create, list, rename a KB and turn one's recall of it on or off."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated

from pydantic import Field

from memmy_kb.api.models.base import ApiModel, Name
from memmy_kb.domain.display import shown
from memmy_kb.records import Role

if TYPE_CHECKING:
    from memmy_kb.domain.knowledge_bases.manage import KnowledgeBaseView


class CreateKnowledgeBaseRequest(ApiModel):
    name: Name


class RenameKnowledgeBaseRequest(ApiModel):
    name: Name


class RecallSettingRequest(ApiModel):
    enabled: Annotated[bool, Field(strict=True)]


class Owner(ApiModel):
    user_id: str
    display_name: str
    contact: str | None = Field(
        default=None,
        description="The owner's verified phone or email, masked (138****8000, a***@example.com)",
    )


class KbTeam(ApiModel):
    """A team through which the caller reads a KB (docs/teams.md)."""

    id: str
    name: str


class KnowledgeBase(ApiModel):
    id: str
    name: str
    role: Role
    recall: bool
    owner: Owner
    teams: list[KbTeam] = Field(
        default_factory=list,
        description="The teams through which the caller reads it; empty when it is theirs or shared with them",
    )
    created_at: datetime
    file_count: int = Field(default=0, description="Files recorded in the knowledge base")
    bytes_used: int = Field(default=0, description="Their bytes: the storage the knowledge base uses")

    @classmethod
    def from_view(cls, view: KnowledgeBaseView) -> KnowledgeBase:
        from memmy_kb.domain.team_reach import TeamGrant

        teams = view.grant.teams if isinstance(view.grant, TeamGrant) else ()
        return cls(
            teams=[KbTeam(id=team_id, name=shown(name) or team_id) for team_id, name in teams],
            id=view.kb.kb_id,
            name=shown(view.kb.name),
            role=view.grant.role,
            recall=view.grant.recall,
            owner=Owner(
                user_id=view.kb.owner_id,
                display_name=shown(view.owner_name) or view.kb.owner_id,
                contact=view.owner_contact,
            ),
            created_at=view.kb.created_at,
            file_count=view.kb.file_count,
            bytes_used=view.kb.bytes_used,
        )


class KnowledgeBaseList(ApiModel):
    items: list[KnowledgeBase]

    @classmethod
    def from_views(cls, views: list[KnowledgeBaseView]) -> KnowledgeBaseList:
        return cls(items=[KnowledgeBase.from_view(v) for v in views])
