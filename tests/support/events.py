"""Factories for Lambda events and contexts, shaped like API Gateway HTTP API (payload 2.0) sends them."""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode


@dataclass
class FakeLambdaContext:
    function_name: str = "test-function"
    memory_limit_in_mb: int = 256
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:test-function"
    aws_request_id: str = ""
    log_group_name: str = "/aws/lambda/test-function"
    log_stream_name: str = "test"
    remaining_ms: int = 10_000

    def __post_init__(self) -> None:
        self.aws_request_id = self.aws_request_id or str(uuid.uuid4())

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


def claims_for(
    user: str,
    *,
    name: str | None = None,
    email: str | None = None,
    phone: str | None = None,
    iat: int | None = None,
) -> dict[str, str]:
    """Claims as the JWT authorizer passes them on: every value a string."""
    claims = {"sub": user, "iss": "memmy-test", "aud": "memmy-kb", "iat": str(iat or int(time.time()))}
    if name:
        claims["name"] = name
    if email:
        claims.update(email=email, email_verified="true")
    if phone:
        claims.update(phone_number=phone, phone_number_verified="true")
    return claims


def http_event(
    method: str,
    path: str,
    *,
    route: str | None = None,
    path_parameters: dict[str, str] | None = None,
    claims: dict[str, str] | None = None,
    body: Any = None,
    headers: dict[str, str] | None = None,
    query: dict[str, str] | None = None,
) -> dict[str, Any]:
    raw_body = body if isinstance(body, str) or body is None else json.dumps(body)
    all_headers = {"content-type": "application/json", **{k.lower(): v for k, v in (headers or {}).items()}}
    route_key = f"{method} {route or path}"
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": path,
        "rawQueryString": urlencode(query or {}),
        "headers": all_headers,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "local",
            "domainName": "localhost",
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": "127.0.0.1",
                "userAgent": "pytest",
            },
            "requestId": str(uuid.uuid4()),
            "routeKey": route_key,
            "stage": "$default",
            "time": "29/Nov/2026:12:00:00 +0000",
            "timeEpoch": int(time.time() * 1000),
        },
        "isBase64Encoded": False,
    }
    if claims is not None:
        event["requestContext"]["authorizer"] = {"jwt": {"claims": claims, "scopes": None}}
    if query:
        event["queryStringParameters"] = query
    if path_parameters:
        event["pathParameters"] = path_parameters
    if raw_body is not None:
        event["body"] = raw_body
    return event
