"""The MCP protocol layer of ``POST /mcp``: pure Python (``json`` and dataclasses), no AWS and no MCP SDK,
so the MCP function's cold start stays small. It answers MCP 2026-07-28 statelessly and the ``initialize``
revisions before it (docs/architecture.md, "Module map").

The function hands ``serve`` an ``HttpRequest`` (after ``origin_refusal``, the token and the connection)
and the tools; the tools call the domain.
"""

from memmy_kb.api.mcp.dispatch import origin_refusal, serve
from memmy_kb.api.mcp.tools import InvalidToolArguments, ServerInfo, Tool, ToolOutcome
from memmy_kb.api.mcp.wire import HttpRequest, HttpResponse

__all__ = [
    "HttpRequest",
    "HttpResponse",
    "InvalidToolArguments",
    "ServerInfo",
    "Tool",
    "ToolOutcome",
    "origin_refusal",
    "serve",
]
