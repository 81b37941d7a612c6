"""``/knowledge-bases/{kb_id}/activity``: the KB's activity log, a page at a time."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from memmy_kb.api.models.base import ApiModel
from memmy_kb.domain.display import shown
from memmy_kb.records import ActivityKind

if TYPE_CHECKING:
    from memmy_kb.domain.knowledge_bases.activity import ActivityPage


class Activity(ApiModel):
    id: str
    kind: ActivityKind
    actor_id: str
    subject: str
    at: datetime


class ActivityList(ApiModel):
    items: list[Activity]
    next_cursor: str | None = None

    @classmethod
    def from_page(cls, page: ActivityPage) -> ActivityList:
        return cls(
            items=[
                Activity(
                    id=r.activity_id, kind=r.kind, actor_id=r.actor_id, subject=shown(r.subject), at=r.at
                )
                for r in page.items
            ],
            next_cursor=page.next_cursor,
        )
