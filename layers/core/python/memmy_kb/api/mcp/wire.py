"""The MCP endpoint's HTTP and JSON-RPC shapes: the request and response the function hands over, the
error codes, and what a POST body must be (one JSON-RPC request or notification object, never a batch).

Plain dataclasses and ``json``: this module is imported on the MCP function's cold start, whose budget
leaves no room for pydantic models or the MCP SDK (docs/architecture.md, "Module map").
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

JSONRPC_VERSION: Final = "2.0"

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603
HEADER_MISMATCH: Final = -32020
UNSUPPORTED_PROTOCOL_VERSION: Final = -32022

# A recall query is at most 4,000 characters (16 KB of UTF-8); no request of ours comes near this.
MAX_BODY_BYTES: Final = 64 * 1024

JSON_HEADERS: Final = {"Content-Type": "application/json", "Cache-Control": "no-store"}


@dataclass(frozen=True)
class HttpRequest:
    """One HTTP request to the MCP endpoint; header names in lower case."""

    method: str
    headers: Mapping[str, str]
    body: bytes


@dataclass(frozen=True)
class HttpResponse:
    """What the endpoint answers: a JSON body, or an empty one (202, 405, 406, 415)."""

    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""


RequestId = str | int


class RpcFailure(Exception):
    """A JSON-RPC error to answer in place of a result (its HTTP status is the era's to choose)."""

    def __init__(
        self, code: int, message: str, data: Any = None, *, request_id: RequestId | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data
        # Set when the failure is found before a request was read whole, yet its id was.
        self.request_id = request_id


@dataclass(frozen=True)
class RpcRequest:
    """A JSON-RPC request: an ``id`` (string or integer), a method, its params (an object, maybe empty)."""

    id: RequestId
    method: str
    params: dict[str, Any]

    @property
    def meta(self) -> Mapping[str, Any] | None:
        """``params._meta`` when it is an object."""
        meta = self.params.get("_meta")
        return meta if isinstance(meta, dict) else None


@dataclass(frozen=True)
class RpcNotification:
    """A JSON-RPC notification (no ``id``): acknowledged with 202 and dropped."""

    method: str


def json_response(
    status: int, payload: Mapping[str, Any], extra_headers: Mapping[str, str] | None = None
) -> HttpResponse:
    body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return HttpResponse(status=status, headers={**JSON_HEADERS, **(extra_headers or {})}, body=body)


def error_payload(request_id: RequestId | None, code: int, message: str, data: Any = None) -> dict[str, Any]:
    """A JSON-RPC error response; ``id`` is null when the request's could not be read."""
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": JSONRPC_VERSION, "id": request_id, "error": error}


def result_payload(request_id: RequestId, result: Mapping[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": JSONRPC_VERSION, "id": request_id, "result": dict(result)}


def error_response(
    status: int, request_id: RequestId | None, code: int, message: str, data: Any = None
) -> HttpResponse:
    return json_response(status, error_payload(request_id, code, message, data))


def _media_types(header: str) -> list[tuple[str, float]]:
    """``(type/subtype, q)`` of each media range of an ``Accept`` or ``Content-Type`` value, lower-cased."""
    ranges = []
    for part in header.split(","):
        media, *parameters = (piece.strip() for piece in part.split(";"))
        quality = 1.0
        for parameter in parameters:
            name, _, value = parameter.partition("=")
            if name.strip().lower() == "q":
                try:
                    quality = float(value.strip())
                except ValueError:
                    quality = 0.0
        if media:
            ranges.append((media.lower(), quality))
    return ranges


def accepts_json(headers: Mapping[str, str]) -> bool:
    """Whether ``Accept`` allows ``application/json`` (itself, ``application/*`` or ``*/*``, q above 0).

    A request without ``Accept`` does not: MCP clients must list JSON (and SSE) there, as the SDK checks.
    """
    return any(
        media in ("application/json", "application/*", "*/*") and quality > 0
        for media, quality in _media_types(headers.get("accept", ""))
    )


def is_json_content(headers: Mapping[str, str]) -> bool:
    """Whether ``Content-Type`` is ``application/json`` (any case, any parameters such as charset)."""
    types = _media_types(headers.get("content-type", ""))
    return len(types) == 1 and types[0][0] == "application/json"


def _valid_id(value: Any) -> bool:
    # MCP: a request id is a string or an integer, never null (and a JSON boolean is no integer).
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def read_message(body: bytes) -> RpcRequest | RpcNotification:
    """The one JSON-RPC request or notification a POST body holds; RpcFailure (-32700/-32600) otherwise."""
    try:
        decoded = json.loads(body)
    except (ValueError, RecursionError):
        # Not only bad JSON: bytes that are not UTF-8, integers of thousands of digits, deep nesting.
        raise RpcFailure(PARSE_ERROR, "The body is not JSON.") from None
    if isinstance(decoded, list):
        raise RpcFailure(INVALID_REQUEST, "Batches are not accepted: send one JSON-RPC request per POST.")
    if not isinstance(decoded, dict):
        raise RpcFailure(INVALID_REQUEST, "The body must be one JSON-RPC request or notification object.")
    method = decoded.get("method")
    params = decoded.get("params", {})
    well_formed = (
        decoded.get("jsonrpc") == JSONRPC_VERSION and isinstance(method, str) and isinstance(params, dict)
    )
    if "id" not in decoded:
        if not well_formed:
            raise RpcFailure(INVALID_REQUEST, "The body is not a JSON-RPC request or notification.")
        return RpcNotification(method=str(method))
    request_id = decoded["id"]
    if not _valid_id(request_id):
        raise RpcFailure(INVALID_REQUEST, "A request's id must be a string or an integer.")
    if not well_formed:
        raise RpcFailure(INVALID_REQUEST, "The body is not a JSON-RPC request.", request_id=request_id)
    return RpcRequest(id=request_id, method=str(method), params=params)
