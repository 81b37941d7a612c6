"""``POST /recall``: the query and the excerpts with the context block."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field, StringConstraints, field_validator

from memmy_kb.api.models.base import ApiModel
from memmy_kb.domain.recall.config import DEFAULT_RECALL_LIMIT, RecallQuestion
from memmy_kb.domain.recall.context_block import SizeLimit

if TYPE_CHECKING:
    from memmy_kb.domain.recall.context_block import Excerpt, SourceFile, SourceKb
    from memmy_kb.domain.recall.turn import RecallResult

MAX_QUERY_LENGTH = 4000
MAX_RECALL_LIMIT = 25
MAX_RECALL_KBS = 50
MAX_CONTEXT_LIMIT = 100_000
# The shape of a KB id (``kb_`` and hex when the service makes one; at most 64 characters, as in paths).
KbIdItem = Annotated[str, StringConstraints(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")]


class ContextLimit(ApiModel):
    """The asking agent's own limit on the block: at most ``max`` of ``unit``."""

    unit: Literal["characters", "utf16_units", "utf8_bytes"] = Field(
        description="What the agent counts: characters, UTF-16 code units (JavaScript), UTF-8 bytes"
    )
    max: int = Field(strict=True, ge=1, le=MAX_CONTEXT_LIMIT, description="At most this many of them")


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
    ] = DEFAULT_RECALL_LIMIT
    knowledge_base_ids: Annotated[
        list[KbIdItem] | None,
        Field(
            max_length=MAX_RECALL_KBS,
            description=(
                "Search only these KBs of the caller's recall scope (at most 50, no duplicates); absent or "
                "null: the whole scope. An id outside the scope (unknown, not readable, or recall off) is a "
                "422 knowledge_base_not_in_scope."
            ),
        ),
    ] = None

    context_limit: ContextLimit | None = Field(
        default=None,
        description=(
            "Build the block within this limit too (an agent's inline limit), besides the service's own cap in "
            "characters; whole excerpts are left out to fit, and items are exactly the excerpts the block holds"
        ),
    )

    @field_validator("knowledge_base_ids")
    @classmethod
    def _no_duplicates(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and len(set(value)) != len(value):
            raise ValueError("knowledge_base_ids must not repeat an id")
        return value

    def question(self, user_id: str) -> RecallQuestion:
        """What the caller asks, as the domain takes it."""
        limit = self.context_limit
        return RecallQuestion(
            user_id=user_id,
            query=self.query,
            limit=self.limit,
            knowledge_base_ids=self.knowledge_base_ids,
            context_limit=None if limit is None else SizeLimit(limit.max, limit.unit),
        )


class RecallOwner(ApiModel):
    """Who shared a KB with the caller: display name and masked verified contact, as "shared with me"."""

    name: str = Field(repr=False)
    contact: str | None = Field(
        default=None, repr=False, description="Masked (138****8000, a***@example.com)"
    )


class RecallKb(ApiModel):
    id: str
    name: str = Field(repr=False)


class RecallTeam(ApiModel):
    """The team through which the caller reads a KB (only when they read it through no direct share)."""

    id: str
    name: str = Field(repr=False)


class RecallGroupKb(RecallKb):
    """One KB of a group searched together; ``owner`` when it is shared with the caller, ``team`` when
    only through a team."""

    owner: RecallOwner | None = None
    team: RecallTeam | None = None


class RecallFile(ApiModel):
    """A file an excerpt comes from, as it is now (its name and folder sanitised like the block's)."""

    id: str
    name: str = Field(repr=False)
    folder_path: str = Field(
        repr=False, description='The folder names from the KB\'s root, joined by "/" ("" at the root)'
    )
    version: int = Field(description="The version of the file whose text the excerpt matched")
    knowledge_base_id: str


def _file(file: SourceFile) -> RecallFile:
    return RecallFile(
        id=file.file_id,
        name=file.name,
        folder_path=file.folder_path,
        version=file.version,
        knowledge_base_id=file.kb_id,
    )


def _team(source: SourceKb) -> RecallTeam | None:
    if source.team_id is None:
        return None
    return RecallTeam(id=source.team_id, name=source.team_name or source.team_id)


def _owner(source: SourceKb) -> RecallOwner | None:
    if source.owner_name is None:
        return None
    return RecallOwner(name=source.owner_name, contact=source.owner_contact)


class RecallItem(ApiModel):
    """One excerpt as it appears in ``context``: sanitised, with its source title and its KB.

    ``file`` names the file it comes from when its text names one clearly; ``files`` lists the candidates
    when several files hold its text (then ``file`` is null); both empty when no file holds enough of it.
    ``title`` is MemOS's heading for the excerpt (a section of the file, not its name).
    ``knowledge_base`` names the KB it comes from (``owner`` the sharer, for a KB shared with the caller);
    ``knowledge_bases`` instead lists the KBs it could come from (candidates in several KBs, or no file
    named). ``team`` names the team through which the caller reads the KB when they read it only through
    a team (a direct share wins). Neither is present when the service searches the whole scope at once without attribution
    (``RECALL_ATTRIBUTION=combined``).
    """

    title: str = Field(repr=False)
    content: str = Field(repr=False)
    score: float | None = None
    knowledge_base: RecallKb | None = None
    owner: RecallOwner | None = None
    knowledge_bases: list[RecallGroupKb] | None = None
    team: RecallTeam | None = None
    file: RecallFile | None = Field(
        default=None, description="The one file the excerpt comes from, when clear"
    )
    files: list[RecallFile] = Field(
        default_factory=list, description="The candidate files when several hold the excerpt's text, else []"
    )

    @classmethod
    def from_excerpt(cls, excerpt: Excerpt) -> RecallItem:
        item = cls(title=excerpt.title, content=excerpt.content, score=excerpt.score)
        if len(excerpt.files) == 1:
            item.file = _file(excerpt.files[0])
        elif excerpt.files:
            item.files = [_file(f) for f in excerpt.files]
        if len(excerpt.sources) == 1:
            (source,) = excerpt.sources
            item.knowledge_base = RecallKb(id=source.kb_id, name=source.name)
            item.owner = _owner(source)
            item.team = _team(source)
        elif excerpt.sources:
            item.knowledge_bases = [
                RecallGroupKb(id=s.kb_id, name=s.name, owner=_owner(s), team=_team(s))
                for s in excerpt.sources
            ]
        return item


class RecallResponse(ApiModel):
    items: list[RecallItem]
    context: str = Field(
        description='The block a hook adds to the turn ("" when there are no items)', repr=False
    )
    scope_size: int = Field(description="How many knowledge bases were searched")
    discarded: bool = Field(
        description="The scope changed during the search: the excerpts of the KBs that left it were dropped"
    )
    partial: bool = Field(
        default=False, description="Some KBs' searches failed: the excerpts are those of the others"
    )

    @classmethod
    def from_result(cls, result: RecallResult) -> RecallResponse:
        return cls(
            items=[RecallItem.from_excerpt(e) for e in result.block.excerpts],
            context=result.block.text,
            scope_size=result.scope_size,
            discarded=result.discarded,
            partial=result.partial,
        )
