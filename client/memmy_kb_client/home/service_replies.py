"""The desktop service's own replies that another part reads: ``POST /hook/recall``'s (the hook) and the
MCP server's two routes (``agents/mcp_service``), as ``TypedDict``s the service's routes build and their
readers annotate. Types only: each reader still reads every field warily (a ``.get``, an ``isinstance``),
since a reply from a service of another version may lack one; the hook never fails a turn on a reply."""

from __future__ import annotations

from typing import TYPE_CHECKING, NotRequired, TypedDict

if TYPE_CHECKING:
    from memmy_kb_client.replies import RecallFile, RecallGroupKb, RecallKb, RecallOwner
    from memmy_kb_client.team_replies import RecallTeam


class HookRecallReply(TypedDict):
    """``POST /hook/recall``: the turn's block ("" for none), what the cloud came to (``ok``,
    ``logged_out``, ``rate_limited``...), how many excerpts the block holds, and for ``rate_limited`` the
    seconds to wait."""

    context: str
    cloud: str
    excerpts: int
    retry_after: NotRequired[int]


class Sharer(TypedDict):
    """Who shared a knowledge base, as the service names them to the agent."""

    name: str | None
    contact: str | None


class ScopeKnowledgeBase(TypedDict):
    """A knowledge base in the caller's recall scope; ``owner`` None for one's own."""

    id: str
    name: str
    owned: bool
    owner: Sharer | None


class ScopeReply(TypedDict):
    """``GET /hook/knowledge-bases``: the recall scope, how many of the caller's others are not in it
    (when the cloud answered), and what the cloud came to."""

    knowledge_bases: list[ScopeKnowledgeBase]
    not_in_recall: NotRequired[int]
    cloud: str


class SearchExcerpt(TypedDict):
    """One of ``POST /hook/search``'s excerpts: a cloud recall item's fields passed on as they came
    (``content`` as ``text``)."""

    title: str
    text: str
    file: RecallFile | None
    files: list[RecallFile] | None
    knowledge_base: RecallKb | None
    knowledge_bases: list[RecallGroupKb] | None
    owner: RecallOwner | None
    # The team through which the user reads the excerpt's knowledge base, when only through one.
    team: NotRequired[RecallTeam | None]


class SearchReply(TypedDict):
    """``POST /hook/search``: the excerpts, whether some knowledge bases did not answer, how many were
    searched (when the cloud answered), what the cloud came to, and for ``rate_limited`` the seconds to
    wait."""

    excerpts: list[SearchExcerpt]
    partial: bool
    scope_size: NotRequired[int | None]
    cloud: str
    retry_after: NotRequired[int]
