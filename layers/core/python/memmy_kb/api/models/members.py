"""``/knowledge-bases/{kb_id}/members``: share, list and revoke."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated

from pydantic import Field

from memmy_kb.api.models.base import ApiModel
from memmy_kb.domain.display import shown
from memmy_kb.records import Role

if TYPE_CHECKING:
    from memmy_kb.domain.sharing.shares import MemberView


class ShareRequest(ApiModel):
    identifier: Annotated[
        str, Field(min_length=1, max_length=320, description="A user id, phone number or email")
    ]


class Member(ApiModel):
    user_id: str
    display_name: str
    role: Role
    shared_at: datetime

    @classmethod
    def from_view(cls, view: MemberView) -> Member:
        return cls(
            user_id=view.grant.user_id,
            display_name=shown(view.display_name) or view.grant.user_id,
            role=view.grant.role,
            shared_at=view.grant.granted_at,
        )


class MemberList(ApiModel):
    items: list[Member]

    @classmethod
    def from_views(cls, views: list[MemberView]) -> MemberList:
        return cls(items=[Member.from_view(v) for v in views])
