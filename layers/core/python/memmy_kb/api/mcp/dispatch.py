"""``POST /mcp`` from HTTP to an answer: the transport's checks, then the request to its protocol generation.

In order: the method (only POST: 405 with ``Allow: POST``), ``Accept`` (must allow JSON: 406; we answer
JSON only, never SSE), ``Content-Type`` (JSON: 415), the size (413), the body (one JSON-RPC message: -32700
or -32600, HTTP 400), then a notification is acknowledged (202, no body) and a request goes to the
generation it speaks (``modern``, ``legacy``). ``origin_refusal`` is separate, as the function checks the
``Origin`` before the token and this layer after it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from memmy_kb.api.mcp.headers import PROTOCOL_VERSION_HEADER
from memmy_kb.api.mcp.legacy import serve_legacy
from memmy_kb.api.mcp.modern import ERROR_STATUS, is_modern, serve_modern
from memmy_kb.api.mcp.tools import ServerInfo, Tool
from memmy_kb.api.mcp.versions import SUPPORTED_VERSIONS, unsupported_version
from memmy_kb.api.mcp.wire import (
    INVALID_REQUEST,
    MAX_BODY_BYTES,
    HttpRequest,
    HttpResponse,
    RpcFailure,
    RpcNotification,
    accepts_json,
    error_response,
    is_json_content,
    read_message,
)


def origin_refusal(headers: Mapping[str, str], allowed: frozenset[str]) -> HttpResponse | None:
    """403 for a request whose ``Origin`` is present and not listed; None to let it through.

    A request without ``Origin`` (every non-browser client) passes; the comparison is exact (an origin is
    ``scheme://host[:port]``, lower case as browsers send it), so ``null`` passes only if listed.
    """
    origin = headers.get("origin")
    if origin is None or origin in allowed:
        return None
    return error_response(
        403, None, INVALID_REQUEST, "Requests from this origin may not call the MCP endpoint."
    )


def _transport_refusal(request: HttpRequest) -> HttpResponse | None:
    if request.method.upper() != "POST":
        return HttpResponse(status=405, headers={"Allow": "POST"})
    if not accepts_json(request.headers):
        return error_response(406, None, INVALID_REQUEST, "The Accept header must allow application/json.")
    if not is_json_content(request.headers):
        return error_response(415, None, INVALID_REQUEST, "The body must be sent as application/json.")
    if len(request.body) > MAX_BODY_BYTES:
        return error_response(413, None, INVALID_REQUEST, f"The body is larger than {MAX_BODY_BYTES} bytes.")
    return None


def _acknowledge(headers: Mapping[str, str], notification: RpcNotification) -> HttpResponse:
    # Nothing of ours acts on a notification (initialized, cancelled...): accept and drop it, unless it
    # names a version we do not speak, which the client should hear about.
    version = headers.get(PROTOCOL_VERSION_HEADER)
    if version is not None and version not in SUPPORTED_VERSIONS:
        failure = unsupported_version(version)
        return error_response(ERROR_STATUS[failure.code], None, failure.code, failure.message, failure.data)
    return HttpResponse(status=202)


def serve(request: HttpRequest, tools: Sequence[Tool], server: ServerInfo) -> HttpResponse:
    """Answer one HTTP request to the MCP endpoint, the caller's token and connection already checked."""
    refusal = _transport_refusal(request)
    if refusal is not None:
        return refusal
    try:
        message = read_message(request.body)
    except RpcFailure as failure:
        return error_response(400, failure.request_id, failure.code, failure.message, failure.data)
    if isinstance(message, RpcNotification):
        return _acknowledge(request.headers, message)
    if is_modern(request.headers, message):
        return serve_modern(request.headers, message, tools, server)
    return serve_legacy(message, tools, server)
