"""``/me``: the caller's profile and their choice for new shares."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from pydantic import Field

from memmy_kb.api.models.base import ApiModel
from memmy_kb.domain.display import shown

if TYPE_CHECKING:
    from memmy_kb.records import ProfileRecord


class Me(ApiModel):
    user_id: str
    display_name: str
    email: str | None = None
    phone: str | None = None
    recall_new_shares: bool = Field(
        default=True, description="Whether KBs shared with you from now on arrive with recall on"
    )

    @classmethod
    def from_record(cls, profile: ProfileRecord) -> Me:
        return cls(
            user_id=profile.user_id,
            display_name=shown(profile.display_name) or profile.user_id,
            email=profile.email,
            phone=profile.phone,
            recall_new_shares=profile.recall_new_shares,
        )


class UpdateMeRequest(ApiModel):
    recall_new_shares: Annotated[bool, Field(strict=True)]
