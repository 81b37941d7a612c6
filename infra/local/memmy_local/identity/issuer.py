"""What the provider's Authlib parts read of it (``TokenIssuer``), apart from the provider itself, so that
``grants`` and ``provider`` do not import each other."""

from __future__ import annotations

from typing import Protocol

from joserfc.jwk import RSAKey

from memmy_local.tokens import SigningKey

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
