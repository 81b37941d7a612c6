"""An API Gateway HTTP API (payload 2.0) event as the protocol layer's ``HttpRequest``, and its
``HttpResponse`` as the proxy result Lambda returns."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memmy_kb.api.mcp import HttpRequest, HttpResponse


class BadEvent(Exception):
    """The request cannot be read (a body marked base64 that is not, ...); the message is one sentence for
    the caller (400)."""


def event_body(event: Mapping[str, Any]) -> bytes:
    """The body as bytes, decoded when API Gateway marked it base64 (``BadEvent`` when it is not)."""
    raw = event.get("body") or ""
    if not event.get("isBase64Encoded"):
        return str(raw).encode("utf-8")
    try:
        return base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError) as err:
        raise BadEvent("The body is not valid base64.") from err


def request_of(event: dict[str, Any]) -> HttpRequest:
    """The request's method, its headers with lower-case names (API Gateway keeps the client's case for
    some; repeated headers arrive joined by commas) and its body as bytes (decoded when base64)."""
    from memmy_kb.api.mcp import HttpRequest

    method = str(event.get("requestContext", {}).get("http", {}).get("method", "")).upper()
    headers = {str(k).lower(): str(v) for k, v in (event.get("headers") or {}).items()}
    return HttpRequest(method=method, headers=headers, body=event_body(event))


def proxy_result(response: HttpResponse) -> dict[str, Any]:
    """The Lambda proxy result of a response (the body as text: ours is JSON or empty)."""
    return {
        "statusCode": response.status,
        "headers": dict(response.headers),
        "body": response.body.decode("utf-8"),
        "isBase64Encoded": False,
    }


def json_response(status: int, body: Any, headers: dict[str, str] | None = None) -> HttpResponse:
    from memmy_kb.api.mcp import HttpResponse

    encoded = b"" if body is None else json.dumps(body, ensure_ascii=False).encode("utf-8")
    base = {"content-type": "application/json"} if body is not None else {}
    return HttpResponse(status=status, headers={**base, **(headers or {})}, body=encoded)
