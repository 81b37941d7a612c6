"""The dev identity provider's client and the records its grants pass around, as Authlib's mixins want
them: the desktop as a public client, who signed in, an authorization code, a refresh token (by hash) and
a device request (RFC 8628). ``memmy_local.identity.state`` keeps them."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from authlib.oauth2.rfc6749 import ClientMixin, scope_to_list
from authlib.oauth2.rfc8628 import DeviceCredentialMixin
from authlib.oidc.core import AuthorizationCodeMixin

from memmy_local.tokens import profile_claims

CLIENT_ID = "memmy-desktop"
SCOPES = ("openid", "profile", "email", "phone", "offline_access")
# The service's own authorization server for MCP clients signs people in here when the local provider is
# its login provider (docs/remote-mcp.md): a public client, PKCE, no refresh tokens.
MCP_AUTH_CLIENT_ID = "memmy-mcp-auth"
MCP_AUTH_SCOPES = ("openid", "profile", "email", "phone")
DEVICE_GRANT_TYPE = "urn:ietf:params:oauth:grant-type:device_code"
GRANT_TYPES = ("authorization_code", "refresh_token", DEVICE_GRANT_TYPE)
DEVICE_POLL_INTERVAL = 5
WRONG_CODES_PER_DEVICE = 5
# RFC 8252 loopback redirect: any port, path /callback, nothing else (no query, no fragment).
LOOPBACK_CALLBACK = re.compile(r"http://127\.0\.0\.1:([1-9][0-9]{0,4})/callback")
# The authorization server's callback on a loopback port: 127.0.0.1 or localhost, path /oauth/callback.
MCP_AUTH_CALLBACK = re.compile(r"http://(?:127\.0\.0\.1|localhost):([1-9][0-9]{0,4})/oauth/callback")

Clock = Callable[[], float]


def is_loopback_callback(uri: str | None, pattern: re.Pattern[str] = LOOPBACK_CALLBACK) -> bool:
    """``http://127.0.0.1:<port>/callback`` exactly (or what ``pattern`` names), with a port in 1..65535."""
    found = pattern.fullmatch(uri or "")
    return found is not None and int(found.group(1)) <= 65535


@dataclass(frozen=True)
class Identity:
    """Who signed in, as typed on the sign-in form, and when."""

    user_id: str
    name: str | None = None
    email: str | None = None
    phone: str | None = None
    auth_time: int = 0

    def claims(self, scope: str | None = None) -> dict[str, Any]:
        """``sub`` plus the verified profile claims; with ``scope``, only those its scopes name."""
        scopes = set(scope_to_list(scope)) if scope is not None else {"profile", "email", "phone"}
        return {"sub": self.user_id} | profile_claims(
            name=self.name if "profile" in scopes else None,
            email=self.email if "email" in scopes else None,
            phone=self.phone if "phone" in scopes else None,
        )


class PublicClient(ClientMixin):  # type: ignore[misc]
    """The desktop (``memmy-desktop``) or the service's authorization server (``memmy-mcp-auth``): public,
    PKCE, loopback redirect URIs only."""

    client_metadata: dict[str, Any] = {}  # noqa: RUF012 - read by Authlib's userinfo endpoint

    def __init__(self, client_id: str = CLIENT_ID) -> None:
        self.client_id = client_id
        desktop = client_id == CLIENT_ID
        self.scopes = SCOPES if desktop else MCP_AUTH_SCOPES
        self.grant_types = GRANT_TYPES if desktop else ("authorization_code",)
        self.callback = LOOPBACK_CALLBACK if desktop else MCP_AUTH_CALLBACK

    def get_client_id(self) -> str:
        return self.client_id

    def get_default_redirect_uri(self) -> None:
        return None  # the request must name its loopback callback

    def get_allowed_scope(self, scope: str | None) -> str:
        if not scope:
            return "openid"
        return " ".join(s for s in scope_to_list(scope) if s in self.scopes)

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        return is_loopback_callback(redirect_uri, self.callback)

    def check_client_secret(self, client_secret: str) -> bool:
        return False

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        return method == "none"

    def check_response_type(self, response_type: str) -> bool:
        return response_type == "code"

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type in self.grant_types


@dataclass
class AuthorizationCode(AuthorizationCodeMixin):  # type: ignore[misc]
    code: str
    client_id: str
    redirect_uri: str
    scope: str
    identity: Identity
    expires_at: float
    nonce: str | None = None
    code_challenge: str | None = None
    code_challenge_method: str | None = None
    resource: str | None = None  # RFC 8707: the MCP resource for an MCP client's code, else None

    def get_redirect_uri(self) -> str:
        return self.redirect_uri

    def get_scope(self) -> str:
        return self.scope

    def get_nonce(self) -> str | None:
        return self.nonce

    def get_auth_time(self) -> int:
        return self.identity.auth_time


@dataclass
class RefreshRecord:
    """One refresh token (by hash). ``family`` ties a token to every rotation of it."""

    token_hash: str
    family: str
    client_id: str
    scope: str
    identity: Identity
    issued_at: float
    state: str = "active"  # active | rotated | revoked
    resource: str | None = None  # RFC 8707: the MCP resource of an MCP client's grant, else None

    def check_client(self, client: ClientMixin) -> bool:
        return bool(client.get_client_id() == self.client_id)

    def get_scope(self) -> str:
        return self.scope


@dataclass
class DeviceRequest(DeviceCredentialMixin):  # type: ignore[misc]
    device_code: str
    user_code: str
    client_id: str
    scope: str
    expires_at: float
    clock: Clock = field(repr=False, default=time.time)
    identity: Identity | None = None
    interval: int = DEVICE_POLL_INTERVAL
    last_poll: float | None = None
    wrong_codes: int = 0  # wrong user codes typed at the device page while this request was pending

    def refused(self) -> bool:
        """Too many wrong user codes were typed while it was pending: it can no longer be approved."""
        return self.wrong_codes >= WRONG_CODES_PER_DEVICE

    def pending(self) -> bool:
        return self.identity is None and not self.refused() and not self.is_expired()

    def get_client_id(self) -> str:
        return self.client_id

    def get_scope(self) -> str:
        return self.scope

    def get_user_code(self) -> str:
        return self.user_code

    def is_expired(self) -> bool:
        return self.clock() >= self.expires_at
