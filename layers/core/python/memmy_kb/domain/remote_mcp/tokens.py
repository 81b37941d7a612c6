"""The MCP access token's claims, checked once its signature is (``memmy_kb.api.mcp_endpoint.bearer``).

A token is for us only when its issuer is the authorization server's, its audience names this resource
exactly (a string, or a list holding it), it is within its life (at most an hour, with a minute's leeway
for the clocks) and it names a user and a client. Everything here is pure: the time is passed in.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

LEEWAY_SECONDS = 60
MAX_LIFETIME_SECONDS = 3600
MAX_CLIENT_NAME = 100
MCP_SCOPE = "kb.search"


class TokenRefused(Exception):
    """The token is not one this resource accepts: 401 ``invalid_token``, or with ``insufficient_scope``
    a valid token that lacks the scope: 403."""

    def __init__(self, reason: str, *, insufficient_scope: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.insufficient_scope = insufficient_scope


@dataclass(frozen=True)
class TokenRules:
    """What this resource accepts: the issuer, its own URL as the audience, and the scope it requires."""

    issuer: str
    audience: str
    scope: str


@dataclass(frozen=True)
class McpCaller:
    """Who calls, from a token accepted: the user, the OAuth client, its scope and the grant's sign-in."""

    user_id: str
    client_id: str
    client_name: str
    scope: tuple[str, ...]
    auth_time: int


def _text(claims: Mapping[str, Any], name: str) -> str:
    value = claims.get(name)
    if not isinstance(value, str) or not value.strip():
        raise TokenRefused(f"The token has no {name}.")
    return value


def _seconds(claims: Mapping[str, Any], name: str) -> int:
    value = claims.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TokenRefused(f"The token has no {name}.")
    return int(value)


def _audience_ok(aud: Any, audience: str) -> bool:
    if isinstance(aud, str):
        return aud == audience
    return isinstance(aud, list) and audience in aud


def _check_life(claims: Mapping[str, Any], now: int) -> None:
    expires, issued = _seconds(claims, "exp"), _seconds(claims, "iat")
    if expires <= now - LEEWAY_SECONDS:
        raise TokenRefused("The token has expired.")
    if issued > now + LEEWAY_SECONDS or ("nbf" in claims and _seconds(claims, "nbf") > now + LEEWAY_SECONDS):
        raise TokenRefused("The token is not valid yet.")
    if expires - issued > MAX_LIFETIME_SECONDS:
        raise TokenRefused("The token lives longer than an hour.")


def accept_claims(claims: Mapping[str, Any], rules: TokenRules, now: int) -> McpCaller:
    """The caller a signed token's claims name, or ``TokenRefused``: issuer, audience and life first
    (401), then the scope (403)."""
    if claims.get("iss") != rules.issuer:
        raise TokenRefused("The token is from another issuer.")
    if not _audience_ok(claims.get("aud"), rules.audience):
        raise TokenRefused("The token is for another resource.")
    _check_life(claims, now)
    user_id, client_id = _text(claims, "sub"), _text(claims, "client_id")
    scope = claims.get("scope", "")
    scopes = tuple(scope.split()) if isinstance(scope, str) else ()
    if rules.scope not in scopes:
        raise TokenRefused(f"The token lacks the scope {rules.scope}.", insufficient_scope=True)
    # Required: a refreshed token's iat is new, so only the sign-in's time can tell a disconnected
    # client's refresh from a new consent.
    auth_time = _seconds(claims, "auth_time")
    name = claims.get("client_name")
    client_name = name.strip()[:MAX_CLIENT_NAME] if isinstance(name, str) and name.strip() else client_id
    return McpCaller(user_id, client_id, client_name, scopes, auth_time)


def mcp_access_claims(
    sub: str,
    *,
    issuer: str,
    resource: str,
    client_id: str,
    auth_time: int,
    now: int,
    ttl_seconds: int = MAX_LIFETIME_SECONDS,
    client_name: str | None = None,
    scope: str = MCP_SCOPE,
) -> dict[str, Any]:
    """The claims of an MCP access token, as ``accept_claims`` reads them: ``aud`` the MCP resource URL,
    the scope, the client, when the person signed in and consented (``auth_time``, kept across
    refreshes), at most an hour of life."""
    if not 0 < ttl_seconds <= MAX_LIFETIME_SECONDS:
        raise ValueError(f"an MCP access token lives between 1 and {MAX_LIFETIME_SECONDS} seconds")
    claims: dict[str, Any] = {
        "iss": issuer,
        "sub": sub,
        "aud": resource,
        "scope": scope,
        "client_id": client_id,
        "auth_time": auth_time,
        "iat": now,
        "exp": now + ttl_seconds,
        "jti": uuid.uuid4().hex,
    }
    if client_name:
        claims["client_name"] = client_name
    return claims
