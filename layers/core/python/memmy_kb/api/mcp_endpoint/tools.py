"""The three read-only tools of the remote MCP endpoint, bound to one caller: ``search`` and ``fetch`` on
the recall domain (``memmy_kb.domain.remote_mcp.search``), ``list_knowledge_bases``.

Bad arguments raise ``InvalidToolArguments`` (JSON-RPC -32602); what ``/recall`` answers with 422, 429 or
503 is a tool result with ``isError`` and one sentence, as is a result ``fetch`` cannot return.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from memmy_kb.api.mcp import InvalidToolArguments, Tool, ToolOutcome
from memmy_kb.errors import DomainError
from memmy_kb.observability import metrics

MAX_QUERY = 4000
MAX_KBS = 50
_ID = {"type": "string", "minLength": 1, "maxLength": 64, "pattern": "^[A-Za-z0-9_-]+$"}
_NAMED = {"type": ["object", "null"]}
_SEARCH_INPUT = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "minLength": 1, "maxLength": MAX_QUERY, "description": "What to look for"},
        "knowledge_base_ids": {
            "type": "array",
            "items": _ID,
            "maxItems": MAX_KBS,
            "uniqueItems": True,
            "description": "Search only these knowledge bases of your recall scope (list_knowledge_bases)",
        },
    },
    "required": ["query"],
    "additionalProperties": False,
}
_RESULT = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "title": {"type": "string"},
        "text": {"type": "string"},
        "url": {"type": "null"},
        "knowledge_base": _NAMED,
        "sharer": _NAMED,
        "team": _NAMED,
        "file": _NAMED,
    },
    "required": ["id", "title", "text"],
}
_SEARCH_OUTPUT = {
    "type": "object",
    "properties": {"results": {"type": "array", "items": _RESULT}},
    "required": ["results"],
}
_FETCH_INPUT = {
    "type": "object",
    "properties": {"id": {"type": "string", "minLength": 1, "maxLength": 64, "description": "A result's id"}},
    "required": ["id"],
    "additionalProperties": False,
}
_KB = {"type": "object", "properties": {"id": {"type": "string"}, "name": {"type": "string"}}}
_LIST_OUTPUT = {
    "type": "object",
    "properties": {"in_recall": {"type": "array", "items": _KB}, "not_in_recall": {"type": "array", "items": _KB}},
    "required": ["in_recall", "not_in_recall"],
}


def _outcome(structured: dict[str, Any]) -> ToolOutcome:
    return ToolOutcome(structured=structured, text=json.dumps(structured, ensure_ascii=False))


def _refusal(err: DomainError, metric: str) -> ToolOutcome:
    metrics.add_metric(name=metric, unit=MetricUnit.Count, value=1)
    return ToolOutcome(structured=None, text=err.message, is_error=True)


def _only(arguments: dict[str, Any], allowed: set[str]) -> None:
    extra = sorted(set(arguments) - allowed)
    if extra:
        raise InvalidToolArguments(f"Unknown arguments: {', '.join(extra)}.")


def search_arguments(arguments: dict[str, Any]) -> tuple[str, list[str] | None]:
    """The query (trimmed, 1-4000 characters) and the KB ids (at most 50, each once) of a ``search``."""
    _only(arguments, {"query", "knowledge_base_ids"})
    query = arguments.get("query")
    if not isinstance(query, str) or not query.strip() or len(query.strip()) > MAX_QUERY:
        raise InvalidToolArguments("query must be a text of 1 to 4000 characters.")
    ids = arguments.get("knowledge_base_ids")
    if ids is None:
        return query.strip(), None
    if (
        not isinstance(ids, list)
        or len(ids) > MAX_KBS
        or not all(isinstance(i, str) and 0 < len(i) <= 64 for i in ids)
        or len(set(ids)) != len(ids)
    ):
        raise InvalidToolArguments("knowledge_base_ids must be at most 50 distinct knowledge base ids.")
    return query.strip(), ids


def bound_tools(
    user_id: str,
    search: Callable[[str, str, list[str] | None, float], dict[str, Any]],
    fetch: Callable[[str, str, float], dict[str, Any]],
    listing: Callable[[str], dict[str, Any]],
) -> list[Tool]:
    """The tools for ``user_id``, each calling the domain function given for it."""

    def call_search(arguments: dict[str, Any]) -> ToolOutcome:
        query, ids = search_arguments(arguments)
        try:
            return _outcome(search(user_id, query, ids, time.time()))
        except DomainError as err:  # 422 out of scope, 429 rate limited, 503 MemOS: one sentence
            return _refusal(err, "McpSearchRefused")

    def call_fetch(arguments: dict[str, Any]) -> ToolOutcome:
        _only(arguments, {"id"})
        hid = arguments.get("id")
        if not isinstance(hid, str) or not 0 < len(hid) <= 64:
            raise InvalidToolArguments("id must be the id of a search result.")
        try:
            return _outcome(fetch(user_id, hid, time.time()))
        except DomainError as err:
            return _refusal(err, "McpFetchRefused")

    def call_list(arguments: dict[str, Any]) -> ToolOutcome:
        _only(arguments, set())
        return _outcome(listing(user_id))

    return [
        Tool(
            name="search",
            title="Search knowledge bases",
            description="Search the knowledge bases in your recall scope; returns excerpts with their source.",
            input_schema=_SEARCH_INPUT,
            output_schema=_SEARCH_OUTPUT,
            call=call_search,
        ),
        Tool(
            name="fetch",
            title="Fetch a search result",
            description="One result of a search of the last hour, by its id, with its source.",
            input_schema=_FETCH_INPUT,
            output_schema=None,
            call=call_fetch,
        ),
        Tool(
            name="list_knowledge_bases",
            title="List knowledge bases",
            description="The knowledge bases you can read, those in your recall scope first.",
            input_schema={"type": "object", "properties": {}, "additionalProperties": False},
            output_schema=_LIST_OUTPUT,
            call=call_list,
        ),
    ]
