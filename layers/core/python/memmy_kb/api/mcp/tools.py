"""The tools the endpoint serves, as both protocol generations list and call them.

A tool is a name, its texts, its JSON schemas and a ``call``; the protocol layer checks only that the
arguments are an object (the tool checks the rest and raises ``InvalidToolArguments``). Every tool is
read-only, and says so in its annotations. What a tool reports as an error (``ToolOutcome(is_error=True)``)
and arguments the tool refuses (``InvalidToolArguments``) are a result the model reads (``isError: true``,
as MCP 2025-11-25 asks, so that the model can correct its call); an unknown tool or arguments that are
not an object is a JSON-RPC error (-32602); anything else a tool raises is logged and answered -32603
without its text.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from memmy_kb.api.mcp.wire import INTERNAL_ERROR, INVALID_PARAMS, RpcFailure

# Every tool of ours only reads: hints for clients that ask before calling a tool with side effects.
READ_ONLY_ANNOTATIONS: Final = {"readOnlyHint": True, "destructiveHint": False, "openWorldHint": False}


@dataclass(frozen=True)
class ToolOutcome:
    """What a tool call gives: its JSON (``structuredContent``, when given) and the text the model reads."""

    structured: dict[str, Any] | None
    text: str
    is_error: bool = False


@dataclass(frozen=True)
class Tool:
    name: str
    title: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    call: Callable[[dict[str, Any]], ToolOutcome]


class InvalidToolArguments(Exception):
    """Raised by a tool's ``call`` for arguments its schema refuses: a tool error (``isError``) with this
    message, for the model to correct its call."""


@dataclass(frozen=True)
class ServerInfo:
    """Who answers: ``serverInfo`` of ``initialize``, ``_meta`` of every modern result."""

    name: str
    version: str
    title: str
    instructions: str | None = None

    def implementation(self) -> dict[str, str]:
        return {"name": self.name, "version": self.version, "title": self.title}


def tool_definition(tool: Tool) -> dict[str, Any]:
    """A tool as ``tools/list`` names it."""
    definition: dict[str, Any] = {
        "name": tool.name,
        "title": tool.title,
        "description": tool.description,
        "inputSchema": tool.input_schema,
        "annotations": dict(READ_ONLY_ANNOTATIONS),
    }
    if tool.output_schema is not None:
        definition["outputSchema"] = tool.output_schema
    return definition


def list_tools(tools: Sequence[Tool], params: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every tool, ordered by name whatever order they came in (a client may cache the list).

    The list is one page: we never hand out a cursor, so any cursor sent is an invalid one (-32602).
    """
    if params.get("cursor") is not None:
        raise RpcFailure(INVALID_PARAMS, "Unknown cursor: tools/list has a single page.")
    return [tool_definition(tool) for tool in sorted(tools, key=lambda tool: tool.name)]


def _outcome_result(outcome: ToolOutcome) -> dict[str, Any]:
    result: dict[str, Any] = {
        "content": [{"type": "text", "text": outcome.text}],
        "isError": outcome.is_error,
    }
    if outcome.structured is not None:
        result["structuredContent"] = outcome.structured
    return result


def call_tool(tools: Sequence[Tool], params: Mapping[str, Any]) -> dict[str, Any]:
    """``tools/call``: run the named tool on its arguments; the result, or RpcFailure (-32602, -32603)."""
    name = params.get("name")
    if not isinstance(name, str):
        raise RpcFailure(INVALID_PARAMS, "tools/call needs the tool's name (params.name, a string).")
    tool = next((tool for tool in tools if tool.name == name), None)
    if tool is None:
        raise RpcFailure(INVALID_PARAMS, f"Unknown tool: {name}.")
    arguments = params.get("arguments")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise RpcFailure(INVALID_PARAMS, "A tool's arguments (params.arguments) must be an object.")
    try:
        outcome = tool.call(arguments)
    except InvalidToolArguments as invalid:
        return _outcome_result(ToolOutcome(structured=None, text=str(invalid), is_error=True))
    except Exception:
        # The caller learns only that the call failed; the log keeps what happened.
        from memmy_kb.observability import logger  # imported here: the happy path never needs Powertools

        logger.exception("An MCP tool raised", extra={"tool": name})
        raise RpcFailure(INTERNAL_ERROR, "Internal error: the tool failed; try again later.") from None
    return _outcome_result(outcome)
