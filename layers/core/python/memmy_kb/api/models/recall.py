"""``POST /recall``: the query and the excerpts with the context block."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from pydantic import Field, StringConstraints

from memmy_kb.api.models.base import ApiModel
from memmy_kb.domain.recall import DEFAULT_RECALL_LIMIT

if TYPE_CHECKING:
    from memmy_kb.domain.recall import RecallResult

MAX_QUERY_LENGTH = 4000
MAX_RECALL_LIMIT = 25


class RecallRequest(ApiModel):
    query: Annotated[
        str,
        StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_QUERY_LENGTH),
        # repr=False: Powertools logs a route's arguments at debug level, and queries are never logged.
        Field(
            description="The question or the agent turn's prompt (1-4000 characters after trimming)",
            repr=False,
        ),
    ]
    limit: Annotated[
        int, Field(strict=True, ge=1, le=MAX_RECALL_LIMIT, description="At most this many excerpts")
    ] = (
        DEFAULT_RECALL_LIMIT
    )


class RecallItem(ApiModel):
    """One excerpt as it appears in ``context``: sanitised, with its source title."""

    title: str = Field(repr=False)
    content: str = Field(repr=False)
    score: float | None = None


class RecallResponse(ApiModel):
    items: list[RecallItem]
    context: str = Field(
        description='The block a hook adds to the turn ("" when there are no items)', repr=False
    )
    scope_size: int = Field(description="How many knowledge bases were searched")
    discarded: bool = Field(description="The scope changed during the search and the result was dropped")

    @classmethod
    def from_result(cls, result: RecallResult) -> RecallResponse:
        return cls(
            items=[RecallItem(title=e.title, content=e.content, score=e.score) for e in result.block.excerpts],
            context=result.block.text,
            scope_size=result.scope_size,
            discarded=result.discarded,
        )
