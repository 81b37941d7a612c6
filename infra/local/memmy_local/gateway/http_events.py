"""API Gateway's HTTP API payload format 2.0: the event a request becomes, the response a result becomes.

``build_event`` turns a received request into the event API Gateway would hand the function (headers
comma-joined, cookies apart, a binary body base64-encoded, the authorizer's claims as strings);
``build_response`` turns the function's result into an HTTP response by API Gateway's rules, and
``error_response`` is API Gateway's own terse ``{"message": ...}`` answer.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qsl

from memmy_local.lambdas.functions import DEFAULT_ACCOUNT_ID

_TEXT_TYPES = frozenset({"application/json", "application/xml", "application/javascript"})


class GatewayError(Exception):
    """A request that API Gateway answers itself with ``{"message": ...}``; never reaches a handler."""

    def __init__(self, status: HTTPStatus, extra_headers: Mapping[str, str] | None = None) -> None:
        super().__init__(status.phrase)
        self.status = status
        self.extra_headers = dict(extra_headers or {})


@dataclass(frozen=True)
class GatewayRequest:
    """One HTTP request as received: raw path and query, headers in arrival order, body bytes."""

    method: str
    raw_path: str
    raw_query: str
    headers: list[tuple[str, str]]
    body: bytes
    source_ip: str
    protocol: str = "HTTP/1.1"

    def header(self, name: str) -> str | None:
        """All values of header ``name`` (case-insensitive), comma-joined as API Gateway does; None if absent."""
        values = [value for key, value in self.headers if key.lower() == name.lower()]
        return ",".join(values) if values else None


@dataclass(frozen=True)
class GatewayResponse:
    status: int
    headers: list[tuple[str, str]]
    body: bytes


# -------------------------------------------------------------------------------------------- events


def _is_text(content_type: str | None) -> bool:
    media_type = (content_type or "").split(";", 1)[0].strip().lower()
    return (
        media_type.startswith("text/")
        or media_type in _TEXT_TYPES
        or media_type.endswith("+json")
        or media_type.endswith("+xml")
    )


def _joined_pairs(pairs: list[tuple[str, str]]) -> dict[str, str]:
    joined: dict[str, str] = {}
    for key, value in pairs:
        joined[key] = f"{joined[key]},{value}" if key in joined else value
    return joined


def claims_as_strings(claims: Mapping[str, Any]) -> dict[str, str]:
    """Claims the way API Gateway hands them to the integration: every value a string.

    Booleans become ``"true"``/``"false"``, numbers their decimal text, arrays ``"[a b]"``.
    """
    return {name: _claim_string(value) for name, value in claims.items()}


def _claim_string(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, list):
        return "[" + " ".join(_claim_string(item) for item in value) + "]"
    return json.dumps(value, separators=(",", ":"))


@dataclass(frozen=True)
class EventContext:
    """Per-request values that do not come from the request itself."""

    route_key: str
    request_id: str
    received_at: float
    account_id: str = DEFAULT_ACCOUNT_ID
    api_id: str = "local"


def build_event(
    request: GatewayRequest,
    context: EventContext,
    path_parameters: Mapping[str, str],
    claims: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The HTTP API payload format 2.0 event API Gateway would send for ``request``."""
    cookies = [
        part.strip()
        for key, value in request.headers
        if key.lower() == "cookie"
        for part in value.split(";")
        if part.strip()
    ]
    headers = _joined_pairs(
        [(key.lower(), value) for key, value in request.headers if key.lower() != "cookie"]
    )
    headers.setdefault("x-forwarded-for", request.source_ip)
    headers.setdefault("x-forwarded-proto", "http")
    host = headers.get("host", "")
    received = datetime.fromtimestamp(context.received_at, tz=UTC)
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": context.route_key,
        "rawPath": request.raw_path,
        "rawQueryString": request.raw_query,
        "headers": headers,
        "requestContext": {
            "accountId": context.account_id,
            "apiId": context.api_id,
            "domainName": host,
            "domainPrefix": host.split(".", 1)[0],
            "http": {
                "method": request.method,
                "path": request.raw_path,
                "protocol": request.protocol,
                "sourceIp": request.source_ip,
                "userAgent": headers.get("user-agent", ""),
            },
            "requestId": context.request_id,
            "routeKey": context.route_key,
            "stage": "$default",
            "time": received.strftime("%d/%b/%Y:%H:%M:%S +0000"),
            "timeEpoch": int(context.received_at * 1000),
        },
        "isBase64Encoded": False,
    }
    if cookies:
        event["cookies"] = cookies
    if request.raw_query:
        event["queryStringParameters"] = _joined_pairs(parse_qsl(request.raw_query, keep_blank_values=True))
    if path_parameters:
        event["pathParameters"] = dict(path_parameters)
    if claims is not None:
        event["requestContext"]["authorizer"] = {"jwt": {"claims": claims_as_strings(claims), "scopes": None}}
    if request.body:
        if _is_text(headers.get("content-type")):
            event["body"] = request.body.decode("utf-8", errors="replace")
        else:
            event["body"] = base64.b64encode(request.body).decode("ascii")
            event["isBase64Encoded"] = True
    return event


# ------------------------------------------------------------------------------------------ responses


class MalformedResponseError(ValueError):
    """A handler result that API Gateway could not turn into an HTTP response (it answers 500)."""


def build_response(result: Any) -> GatewayResponse:
    """The HTTP response API Gateway makes of a payload 2.0 handler ``result``.

    A dict with ``statusCode`` is taken field by field; anything else is JSON-encoded with 200.
    """
    try:
        # Lambda serialises the result to JSON; a result it cannot serialise is a function error.
        result = json.loads(json.dumps(result))
    except (TypeError, ValueError) as err:
        raise MalformedResponseError(f"result is not JSON-serialisable: {err}") from err
    if not (isinstance(result, dict) and "statusCode" in result):
        body = json.dumps(result).encode()
        return GatewayResponse(HTTPStatus.OK, [("content-type", "application/json")], body)
    status = result["statusCode"]
    if not isinstance(status, int) or not 100 <= status <= 599:
        raise MalformedResponseError(f"statusCode {status!r} is not an HTTP status")
    headers = [(str(k).lower(), _header_value(v)) for k, v in (result.get("headers") or {}).items()]
    for name, values in (result.get("multiValueHeaders") or {}).items():
        headers.extend((str(name).lower(), _header_value(v)) for v in values)
    headers.extend(("set-cookie", str(cookie)) for cookie in result.get("cookies") or [])
    return GatewayResponse(status, headers, _response_body(result))


def _header_value(value: Any) -> str:
    text = _claim_string(value) if not isinstance(value, str) else value
    if "\r" in text or "\n" in text:
        raise MalformedResponseError("header value contains a line break")
    return text


def _response_body(result: Mapping[str, Any]) -> bytes:
    body = result.get("body")
    if body is None:
        return b""
    if not isinstance(body, str):
        raise MalformedResponseError(f"body must be a string, not {type(body).__name__}")
    if not result.get("isBase64Encoded"):
        return body.encode()
    try:
        return base64.b64decode(body, validate=True)
    except binascii.Error as err:
        raise MalformedResponseError("isBase64Encoded body is not base64") from err


def error_response(error: GatewayError) -> GatewayResponse:
    """API Gateway's own answer: ``{"message": "<reason phrase>"}``."""
    body = json.dumps({"message": error.status.phrase}).encode()
    headers = [("content-type", "application/json"), *error.extra_headers.items()]
    return GatewayResponse(error.status, headers, body)
