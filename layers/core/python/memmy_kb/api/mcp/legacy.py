"""The ``initialize`` revisions (2025-03-26, 2025-06-18, 2025-11-25) for clients that open with the
handshake: they have no way forward to 2026-07-28, so the endpoint answers them too.

Statelessly all the same: ``initialize`` negotiates a version and answers without an ``Mcp-Session-Id``,
which tells the client there is no session to keep; every later request is served on its own, with or
without a session id header (we keep none, so any is ignored), whether or not this instance saw the
handshake. JSON-RPC errors travel with HTTP 200 as these revisions expect (to them a 404 means "your
session is gone": they would start the handshake over).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from memmy_kb.api.mcp.tools import ServerInfo, Tool, call_tool, list_tools
from memmy_kb.api.mcp.versions import LEGACY_VERSIONS
from memmy_kb.api.mcp.wire import (
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    HttpResponse,
    RpcFailure,
    RpcRequest,
    error_response,
    json_response,
    result_payload,
)

CAPABILITIES: Final = {"tools": {"listChanged": False}}


def negotiate(requested: str) -> str:
    """The version to speak: the client's when we speak it, else the newest handshake revision we do (the
    client then decides whether it can speak that one)."""
    return requested if requested in LEGACY_VERSIONS else LEGACY_VERSIONS[0]


def _initialize(tools: Sequence[Tool], server: ServerInfo, params: Mapping[str, Any]) -> dict[str, Any]:
    requested = params.get("protocolVersion")
    if not isinstance(requested, str):
        raise RpcFailure(INVALID_PARAMS, "initialize needs params.protocolVersion, a string.")
    result: dict[str, Any] = {
        "protocolVersion": negotiate(requested),
        "capabilities": CAPABILITIES,
        "serverInfo": server.implementation(),
    }
    if server.instructions is not None:
        result["instructions"] = server.instructions
    return result


def _ping(tools: Sequence[Tool], server: ServerInfo, params: Mapping[str, Any]) -> dict[str, Any]:
    return {}


def _tools_list(tools: Sequence[Tool], server: ServerInfo, params: Mapping[str, Any]) -> dict[str, Any]:
    return {"tools": list_tools(tools, params)}


def _tools_call(tools: Sequence[Tool], server: ServerInfo, params: Mapping[str, Any]) -> dict[str, Any]:
    return call_tool(tools, params)


_Method = Callable[[Sequence[Tool], ServerInfo, Mapping[str, Any]], dict[str, Any]]
METHODS: Final[Mapping[str, _Method]] = {
    "initialize": _initialize,
    "ping": _ping,
    "tools/list": _tools_list,
    "tools/call": _tools_call,
}


def serve_legacy(request: RpcRequest, tools: Sequence[Tool], server: ServerInfo) -> HttpResponse:
    """Answer one request of an ``initialize`` revision: its result or its JSON-RPC error, both with 200."""
    method = METHODS.get(request.method)
    try:
        if method is None:
            raise RpcFailure(METHOD_NOT_FOUND, f"Method not found: {request.method}.")
        result = method(tools, server, request.params)
    except RpcFailure as failure:
        return error_response(200, request.id, failure.code, failure.message, failure.data)
    return json_response(200, result_payload(request.id, result))
