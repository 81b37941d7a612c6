"""The bearer token of ``POST /mcp``: its signature against the authorization server's JWKS, then its
claims (``memmy_kb.domain.remote_mcp.tokens``).

PyJWT and cryptography are imported with the first token a container sees, not with the handler. The
JWKS is fetched once per container and kept; a token signed with a key it does not hold (the server
rotated its keys) makes it fetch the JWKS again, at most once every ``REFETCH_SECONDS``, so that tokens
naming made-up keys cannot make every call a fetch. Only RS256 is accepted: a token with ``alg`` none or
an HMAC algorithm is refused before any key is looked at.

When the JWKS cannot be fetched the token is neither good nor bad: that is ``KeysUnavailable`` (503 with
``Retry-After``), never a 401, which would make a client drop a good token and start the sign-in again.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from memmy_kb.domain.remote_mcp.tokens import McpCaller, TokenRefused, TokenRules, accept_claims

ALGORITHM = "RS256"
REFETCH_SECONDS = 30.0
FETCH_TIMEOUT_SECONDS = 2.0


class KeysUnavailable(Exception):
    """The authorization server's JWKS could not be fetched (or was not a JWKS)."""


def fetch_jwks(url: str) -> dict[str, Any]:
    """The JWKS at ``url``, by one GET (no redirects followed, two seconds at most)."""
    import httpx

    try:
        reply = httpx.get(url, timeout=FETCH_TIMEOUT_SECONDS, follow_redirects=False)
        reply.raise_for_status()
        document = reply.json()
    except (httpx.HTTPError, ValueError) as err:
        raise KeysUnavailable(f"The JWKS could not be fetched: {type(err).__name__}") from err
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise KeysUnavailable("The JWKS is not a key set.")
    return document


class JwksCache:
    """The signing keys of one JWKS URL, by ``kid``, for the container's life."""

    def __init__(
        self,
        url: str,
        fetch: Callable[[str], dict[str, Any]] = fetch_jwks,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._url, self._fetch, self._clock = url, fetch, clock
        self._keys: dict[str, Any] | None = None
        self._fetched_at = float("-inf")
        self._lock = threading.Lock()
        self.fetches = 0

    def _load(self) -> None:
        import jwt

        document = self._fetch(self._url)
        self.fetches += 1
        self._fetched_at = self._clock()
        keys: dict[str, Any] = {}
        for entry in document["keys"]:
            if not isinstance(entry, dict) or entry.get("kty") != "RSA" or entry.get("use", "sig") != "sig":
                continue
            try:
                keys[str(entry.get("kid", ""))] = jwt.PyJWK(entry, algorithm=ALGORITHM).key
            except jwt.PyJWTError:
                continue  # a key we cannot use is a key no token of ours is signed with
        self._keys = keys

    def key(self, kid: str) -> Any:
        """The key ``kid`` names; TokenRefused when the JWKS (fetched again if it may have changed) has no
        such key; KeysUnavailable when it cannot be fetched."""
        with self._lock:
            if self._keys is None:
                self._load()
            assert self._keys is not None
            if kid not in self._keys and self._clock() - self._fetched_at >= REFETCH_SECONDS:
                self._load()
            found = self._keys.get(kid)
        if found is None:
            raise TokenRefused("The token is signed with an unknown key.")
        return found


def verify_token(token: str, keys: JwksCache, rules: TokenRules, now: int) -> McpCaller:
    """The caller a bearer token names: RS256 signature by a key of the JWKS, then the claims' rules."""
    import jwt

    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError:
        raise TokenRefused("The token is malformed.") from None
    if header.get("alg") != ALGORITHM:
        raise TokenRefused("The token is not signed with RS256.")
    kid = header.get("kid")
    key = keys.key(kid if isinstance(kid, str) else "")
    try:
        # The signature only: the claims are checked by accept_claims, with the time passed in.
        claims = jwt.decode(
            token,
            key,
            algorithms=[ALGORITHM],
            options={
                "verify_signature": True,
                "verify_exp": False,
                "verify_nbf": False,
                "verify_iat": False,
                "verify_aud": False,
                "verify_iss": False,
            },
        )
    except jwt.PyJWTError:
        raise TokenRefused("The token's signature is not valid.") from None
    return accept_claims(claims, rules, now)
