"""``/me/blocked``: the owners whose shares the caller refuses."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field

from memmy_kb.api.models.base import ApiModel
from memmy_kb.domain.display import hidden_characters, shown


def _clean_user_id(value: str) -> str:
    if hidden_characters(value):
        raise ValueError("must not contain control, invisible or unassigned characters")
    return value


class BlockRequest(ApiModel):
    user_id: Annotated[str, Field(min_length=1, max_length=256), AfterValidator(_clean_user_id)]


class BlockedUser(ApiModel):
    user_id: str
    display_name: str | None = None


class BlockedList(ApiModel):
    items: list[BlockedUser]

    @classmethod
    def from_pairs(cls, pairs: list[tuple[str, str | None]]) -> BlockedList:
        return cls(items=[BlockedUser(user_id=u, display_name=shown(n) if n else None) for u, n in pairs])
