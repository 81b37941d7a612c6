"""MCP 2026-07-28, served statelessly: every request carries its protocol version and the client's
capabilities in ``params._meta``, mirrored in the request-metadata headers; there is no handshake and no
session. Each request climbs the same ladder, first failure wins (as the SDK's server does): the envelope
(-32602), the headers against the body (-32020), the version (-32022), the method (-32601, HTTP 404).

Every result says ``resultType: "complete"`` and names the server in ``_meta``; the cacheable ones
(``server/discover``, ``tools/list``) carry ``ttlMs`` and ``cacheScope: "private"``: what a person may
search depends on who they are, so no cache may serve one person's answers to another.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from memmy_kb.api.mcp import headers as request_headers
from memmy_kb.api.mcp.tools import ServerInfo, Tool, call_tool, list_tools
from memmy_kb.api.mcp.versions import (
    LEGACY_VERSIONS,
    MODERN_VERSIONS,
    SUPPORTED_VERSIONS,
    unsupported_version,
)
from memmy_kb.api.mcp.wire import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
    HttpResponse,
    RpcFailure,
    RpcRequest,
    error_response,
    json_response,
    result_payload,
)

PROTOCOL_VERSION_KEY: Final = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_KEY: Final = "io.modelcontextprotocol/clientCapabilities"
SERVER_INFO_KEY: Final = "io.modelcontextprotocol/serverInfo"

# The tools change only with a deployment: a client may reuse the list (and discover's answer) this long.
CACHE_TTL_MS: Final = 5 * 60 * 1000
CACHE_SCOPE: Final = "private"
CAPABILITIES: Final = {"tools": {"listChanged": False}}

# The HTTP status of each error code (the transport's table); any other code is answered 200.
ERROR_STATUS: Final = {
    PARSE_ERROR: 400,
    INVALID_REQUEST: 400,
    INVALID_PARAMS: 400,
    HEADER_MISMATCH: 400,
    UNSUPPORTED_PROTOCOL_VERSION: 400,
    METHOD_NOT_FOUND: 404,
}


def is_modern(headers: Mapping[str, str], request: RpcRequest) -> bool:
    """Whether a request speaks 2026-07-28 or later: a version header no ``initialize`` revision has, or a
    protocol version in ``_meta`` (then a missing or legacy header is a mismatch, not a legacy request)."""
    header = headers.get(request_headers.PROTOCOL_VERSION_HEADER)
    if header is not None and header not in LEGACY_VERSIONS:
        return True
    meta = request.meta
    return meta is not None and PROTOCOL_VERSION_KEY in meta


def _envelope_version(headers: Mapping[str, str], request: RpcRequest) -> Any:
    meta = request.meta
    header = headers.get(request_headers.PROTOCOL_VERSION_HEADER)
    if meta is None and header is not None and header not in MODERN_VERSIONS:
        # No envelope and a version header of no revision we speak: say which ones we do.
        raise unsupported_version(header)
    if meta is None:
        raise RpcFailure(
            INVALID_PARAMS,
            f"params._meta must be an object carrying {PROTOCOL_VERSION_KEY!r} and {CLIENT_CAPABILITIES_KEY!r}.",
        )
    missing = [key for key in (PROTOCOL_VERSION_KEY, CLIENT_CAPABILITIES_KEY) if key not in meta]
    if missing:
        raise RpcFailure(INVALID_PARAMS, f"params._meta lacks {', '.join(missing)}.")
    if not isinstance(meta[CLIENT_CAPABILITIES_KEY], dict):
        raise RpcFailure(INVALID_PARAMS, f"{CLIENT_CAPABILITIES_KEY} must be an object.")
    return meta[PROTOCOL_VERSION_KEY]


def _discover(tools: Sequence[Tool], server: ServerInfo, params: Mapping[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = {
        "supportedVersions": list(SUPPORTED_VERSIONS),
        "capabilities": CAPABILITIES,
        "ttlMs": CACHE_TTL_MS,
        "cacheScope": CACHE_SCOPE,
    }
    if server.instructions is not None:
        result["instructions"] = server.instructions
    return result


def _tools_list(tools: Sequence[Tool], server: ServerInfo, params: Mapping[str, Any]) -> dict[str, Any]:
    return {"tools": list_tools(tools, params), "ttlMs": CACHE_TTL_MS, "cacheScope": CACHE_SCOPE}


def _tools_call(tools: Sequence[Tool], server: ServerInfo, params: Mapping[str, Any]) -> dict[str, Any]:
    return call_tool(tools, params)


_Method = Callable[[Sequence[Tool], ServerInfo, Mapping[str, Any]], dict[str, Any]]
METHODS: Final[Mapping[str, _Method]] = {
    "server/discover": _discover,
    "tools/list": _tools_list,
    "tools/call": _tools_call,
}


def _answer(
    headers: Mapping[str, str], request: RpcRequest, tools: Sequence[Tool], server: ServerInfo
) -> dict[str, Any]:
    version = _envelope_version(headers, request)
    request_headers.check_request_headers(headers, request, version)
    if not isinstance(version, str):
        raise RpcFailure(INVALID_PARAMS, f"{PROTOCOL_VERSION_KEY} must be a string.")
    if version not in MODERN_VERSIONS:
        raise unsupported_version(version)
    method = METHODS.get(request.method)
    if method is None:
        raise RpcFailure(METHOD_NOT_FOUND, f"Method not found: {request.method}.")
    return method(tools, server, request.params)


def serve_modern(
    headers: Mapping[str, str], request: RpcRequest, tools: Sequence[Tool], server: ServerInfo
) -> HttpResponse:
    """Answer one 2026-07-28 request: its result, or its JSON-RPC error with the transport's HTTP status."""
    try:
        result = _answer(headers, request, tools, server)
    except RpcFailure as failure:
        status = ERROR_STATUS.get(failure.code, 200)
        return error_response(status, request.id, failure.code, failure.message, failure.data)
    stamped = {**result, "resultType": "complete", "_meta": {SERVER_INFO_KEY: server.implementation()}}
    return json_response(200, result_payload(request.id, stamped))
