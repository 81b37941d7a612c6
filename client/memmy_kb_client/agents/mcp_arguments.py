"""The arguments of ``memmy-kb mcp``'s two tools, checked strictly against their input schemas and refused
in plain words (docs/desktop.md, "Agents that search")."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from memmy_kb_client.agents.mcp_service import ToolRefused
from memmy_kb_client.recall_contract import MAX_QUERY_CHARS, MAX_RECALL_LIMIT


@dataclass(frozen=True)
class SearchArguments:
    query: str
    knowledge_bases: list[str] | None
    limit: int | None


SEARCH_ARGUMENTS: Final = ("query", "knowledge_bases", "limit")


def _shown(value: Any) -> str:
    """A JSON value as the agent wrote it, cut short: ``true``, ``"3"``, ``2.5``."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:39] + "…"


def _unknown(tool: str, arguments: Mapping[str, Any], known: Sequence[str]) -> None:
    unknown = [name for name in arguments if name not in known]
    if unknown:
        takes = ", ".join(known) if known else "no arguments"
        raise ToolRefused(f"{tool} takes {takes}; not {', '.join(_shown(name) for name in unknown)}.")


def search_arguments(arguments: Mapping[str, Any] | None) -> SearchArguments:
    """``search_knowledge``'s arguments, strictly: a string query (cut to ``MAX_QUERY_CHARS``, not
    empty), a list of strings for ``knowledge_bases``, a whole number from 1 to ``MAX_RECALL_LIMIT`` for ``limit``
    (``true`` is no number, ``3.0`` is 3); ``ToolRefused`` in plain words for anything else."""
    given = arguments or {}
    _unknown("search_knowledge", given, SEARCH_ARGUMENTS)
    query = given.get("query")
    if query is None:
        raise ToolRefused("search_knowledge needs a query: the words to search for, as a string.")
    if not isinstance(query, str):
        raise ToolRefused(f"The query must be a string of words to search for, not {_shown(query)}.")
    names = given.get("knowledge_bases")
    if names is not None and (not isinstance(names, list) or not all(isinstance(n, str) for n in names)):
        raise ToolRefused(
            "knowledge_bases must be a list of knowledge base names or ids (strings), not "
            f"{_shown(names)}; leave it out to search every knowledge base in your recall."
        )
    limit = given.get("limit")
    if isinstance(limit, float) and limit.is_integer():
        limit = int(limit)
    if limit is not None and (
        not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_RECALL_LIMIT
    ):
        raise ToolRefused(f"limit must be a whole number from 1 to {MAX_RECALL_LIMIT}, not {_shown(limit)}.")
    return SearchArguments(check_query(query), names, limit)


def list_arguments(arguments: Mapping[str, Any] | None) -> None:
    """``list_knowledge_bases`` takes no arguments: ``ToolRefused`` naming any it is given."""
    _unknown("list_knowledge_bases", arguments or {}, ())


def check_query(query: str) -> str:
    """The query as the service takes it: trimmed and cut to ``MAX_QUERY_CHARS``; ``ToolRefused`` for an
    empty one."""
    cleaned = query.strip()[:MAX_QUERY_CHARS].strip()
    if not cleaned:
        raise ToolRefused("The query is empty: say what to search for.")
    return cleaned
