"""The desktop's side of OpenID Connect: the cloud's login configuration, discovery, the authorization
request (PKCE), the code exchange, refresh, the device grant and revocation; nothing kept before the ID
token passed every check (docs/desktop.md, "Signing in"). No message here carries a token."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlsplit

from memmy_kb_client.desktop.id_token import LoginError, verify_id_token
from memmy_kb_client.desktop.provider_http import (
    ProviderRefused,
    ProviderUnreachable,
    get_json,
    post_form,
    shared_client,
)
from memmy_kb_client.home.credentials import CloudLogin

__all__ = [
    "BrowserRequest",
    "LoginError",
    "Provider",
    "ProviderRefused",
    "ProviderUnreachable",
    "browser_request",
    "device_authorization",
    "device_token",
    "discover",
    "exchange_code",
    "login_from_tokens",
    "refresh",
    "revoke",
    "verify_id_token",
]

BEARER_KINDS: Final = ("access_token", "id_token")
DEVICE_GRANT: Final = "urn:ietf:params:oauth:grant-type:device_code"
LOOPBACK_HOSTS: Final = frozenset({"127.0.0.1", "localhost", "::1"})


@dataclass(frozen=True)
class Provider:
    """The cloud's login configuration and its issuer's discovery document, checked."""

    cloud: str
    issuer: str
    client_id: str
    audience: str
    scopes: tuple[str, ...]
    bearer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    device_authorization_endpoint: str = ""
    revocation_endpoint: str = ""


@dataclass(frozen=True)
class BrowserRequest:
    """One authorization request: the URL to open and what its answer must match."""

    url: str
    state: str
    nonce: str
    code_verifier: str
    redirect_uri: str


def _checked_url(value: object, what: str) -> str:
    """An endpoint: https, or http on a loopback address only (a local provider)."""
    if not isinstance(value, str) or not value:
        raise LoginError("login_configuration_invalid", f"the provider names no {what}")
    parts = urlsplit(value)
    if parts.scheme == "https" and parts.hostname:
        return value
    if parts.scheme == "http" and (parts.hostname or "") in LOOPBACK_HOSTS:
        return value
    raise LoginError("login_configuration_invalid", f"the provider's {what} is neither https nor loopback")


# ------------------------------------------------------------------------------------- discovery


def discover(cloud_url: str, timeout: float = 10.0) -> Provider:
    """The cloud's ``GET /login-configuration``, then its issuer's discovery document (whose
    ``issuer`` must be that very issuer)."""
    config = get_json(
        f"{cloud_url.rstrip('/')}/login-configuration", "the cloud's login configuration", timeout
    )
    issuer, client_id, audience = config.get("issuer"), config.get("client_id"), config.get("audience")
    scopes = config.get("scopes")
    bearer = config.get("bearer_token") or "access_token"
    if not (isinstance(issuer, str) and issuer and isinstance(client_id, str) and client_id):
        raise LoginError(
            "login_configuration_invalid", "the cloud's login configuration lacks issuer or client_id"
        )
    if not isinstance(scopes, list) or not all(isinstance(scope, str) for scope in scopes):
        raise LoginError("login_configuration_invalid", "the cloud's login configuration lacks its scopes")
    if bearer not in BEARER_KINDS:
        raise LoginError("login_configuration_invalid", f"unknown bearer_token {str(bearer)[:40]!r}")
    _checked_url(issuer, "issuer")
    document = get_json(
        f"{issuer.rstrip('/')}/.well-known/openid-configuration", "the provider's discovery document", timeout
    )
    if document.get("issuer") != issuer:
        raise LoginError(
            "issuer_mismatch", "the provider's discovery document names another issuer than the cloud's"
        )
    device = document.get("device_authorization_endpoint")
    revocation = document.get("revocation_endpoint")
    return Provider(
        cloud=cloud_url.rstrip("/"),
        issuer=issuer,
        client_id=client_id,
        audience=audience if isinstance(audience, str) else "",
        scopes=tuple(scopes) if "openid" in scopes else ("openid", *scopes),
        bearer=str(bearer),
        authorization_endpoint=_checked_url(document.get("authorization_endpoint"), "authorization endpoint"),
        token_endpoint=_checked_url(document.get("token_endpoint"), "token endpoint"),
        jwks_uri=_checked_url(document.get("jwks_uri"), "key set (jwks_uri)"),
        device_authorization_endpoint=_checked_url(device, "device endpoint") if device else "",
        revocation_endpoint=_checked_url(revocation, "revocation endpoint") if revocation else "",
    )


def fetch_keys(jwks_uri: str, timeout: float = 10.0) -> dict[str, Any]:
    keys = get_json(jwks_uri, "the provider's key set", timeout)
    if not isinstance(keys.get("keys"), list):
        raise LoginError("bad_answer", "the provider's key set has no keys")
    return keys


# --------------------------------------------------------------------------- the browser's request


def browser_request(provider: Provider, redirect_uri: str) -> BrowserRequest:
    """A fresh authorization request: a code verifier (its S256 challenge in the URL), state and nonce."""
    from authlib.common.security import generate_token
    from authlib.oauth2.rfc6749.parameters import prepare_grant_uri
    from authlib.oauth2.rfc7636 import create_s256_code_challenge

    verifier, state, nonce = generate_token(64), generate_token(32), generate_token(32)
    url = prepare_grant_uri(
        provider.authorization_endpoint,
        client_id=provider.client_id,
        response_type="code",
        redirect_uri=redirect_uri,
        scope=" ".join(provider.scopes),
        state=state,
        nonce=nonce,
        code_challenge=create_s256_code_challenge(verifier),
        code_challenge_method="S256",
    )
    return BrowserRequest(str(url), state, nonce, verifier, redirect_uri)


def exchange_code(
    provider: Provider, request: BrowserRequest, code: str, now: float, timeout: float = 10.0
) -> CloudLogin:
    """The code swapped for tokens (with the verifier), the ID token checked with the request's nonce."""
    tokens = post_form(
        provider.token_endpoint,
        {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": request.redirect_uri,
            "client_id": provider.client_id,
            "code_verifier": request.code_verifier,
        },
        "the provider's token endpoint",
        timeout,
    )
    return login_from_tokens(provider, tokens, now, nonce=request.nonce, timeout=timeout)


