"""What the provider's Authlib parts read of it (``TokenIssuer``), apart from the provider itself, so that
``grants`` and ``provider`` do not import each other."""

from __future__ import annotations

from typing import Any, Protocol

from joserfc.jwk import RSAKey

from memmy_local.tokens import SigningKey

from .records import Identity
from .state import IdentityState


class TokenIssuer(Protocol):
    """The provider as its grants, ID token and token validator see it: ``provider.IdentityProvider``."""

    key: SigningKey
    kid: str
    jwk: RSAKey
    issuer: str
    audience: str
    ttl: int
    url: str
    state: IdentityState
    mcp_resource: str | None

    def token_response(
        self,
        client: Any,
        user: Identity,
        scope: str | None,
        resource: str | None,
        include_refresh_token: bool,
    ) -> dict[str, Any]:
        """The token response for ``client``: an MCP access token when ``resource`` is the MCP resource."""
        ...
