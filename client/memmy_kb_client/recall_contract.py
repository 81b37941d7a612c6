"""What the cloud's ``POST /recall`` takes, for every part of the client that sends one: the caps of the
cloud's request model (``tests/unit/client/test_recall_contract.py`` keeps them equal) and each agent's limit on
the block, which the cloud builds within (docs/desktop.md, "Each agent's cap"). Imports nothing: the hook
reads it before every agent turn (its annotations are never evaluated, and its types exist only for mypy)."""

from __future__ import annotations

# typing is not imported at run time (the hook imports this module); mypy reads TYPE_CHECKING as True.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Literal, NotRequired, TypedDict

    class ContextLimit(TypedDict):
        """An agent's limit on the block: ``max`` characters counted in ``unit``."""

        unit: Literal["characters", "utf16_units", "utf8_bytes"]
        max: int

    class RecallRequest(TypedDict):
        """The body of ``POST /recall`` (and of the desktop's ``POST /hook/search``, which sends it on)."""

        query: str
        knowledge_base_ids: NotRequired[list[str]]
        limit: NotRequired[int]
        context_limit: NotRequired[ContextLimit]


# A query's characters after trimming: a longer prompt is searched by its beginning.
MAX_QUERY_CHARS = 4000
# Excerpts one recall may ask for (``limit``).
MAX_RECALL_LIMIT = 25
# Knowledge-base ids one recall may narrow its scope to (``knowledge_base_ids``).
MAX_RECALL_KBS = 50

# What each agent keeps inline of a hook's output, under its limit (the cloud's ``context_limit``): Claude
# Code 10,000 characters as JavaScript counts them (UTF-16 code units), Codex 2,500 tokens estimated as UTF-8
# bytes / 4. Gemini CLI documents none: the cloud's own cap of 8,000 characters holds.
CONTEXT_LIMITS: dict[str, ContextLimit] = {
    "claude-code": {"unit": "utf16_units", "max": 9_500},
    "codex": {"unit": "utf8_bytes", "max": 9_000},
}


def recall_body(query: str, agent: str | None = None) -> RecallRequest:
    """The body of ``POST /recall`` for ``query`` (trimmed, at most ``MAX_QUERY_CHARS``), with the
    ``context_limit`` of ``agent`` when it has one."""
    body: RecallRequest = {"query": query.strip()[:MAX_QUERY_CHARS]}
    limit = CONTEXT_LIMITS.get(agent or "")
    if limit is not None:
        body["context_limit"] = {"unit": limit["unit"], "max": limit["max"]}
    return body
