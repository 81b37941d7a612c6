"""API Gateway HTTP API (payload 2.0) events for the MCP authorization server (``functions/mcp_auth``),
shaped as API Gateway sends them: ``rawQueryString`` as the browser sent it (repeated parameters kept),
cookies in ``cookies``, a form body optionally base64-encoded."""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlencode

DOMAIN = "kb.example.test"
ISSUER = f"https://{DOMAIN}"
RESOURCE = f"{ISSUER}/mcp"
FORM = "application/x-www-form-urlencoded"
# The function's routes in template.yaml, every one without the API's authorizer.
AUTHORIZATION_SERVER_ROUTES = frozenset(
    {
        ("GET", "/.well-known/oauth-authorization-server"),
        ("POST", "/oauth/register"),
        ("GET", "/oauth/authorize"),
        ("GET", "/oauth/callback"),
        ("POST", "/oauth/consent"),
        ("POST", "/oauth/token"),
        ("POST", "/oauth/revoke"),
        ("GET", "/oauth/jwks"),
    }
)


def auth_event(
    method: str,
    path: str,
    *,
    query: Sequence[tuple[str, str]] | dict[str, str] = (),
    form: Sequence[tuple[str, str]] | dict[str, str] | None = None,
    json_body: Any = None,
    cookies: Sequence[str] = (),
    headers: dict[str, str] | None = None,
    base64_body: bool = False,
    source_ip: str = "198.51.100.7",
    domain: str = DOMAIN,
    raw_query: str | None = None,
) -> dict[str, Any]:
    """One event of the route ``<method> <path>``; ``raw_query`` is sent as the query string as it is."""
    all_headers = {k.lower(): v for k, v in (headers or {}).items()}
    body: str | None = None
    if form is not None:
        body = urlencode(list(form.items()) if isinstance(form, dict) else list(form))
        all_headers.setdefault("content-type", FORM)
    elif json_body is not None:
        body = json.dumps(json_body)
        all_headers.setdefault("content-type", "application/json")
    if body is not None and base64_body:
        body = base64.b64encode(body.encode("utf-8")).decode("ascii")
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": f"{method} {path}",
        "rawPath": path,
        "rawQueryString": raw_query
        if raw_query is not None
        else urlencode(list(query.items()) if isinstance(query, dict) else list(query)),
        "headers": all_headers,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "api",
            "domainName": domain,
            "http": {"method": method, "path": path, "protocol": "HTTP/1.1", "sourceIp": source_ip,
                     "userAgent": "pytest"},
            "requestId": str(uuid.uuid4()),
            "routeKey": f"{method} {path}",
            "stage": "$default",
        },
        "isBase64Encoded": base64_body,
    }
    if cookies:
        event["cookies"] = list(cookies)
    if body is not None:
        event["body"] = body
    return event


def cookie_of(result: dict[str, Any], name: str) -> str | None:
    """The value a proxy result sets for cookie ``name`` (None when it sets none)."""
    for item in result.get("cookies", []):
        key, _, rest = str(item).partition("=")
        if key == name:
            return rest.split(";", 1)[0]
    return None
