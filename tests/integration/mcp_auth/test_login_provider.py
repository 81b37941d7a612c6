"""The login provider of the authorization server (memmy_kb.adapters.login_provider) against the real dev
identity provider on 127.0.0.1, as the client ``memmy-mcp-auth``: its authorization URL is a PKCE S256
request the provider's sign-in form answers with a code, ``finish`` exchanges it and returns who signed in;
an ID token for another sign-in (nonce), another client (audience) or from another issuer is refused."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import httpx
import pytest

from memmy_kb.adapters.login_provider import OidcLoginProvider, s256
from memmy_kb.domain.ports.mcp_auth import LoginRefused, LoginRequest
from memmy_local import tokens
from memmy_local.identity.provider import IdentityProvider
from memmy_local.identity.records import MCP_AUTH_CLIENT_ID
from tests.support.mcp_oauth import redirect_params, sign_in_and_consent

CALLBACK = "http://127.0.0.1:9/oauth/callback"  # never opened: the browser's redirect is read, not followed


@pytest.fixture(scope="module")
def key(tmp_path_factory: pytest.TempPathFactory) -> tokens.SigningKey:
    return tokens.load_signing_key(tmp_path_factory.mktemp("idp") / "key.pem")


@pytest.fixture
def idp(key: tokens.SigningKey, tmp_path: Path) -> Iterator[IdentityProvider]:
    with IdentityProvider(key, port=0, state_dir=tmp_path) as provider:
        yield provider


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=3) as client:
        yield client


def login_request() -> LoginRequest:
    return LoginRequest(
        CALLBACK, secrets.token_urlsafe(32), secrets.token_urlsafe(16), secrets.token_urlsafe(48)
    )


def signed_in_code(login: OidcLoginProvider, request: LoginRequest, user_id: str = "alice") -> str:
    """Alice at the provider's sign-in form; the code its redirect carries (with our state)."""
    params = redirect_params(
        sign_in_and_consent(login.authorization_url(request), user_id, email="a@example.com")
    )
    assert params["state"] == request.state
    return params["code"]


def test_the_authorization_url_asks_for_a_code_with_pkce_s256_and_the_nonce(
    idp: IdentityProvider, http: httpx.Client
) -> None:
    request = login_request()
    url = OidcLoginProvider(idp.issuer, MCP_AUTH_CLIENT_ID, http).authorization_url(request)

    query = dict(parse_qsl(urlsplit(url).query))
    assert url.startswith(f"{idp.url}/authorize?")
    expected = {
        "response_type": "code",
        "client_id": MCP_AUTH_CLIENT_ID,
        "redirect_uri": CALLBACK,
        "scope": "openid email profile",
        "state": request.state,
        "nonce": request.nonce,
        "code_challenge_method": "S256",
    }
    assert {k: query[k] for k in expected} == expected
    assert query["code_challenge"] == s256(request.code_verifier)


def test_finish_returns_who_signed_in(idp: IdentityProvider, http: httpx.Client) -> None:
    login = OidcLoginProvider(idp.issuer, lambda: MCP_AUTH_CLIENT_ID, http)
    request = login_request()

    signed_in = login.finish(signed_in_code(login, request), request)

    assert signed_in.user_id == "alice"
    assert signed_in.auth_time > 0
    assert signed_in.claims["aud"] == MCP_AUTH_CLIENT_ID
    assert signed_in.claims["email"] == "a@example.com"


def test_an_id_token_for_another_sign_in_is_refused(idp: IdentityProvider, http: httpx.Client) -> None:
    login = OidcLoginProvider(idp.issuer, MCP_AUTH_CLIENT_ID, http)
    request = login_request()
    code = signed_in_code(login, request)

    with pytest.raises(LoginRefused, match="another sign-in"):
        login.finish(
            code, LoginRequest(request.redirect_uri, request.state, "another-nonce", request.code_verifier)
        )


def test_an_id_token_for_another_client_is_refused(idp: IdentityProvider, http: httpx.Client) -> None:
    login = OidcLoginProvider(idp.issuer, MCP_AUTH_CLIENT_ID, http)
    request = login_request()
    id_token = login.exchange(signed_in_code(login, request), request)

    other_client = OidcLoginProvider(idp.issuer, "memmy-desktop", http)
    with pytest.raises(LoginRefused, match="InvalidAudienceError"):
        other_client.verify_id_token(id_token, request.nonce)
    assert login.verify_id_token(id_token, request.nonce).user_id == "alice"  # the same token, for its client


def test_an_id_token_from_another_issuer_is_refused(
    idp: IdentityProvider, key: tokens.SigningKey, tmp_path: Path, http: httpx.Client
) -> None:
    # Another provider signing with the very same key: only the issuer tells its tokens apart.
    with IdentityProvider(key, port=0, state_dir=tmp_path / "other") as other:
        theirs = OidcLoginProvider(other.issuer, MCP_AUTH_CLIENT_ID, http)
        request = login_request()
        id_token = theirs.exchange(signed_in_code(theirs, request), request)

    ours = OidcLoginProvider(idp.issuer, MCP_AUTH_CLIENT_ID, http)
    with pytest.raises(LoginRefused, match="InvalidIssuerError"):
        ours.verify_id_token(id_token, request.nonce)


def test_a_code_spent_or_a_wrong_verifier_is_refused_by_the_provider(
    idp: IdentityProvider, http: httpx.Client
) -> None:
    login = OidcLoginProvider(idp.issuer, MCP_AUTH_CLIENT_ID, http)
    request = login_request()
    code = signed_in_code(login, request)

    with pytest.raises(LoginRefused, match=r"HTTP 400 \(invalid_grant\)"):
        login.finish(code, LoginRequest(CALLBACK, request.state, request.nonce, secrets.token_urlsafe(48)))


def test_an_unreachable_provider_is_refused_with_a_sentence(http: httpx.Client) -> None:
    login = OidcLoginProvider("http://127.0.0.1:9", MCP_AUTH_CLIENT_ID, http)

    with pytest.raises(LoginRefused, match="cannot be reached"):
        login.authorization_url(login_request())


def test_the_client_id_is_resolved_on_first_use_only(idp: IdentityProvider, http: httpx.Client) -> None:
    asked: list[int] = []
    login = OidcLoginProvider(idp.issuer, lambda: asked.append(1) or MCP_AUTH_CLIENT_ID, http)
    assert asked == []

    login.authorization_url(login_request())
    login.authorization_url(login_request())

    assert asked == [1]
