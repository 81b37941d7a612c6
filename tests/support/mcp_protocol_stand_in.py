"""A stand-in for the protocol layer ``memmy_kb.api.mcp`` (the contract's interface only: the data classes,
``origin_refusal`` and a ``serve`` that answers ``tools/list`` and ``tools/call``), for the endpoint's tests
until the real layer is merged: ``install()`` registers it when the real one cannot be imported.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

MODULE = "memmy_kb.api.mcp"


@dataclass(frozen=True)
class HttpRequest:
    method: str
    headers: Mapping[str, str]
    body: bytes


@dataclass(frozen=True)
class HttpResponse:
    status: int
    headers: dict[str, str]
    body: bytes


@dataclass(frozen=True)
class ToolOutcome:
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
    pass


@dataclass(frozen=True)
class ServerInfo:
    name: str
    version: str
    title: str
    instructions: str | None = None


def _json(status: int, body: Any) -> HttpResponse:
    return HttpResponse(status, {"content-type": "application/json"}, json.dumps(body).encode())


def origin_refusal(headers: Mapping[str, str], allowed: frozenset[str]) -> HttpResponse | None:
    origin = headers.get("origin")
    if origin is None or origin in allowed:
        return None
    return _json(403, {"error": "origin_not_allowed"})


def _call(tools: Sequence[Tool], params: dict[str, Any]) -> dict[str, Any]:
    tool = next((t for t in tools if t.name == params.get("name")), None)
    if tool is None:
        raise InvalidToolArguments(f"Unknown tool {params.get('name')}")
    outcome = tool.call(params.get("arguments") or {})
    result: dict[str, Any] = {"content": [{"type": "text", "text": outcome.text}], "isError": outcome.is_error}
    if outcome.structured is not None:
        result["structuredContent"] = outcome.structured
    return result


def serve(request: HttpRequest, tools: Sequence[Tool], server: ServerInfo) -> HttpResponse:
    message = json.loads(request.body)
    ident, method = message.get("id"), message.get("method")
    try:
        if method == "tools/list":
            result: dict[str, Any] = {"tools": [{"name": t.name, "inputSchema": t.input_schema} for t in tools]}
        elif method == "tools/call":
            result = _call(tools, message.get("params") or {})
        else:
            return _json(404, {"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": method}})
    except InvalidToolArguments as err:
        return _json(200, {"jsonrpc": "2.0", "id": ident, "error": {"code": -32602, "message": str(err)}})
    return _json(200, {"jsonrpc": "2.0", "id": ident, "result": result})


def install() -> None:
    """Register this module as ``memmy_kb.api.mcp`` unless the real layer is there."""
    if MODULE in sys.modules or importlib.util.find_spec(MODULE) is not None:
        return
    module = types.ModuleType(MODULE)
    for name in ("HttpRequest", "HttpResponse", "ToolOutcome", "Tool", "InvalidToolArguments", "ServerInfo",
                 "origin_refusal", "serve"):
        setattr(module, name, globals()[name])
    sys.modules[MODULE] = module
