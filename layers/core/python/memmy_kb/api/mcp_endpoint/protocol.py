"""The protocol layer's names this package uses, from one place (``memmy_kb.api.mcp``: contract of the
JSON-RPC layer, pure Python, no SDK)."""

from __future__ import annotations

from memmy_kb.api.mcp import (
    HttpRequest,
    HttpResponse,
    InvalidToolArguments,
    ServerInfo,
    Tool,
    ToolOutcome,
    origin_refusal,
    serve,
)

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
