"""The login provider people sign in with when an MCP client asks for access (``LoginProvider``): an
OpenID provider (the Cognito pool, ``JwtIssuer``'s provider, or the local dev identity provider), spoken
to as a public client with PKCE S256.

Its discovery document (``<issuer>/.well-known/openid-configuration``) is fetched on first use and kept,
so is its JWKS (fetched again once when an ID token names a key it lacks). The ID token is verified with
PyJWT: RS256 by a key of that JWKS, ``iss`` the issuer, ``aud`` our client id, ``exp``, and the ``nonce``
of this sign-in; its ``sub`` is who signed in. The client id is given, or read by ``client_id`` (a
callable: the SSM parameter the stack publishes it in) on first use, never when the adapter is built."""

from __future__ import annotations

import base64
import hashlib
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

import httpx

from memmy_kb.domain.ports.mcp_auth import LoginRefused, LoginRequest, SignedIn

ALGORITHM = "RS256"
SCOPE = "openid email profile"
LEEWAY_SECONDS = 60


def s256(verifier: str) -> str:
    """RFC 7636's S256 code challenge of ``verifier``."""
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode("ascii")).digest()).rstrip(b"=").decode()


class OidcLoginProvider:
    """``LoginProvider`` for the OpenID provider ``issuer``, as the public client ``client_id``."""

    def __init__(self, issuer: str, client_id: str | Callable[[], str], http: httpx.Client) -> None:
        self.issuer = issuer
        self._client_id = client_id
        self._http = http
        self._discovery: dict[str, Any] | None = None
        self._keys: dict[str, Any] | None = None
        self._lock = threading.Lock()

    @property
    def client_id(self) -> str:
        if callable(self._client_id):
            self._client_id = self._client_id()
        return self._client_id

    def authorization_url(self, request: LoginRequest) -> str:
        query = {
            "response_type": "code",
            "client_id": self.client_id,
            "redirect_uri": request.redirect_uri,
            "scope": SCOPE,
            "state": request.state,
            "nonce": request.nonce,
            "code_challenge": s256(request.code_verifier),
            "code_challenge_method": "S256",
        }
        endpoint = str(self.discovery()["authorization_endpoint"])
        return f"{endpoint}{'&' if '?' in endpoint else '?'}{urlencode(query)}"

    def finish(self, code: str, request: LoginRequest) -> SignedIn:
        return self.verify_id_token(self.exchange(code, request), request.nonce)

    def exchange(self, code: str, request: LoginRequest) -> str:
        """The ID token the token endpoint gives for ``code`` (with this sign-in's PKCE verifier)."""
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": request.redirect_uri,
            "client_id": self.client_id,
            "code_verifier": request.code_verifier,
        }
        answer = self._json("POST", str(self.discovery()["token_endpoint"]), data=form)
        token = answer.get("id_token")
        if not isinstance(token, str):
            raise LoginRefused("The login provider gave no ID token.")
        return token

    def verify_id_token(self, token: str, nonce: str) -> SignedIn:
        """Who the ID token says signed in, once its signature and claims are ours; ``LoginRefused`` else."""
        import jwt

        try:
            kid = jwt.get_unverified_header(token).get("kid")
            claims: dict[str, Any] = jwt.decode(
                token,
                self._key(kid if isinstance(kid, str) else ""),
                algorithms=[ALGORITHM],
                audience=self.client_id,
                issuer=self.issuer,
                leeway=LEEWAY_SECONDS,
                options={"require": ["exp", "iat", "sub", "aud", "iss"]},
            )
        except jwt.PyJWTError as err:
            raise LoginRefused(
                f"The login provider's ID token is not valid here ({type(err).__name__})."
            ) from None
        if claims.get("nonce") != nonce:
            raise LoginRefused("The login provider's ID token is for another sign-in.")
        if not isinstance(claims["sub"], str) or not claims["sub"]:
            raise LoginRefused("The login provider's ID token names nobody.")
        auth_time = claims.get("auth_time", claims["iat"])
        return SignedIn(user_id=claims["sub"], auth_time=int(auth_time), claims=claims)

    def discovery(self) -> dict[str, Any]:
        """The provider's OpenID configuration, fetched once; its issuer must be ours."""
        with self._lock:
            if self._discovery is None:
                url = f"{self.issuer.rstrip('/')}/.well-known/openid-configuration"
                found = self._json("GET", url)
                if found.get("issuer") != self.issuer:
                    raise LoginRefused("The login provider's discovery document names another issuer.")
                self._discovery = found
            return self._discovery

    def _key(self, kid: str) -> Any:
        import jwt

        jwks_uri = str(self.discovery()["jwks_uri"])
        with self._lock:
            if self._keys is None or kid not in self._keys:
                self._keys = self._fetch_keys(jwks_uri)
            key = self._keys.get(kid)
        if key is None:
            raise jwt.InvalidKeyError(f"no key {kid!r}")
        return key

    def _fetch_keys(self, jwks_uri: str) -> dict[str, Any]:
        import jwt

        document = self._json("GET", jwks_uri)
        keys: dict[str, Any] = {}
        for entry in document.get("keys", []):
            try:
                keys[str(entry.get("kid", ""))] = jwt.PyJWK(entry, algorithm=ALGORITHM).key
            except (jwt.PyJWTError, AttributeError):
                continue
        return keys

    def _json(self, method: str, url: str, **kwargs: Any) -> dict[str, Any]:
        started = time.monotonic()
        try:
            answer = self._http.request(method, url, **kwargs)
        except httpx.HTTPError as err:
            waited = time.monotonic() - started
            raise LoginRefused(
                f"The login provider cannot be reached ({type(err).__name__} after {waited:.1f} s)."
            ) from None
        try:
            body = answer.json()
        except ValueError:
            body = None
        if answer.status_code != 200 or not isinstance(body, dict):
            error = body.get("error") if isinstance(body, dict) else None
            raise LoginRefused(
                f"The login provider answered HTTP {answer.status_code}" + (f" ({error})." if error else ".")
            )
        return body