def login_from_tokens(
    provider: Provider,
    tokens: dict[str, Any],
    now: float,
    *,
    nonce: str | None,
    timeout: float = 10.0,
) -> CloudLogin:
    """A token response as a login, its ID token checked first (the nonce too, when given)."""
    access, id_token = tokens.get("access_token"), tokens.get("id_token")
    if not isinstance(access, str) or not access:
        raise LoginError("bad_answer", "the provider's token answer has no access token")
    if not isinstance(id_token, str) or not id_token:
        raise LoginError("bad_answer", "the provider's token answer has no ID token")
    verify_id_token(
        id_token,
        fetch_keys(provider.jwks_uri, timeout),
        issuer=provider.issuer,
        client_id=provider.client_id,
        now=now,
        nonce=nonce,
    )
    refresh = tokens.get("refresh_token")
    return CloudLogin(
        cloud=provider.cloud,
        access_token=access,
        refresh_token=refresh if isinstance(refresh, str) else "",
        id_token=id_token,
        bearer=provider.bearer,
        obtained_at=now,
        expires_at_hint=_expiry(tokens, now),
        issuer=provider.issuer,
        client_id=provider.client_id,
        token_endpoint=provider.token_endpoint,
        revocation_endpoint=provider.revocation_endpoint,
        jwks_uri=provider.jwks_uri,
    )


def _expiry(tokens: dict[str, Any], now: float) -> float | None:
    expires_in = tokens.get("expires_in")
    if isinstance(expires_in, int | float) and not isinstance(expires_in, bool) and expires_in > 0:
        return now + float(expires_in)
    return None


# ----------------------------------------------------------------------------------------- refresh


def refresh(login: CloudLogin, now: float, timeout: float = 10.0) -> CloudLogin:
    """New tokens for ``login``'s refresh token: a rotated refresh token replaces the old one, a new ID
    token is checked (same issuer, client and subject). ``ProviderRefused("invalid_grant")``: the
    sign-in has ended; ``ProviderUnreachable``: try later."""
    tokens = post_form(
        login.token_endpoint,
        {"grant_type": "refresh_token", "refresh_token": login.refresh_token, "client_id": login.client_id},
        "the provider's token endpoint",
        timeout,
    )
    access = tokens.get("access_token")
    if not isinstance(access, str) or not access:
        raise LoginError("bad_answer", "the provider's refresh answer has no access token")
    id_token = tokens.get("id_token")
    if isinstance(id_token, str) and id_token:
        previous = login.profile().get("sub")
        verify_id_token(
            id_token,
            fetch_keys(login.jwks_uri, timeout),
            issuer=login.issuer,
            client_id=login.client_id,
            now=now,
            subject=previous if isinstance(previous, str) else None,
        )
    elif login.bearer == "id_token":
        raise LoginError("bad_answer", "the provider's refresh answer has no ID token, which the cloud takes")
    else:
        id_token = login.id_token
    rotated = tokens.get("refresh_token")
    return login.rotated(
        access_token=access,
        id_token=id_token,
        refresh_token=rotated if isinstance(rotated, str) and rotated else login.refresh_token,
        obtained_at=now,
        expires_at_hint=_expiry(tokens, now),
    )


def revoke(login: CloudLogin, timeout: float = 5.0) -> bool:
    """Revoke the refresh token at the provider (RFC 7009); best effort, True when it said 200."""
    if not (login.refresh_token and login.revocation_endpoint):
        return False
    import httpx

    try:
        response = shared_client().post(
            login.revocation_endpoint,
            data={
                "token": login.refresh_token,
                "token_type_hint": "refresh_token",
                "client_id": login.client_id,
            },
            timeout=timeout,
        )
    except httpx.HTTPError:
        return False
    return bool(response.status_code == 200)


# ------------------------------------------------------------------------------------- device grant


def device_authorization(provider: Provider, timeout: float = 10.0) -> dict[str, Any]:
    """RFC 8628 3.1-3.2: device_code, user_code, verification_uri(_complete), interval, expires_in."""
    if not provider.device_authorization_endpoint:
        raise LoginError("device_grant_unsupported", "the provider offers no device sign-in")
    answer = post_form(
        provider.device_authorization_endpoint,
        {"client_id": provider.client_id, "scope": " ".join(provider.scopes)},
        "the provider's device endpoint",
        timeout,
    )
    for name in ("device_code", "user_code", "verification_uri"):
        if not isinstance(answer.get(name), str) or not answer[name]:
            raise LoginError("bad_answer", f"the provider's device answer has no {name}")
    _checked_url(answer["verification_uri"], "verification_uri")
    return answer


def device_token(provider: Provider, device_code: str, timeout: float = 10.0) -> dict[str, Any]:
    """One poll of the token endpoint (RFC 8628 3.4); ``ProviderRefused`` with ``authorization_pending``,
    ``slow_down``, ``access_denied``, ``expired_token``... until the person has signed in."""
    return post_form(
        provider.token_endpoint,
        {"grant_type": DEVICE_GRANT, "device_code": device_code, "client_id": provider.client_id},
        "the provider's token endpoint",
        timeout,
    )
