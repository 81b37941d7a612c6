"""The local stack's dev identity provider (memmy_local.identity.provider), driven over HTTP as the desktop
would: discovery, the sign-in form, the code exchange with PKCE, ID and access tokens, refresh rotation,
revocation, the device flow, and each refusal."""

from __future__ import annotations

import base64
import hashlib
import logging
import re
import secrets
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import jwt
import pytest

from memmy_local import tokens
from memmy_local.gateway.authorizer import JwtAuthorizer
from memmy_local.gateway.http_events import GatewayError
from memmy_local.identity.provider import REFRESH_TOKENS_FILE, IdentityProvider
from memmy_local.identity.records import CLIENT_ID, DEVICE_POLL_INTERVAL, WRONG_CODES_PER_DEVICE
from memmy_local.identity.state import (
    CODE_TTL_SECONDS,
    DEVICE_TTL_SECONDS,
    WRONG_CODE_WINDOW_SECONDS,
    WRONG_CODES_PER_CLIENT,
)
from memmy_local.template import load_template, template_path
from tests.support.clock import Clock

SCOPE = "openid profile email phone offline_access"
CALLBACK = "http://127.0.0.1:53682/callback"
DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
PERSON = {"login_user_id": "alice", "login_name": "Alice", "login_email": "alice@example.com",
          "login_phone": "+8613800138000"}  # fmt: skip


@pytest.fixture(scope="module")
def key_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("idp-key") / "key.pem"


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def idp(key_path: Path, tmp_path: Path, clock: Clock) -> Iterator[IdentityProvider]:
    key = tokens.load_signing_key(key_path)
    with IdentityProvider(key, port=0, state_dir=tmp_path, clock=clock) as provider:
        yield provider


@pytest.fixture
def http(idp: IdentityProvider) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=idp.url, timeout=10) as client:
        yield client


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def authorize_params(challenge: str | None, **overrides: str) -> dict[str, str]:
    params = {"response_type": "code", "client_id": CLIENT_ID, "redirect_uri": CALLBACK, "scope": SCOPE,
              "state": "state-1", "nonce": "nonce-1"}  # fmt: skip
    if challenge is not None:
        params |= {"code_challenge": challenge, "code_challenge_method": "S256"}
    return params | overrides


def form_fields(page: str) -> dict[str, str]:
    return dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', page))


def sign_in(
    http: httpx.Client, challenge: str | None, person: dict[str, str] = PERSON, **over: str
) -> httpx.Response:
    page = http.get("/authorize", params=authorize_params(challenge, **over))
    assert page.status_code == 200, page.text
    return http.post("/authorize", data=form_fields(page.text) | person)


def code_from(response: httpx.Response) -> dict[str, list[str]]:
    assert response.status_code == 302, response.text
    location = response.headers["location"]
    assert location.startswith(CALLBACK + "?")
    return parse_qs(urlsplit(location).query)


def exchange(http: httpx.Client, code: str, verifier: str, **over: str) -> httpx.Response:
    data = {"grant_type": "authorization_code", "code": code, "redirect_uri": CALLBACK, "client_id": CLIENT_ID,
            "code_verifier": verifier} | over  # fmt: skip
    return http.post("/token", data=data)


def signed_in(http: httpx.Client) -> dict[str, Any]:
    verifier, challenge = pkce()
    code = code_from(sign_in(http, challenge))["code"][0]
    answer = exchange(http, code, verifier)
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def refresh(http: httpx.Client, refresh_token: str) -> httpx.Response:
    return http.post(
        "/token", data={"grant_type": "refresh_token", "refresh_token": refresh_token, "client_id": CLIENT_ID}
    )


def error_of(response: httpx.Response) -> str:
    return str(response.json()["error"])


# -- the happy paths -----------------------------------------------------------------------------------


def test_discovery_names_every_endpoint_and_the_jwks_publishes_the_stack_key(
    idp: IdentityProvider, http: httpx.Client, key_path: Path
) -> None:
    meta = http.get("/.well-known/openid-configuration").json()
    keys = http.get(meta["jwks_uri"]).json()["keys"]

    assert meta["issuer"] == idp.url == idp.issuer
    assert not meta["issuer"].endswith("/")
    for name, path in [("authorization_endpoint", "/authorize"), ("token_endpoint", "/token"),
                       ("device_authorization_endpoint", "/device_authorization"),
                       ("revocation_endpoint", "/revoke"), ("userinfo_endpoint", "/userinfo"),
                       ("jwks_uri", "/jwks.json")]:  # fmt: skip
        assert meta[name] == idp.url + path
    assert meta["code_challenge_methods_supported"] == ["S256"]
    assert meta["scopes_supported"] == SCOPE.split()
    (jwk,) = keys
    assert jwk["kid"] == tokens.key_id(tokens.load_signing_key(key_path))
    assert "d" not in jwk  # the public half only


def test_the_sign_in_page_labels_every_field_and_runs_no_script(http: httpx.Client) -> None:
    page = http.get("/authorize", params=authorize_params(pkce()[1]))

    for field, label in [("login_user_id", "User ID"), ("login_name", "Name"), ("login_email", "Email"),
                         ("login_phone", "Phone")]:  # fmt: skip
        assert f'<label for="{field}">{label}</label>' in page.text
        assert f'id="{field}"' in page.text
    assert '<button type="submit">Sign in</button>' in page.text
    assert "<script" not in page.text
    assert "default-src 'none'" in page.headers["content-security-policy"]
    assert page.headers["x-frame-options"] == "DENY"


def test_a_browser_sign_in_gives_tokens_the_gateway_and_the_client_accept(
    idp: IdentityProvider, http: httpx.Client
) -> None:
    verifier, challenge = pkce()
    redirect = code_from(sign_in(http, challenge))
    assert redirect["state"] == ["state-1"]
    answer = exchange(http, redirect["code"][0], verifier)

    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["token_type"] == "Bearer"
    assert body["expires_in"] == 3600
    assert body["scope"] == SCOPE
    assert body["refresh_token"]
    # The ID token, verified as the desktop would: the provider's JWKS, issuer, the client id, the nonce
    jwks = jwt.PyJWKClient(f"{idp.url}/jwks.json")
    signing_key = jwks.get_signing_key_from_jwt(body["id_token"])
    id_claims = jwt.decode(body["id_token"], signing_key.key, algorithms=["RS256"], audience=CLIENT_ID,
                           issuer=idp.issuer)  # fmt: skip
    assert id_claims["nonce"] == "nonce-1"
    assert id_claims["sub"] == "alice"
    assert abs(id_claims["auth_time"] - time.time()) < 60
    assert (id_claims["name"], id_claims["email"], id_claims["phone_number"]) == (
        "Alice", "alice@example.com", "+8613800138000")  # fmt: skip
    assert id_claims["email_verified"] is True
    assert id_claims["phone_number_verified"] is True
    # The access token passes the gateway's JWT authorizer for the stack's issuer and audience
    claims = JwtAuthorizer(idp.key, idp.issuer, tokens.DEFAULT_AUDIENCE).authorize(
        f"Bearer {body['access_token']}"
    )
    assert claims["sub"] == "alice"
    assert claims["aud"] == "memmy-kb"
    assert claims["exp"] - claims["iat"] == 3600
    assert (claims["client_id"], claims["scope"]) == (CLIENT_ID, SCOPE)
    assert claims["email_verified"] is True
    assert claims["phone_number_verified"] is True
    userinfo = http.get("/userinfo", headers={"Authorization": f"Bearer {body['access_token']}"})
    assert userinfo.json()["sub"] == "alice"
    assert userinfo.json()["email"] == "alice@example.com"


def test_the_access_token_lifetime_is_the_stacks(key_path: Path, clock: Clock) -> None:
    key = tokens.load_signing_key(key_path)
    with (
        IdentityProvider(key, port=0, access_token_ttl=120, issuer="memmy-test", clock=clock) as idp,
        httpx.Client(base_url=idp.url, timeout=10) as http,
    ):
        body = signed_in(http)
    claims = JwtAuthorizer(key, "memmy-test", "memmy-kb").authorize(body["access_token"])
    assert body["expires_in"] == 120
    assert claims["exp"] - claims["iat"] == 120
    assert claims["iss"] == "memmy-test"


def test_refresh_rotates_and_the_rotated_away_token_is_refused(
    http: httpx.Client, idp: IdentityProvider
) -> None:
    first = signed_in(http)["refresh_token"]

    renewed = refresh(http, first)
    assert renewed.status_code == 200, renewed.text
    second = renewed.json()["refresh_token"]
    assert second != first
    assert (
        JwtAuthorizer(idp.key, idp.issuer, "memmy-kb").authorize(renewed.json()["access_token"])["sub"]
        == "alice"
    )
    assert jwt.decode(
        renewed.json()["id_token"], idp.key.public_key(), algorithms=["RS256"], audience=CLIENT_ID
    )
    reused = refresh(http, first)
    assert reused.status_code == 400
    assert error_of(reused) == "invalid_grant"
    # Reuse means the token leaked: every rotation of it is revoked
    assert error_of(refresh(http, second)) == "invalid_grant"


def test_revoking_a_refresh_token_revokes_its_rotations(http: httpx.Client) -> None:
    first = signed_in(http)["refresh_token"]
    second = refresh(http, first).json()["refresh_token"]

    revoked = http.post(
        "/revoke", data={"token": second, "token_type_hint": "refresh_token", "client_id": CLIENT_ID}
    )

    assert revoked.status_code == 200
    assert error_of(refresh(http, second)) == "invalid_grant"
    # Revoking an unknown token is not an error (RFC 7009)
    unknown = http.post("/revoke", data={"token": "nothing-like-it", "client_id": CLIENT_ID})
    assert unknown.status_code == 200


def test_refresh_tokens_outlive_a_restart_with_a_data_dir_in_a_private_file(
    key_path: Path, tmp_path: Path, clock: Clock
) -> None:
    key = tokens.load_signing_key(key_path)
    with (
        IdentityProvider(key, port=0, state_dir=tmp_path, clock=clock) as idp,
        httpx.Client(base_url=idp.url, timeout=10) as http,
    ):
        kept = signed_in(http)["refresh_token"]
    path = tmp_path / REFRESH_TOKENS_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert kept not in path.read_text()  # kept by hash only

    with (
        IdentityProvider(key, port=0, state_dir=tmp_path, clock=clock) as idp,
        httpx.Client(base_url=idp.url, timeout=10) as http,
    ):
        assert refresh(http, kept).status_code == 200


def test_the_device_flow_signs_in_with_the_code(http: httpx.Client, idp: IdentityProvider) -> None:
    started = http.post("/device_authorization", data={"client_id": CLIENT_ID, "scope": SCOPE}).json()
    poll = {"grant_type": DEVICE_GRANT, "device_code": started["device_code"], "client_id": CLIENT_ID}
    assert started["verification_uri"] == f"{idp.url}/device"
    assert started["verification_uri_complete"] == f"{idp.url}/device?user_code={started['user_code']}"
    assert started["interval"] > 0
    assert started["expires_in"] == DEVICE_TTL_SECONDS

    pending = http.post("/token", data=poll)
    assert (pending.status_code, error_of(pending)) == (400, "authorization_pending")

    page = http.get("/device", params={"user_code": started["user_code"]})
    assert '<label for="user_code">Code</label>' in page.text
    typed = started["user_code"].lower().replace("-", " ")  # however it is typed
    sign_in_page = http.post("/device", data=form_fields(page.text) | {"user_code": typed})
    assert '<label for="login_user_id">User ID</label>' in sign_in_page.text
    done = http.post("/device", data=form_fields(sign_in_page.text) | PERSON)
    assert done.status_code == 200, done.text

    granted = http.post("/token", data=poll)
    assert granted.status_code == 200, granted.text
    claims = JwtAuthorizer(idp.key, idp.issuer, "memmy-kb").authorize(granted.json()["access_token"])
    assert claims["sub"] == "alice"
    assert granted.json()["refresh_token"]
    assert granted.json()["id_token"]
    # single use
    assert error_of(http.post("/token", data=poll)) == "invalid_grant"


def test_a_device_code_polled_after_its_expiry_is_expired(http: httpx.Client, clock: Clock) -> None:
    started = http.post("/device_authorization", data={"client_id": CLIENT_ID, "scope": SCOPE}).json()
    clock.skipped = DEVICE_TTL_SECONDS + 1

    late = http.post("/token", data={"grant_type": DEVICE_GRANT, "device_code": started["device_code"],
                                     "client_id": CLIENT_ID})  # fmt: skip
    assert (late.status_code, error_of(late)) == (400, "expired_token")
    page = http.get("/device")
    refused = http.post("/device", data=form_fields(page.text) | {"user_code": started["user_code"]})
    assert refused.status_code == 400


def start_device(http: httpx.Client) -> tuple[dict[str, Any], dict[str, str]]:
    started = http.post("/device_authorization", data={"client_id": CLIENT_ID, "scope": SCOPE}).json()
    return started, {
        "grant_type": DEVICE_GRANT,
        "device_code": started["device_code"],
        "client_id": CLIENT_ID,
    }


def enter_code(http: httpx.Client, code: str) -> httpx.Response:
    page = http.get("/device")
    return http.post("/device", data=form_fields(page.text) | {"user_code": code})


def test_a_poll_sooner_than_the_interval_is_slow_down_and_the_interval_grows_by_5_s(
    http: httpx.Client, clock: Clock
) -> None:
    """RFC 8628 3.5: too fast a poll is slow_down, and the interval is 5 s longer for every later poll."""
    started, poll = start_device(http)
    assert started["interval"] == DEVICE_POLL_INTERVAL == 5
    assert error_of(http.post("/token", data=poll)) == "authorization_pending"

    answers = []
    # The seconds since the previous poll, against the interval: 4 < 5 (now 10), 9 < 10 (now 15),
    # 15 (pending, still 15), 14 < 15 (now 20), 20 (pending).
    for wait in (4, 9, 15, 14, 20):
        clock.skipped += wait
        answers.append(error_of(http.post("/token", data=poll)))
    assert answers == [
        "slow_down",
        "slow_down",
        "authorization_pending",
        "slow_down",
        "authorization_pending",
    ]

    enter_code(http, started["user_code"])  # a page reloaded: the same code entered again is no guess
    code_page = enter_code(http, started["user_code"])
    assert http.post("/device", data=form_fields(code_page.text) | PERSON).status_code == 200
    clock.skipped += 20
    assert http.post("/token", data=poll).status_code == 200


def test_wrong_user_codes_are_limited_per_client_with_429_and_a_sentence(
    http: httpx.Client, clock: Clock
) -> None:
    half = WRONG_CODES_PER_CLIENT // 2
    for _ in range(half):
        assert enter_code(http, "BCDF-GHJK").status_code == 400
    clock.skipped += WRONG_CODE_WINDOW_SECONDS / 2
    for _ in range(WRONG_CODES_PER_CLIENT - half):
        wrong = enter_code(http, "BCDF-GHJK")
        assert wrong.status_code == 400
        assert "That code is unknown, expired or already used." in wrong.text

    started, _ = start_device(http)
    refused = enter_code(http, started["user_code"])  # right, but not even looked at
    assert refused.status_code == 429
    assert "Too many wrong codes were typed here (10 in 10 minutes): wait 5 minutes" in refused.text
    assert 295 <= int(refused.headers["Retry-After"]) <= 300
    assert refused.headers["Content-Security-Policy"].startswith("default-src 'none'")

    clock.skipped += WRONG_CODE_WINDOW_SECONDS / 2 + 1  # the first half leaves the window
    page = enter_code(http, started["user_code"])
    assert page.status_code == 200
    assert '<label for="login_user_id">User ID</label>' in page.text


def test_every_loopback_address_is_one_client_for_wrong_codes(idp: IdentityProvider, http: httpx.Client) -> None:
    """A local program may send from any address of 127.0.0.0/8 (Linux answers them all): were each one a
    client of its own, every address would bring a fresh allowance of wrong codes and one more counter."""
    for n in range(WRONG_CODES_PER_CLIENT):
        source = httpx.HTTPTransport(local_address=f"127.0.{n}.2")
        with httpx.Client(base_url=idp.url, timeout=10, transport=source) as elsewhere:
            assert enter_code(elsewhere, "BCDF-GHJK").status_code == 400
    assert enter_code(http, "BCDF-GHJK").status_code == 429


def test_a_request_whose_code_was_guessed_wrong_too_often_is_dead(http: httpx.Client) -> None:
    started, poll = start_device(http)
    for _ in range(WRONG_CODES_PER_DEVICE - 1):
        assert enter_code(http, "BCDF-GHJK").status_code == 400
    alive = enter_code(http, started["user_code"])  # still alive: its sign-in form
    assert alive.status_code == 200

    assert enter_code(http, "BCDF-GHJK").status_code == 400  # the last wrong code it takes
    dead = enter_code(http, started["user_code"])
    assert dead.status_code == 400
    assert "That code is unknown, expired or already used." in dead.text
    late = http.post("/device", data=form_fields(alive.text) | PERSON)  # the form made while it was alive
    assert late.status_code == 400
    assert "refused after too many wrong codes" in late.text
    denied = http.post("/token", data=poll)
    assert (denied.status_code, error_of(denied)) == (400, "access_denied")
    assert "Too many wrong codes" in denied.json()["error_description"]

    # A request made after the guesses is not touched by them.
    later, poll_later = start_device(http)
    signed = http.post("/device", data=form_fields(enter_code(http, later["user_code"]).text) | PERSON)
    assert signed.status_code == 200, signed.text
    assert http.post("/token", data=poll_later).status_code == 200


# -- refusals ------------------------------------------------------------------------------------------


def test_an_authorization_request_without_pkce_is_refused_back_to_the_client(http: httpx.Client) -> None:
    for params in (
        authorize_params(None),
        authorize_params(None, code_challenge="x" * 43, code_challenge_method="plain"),
    ):
        answer = http.get("/authorize", params=params)
        redirect = code_from(answer)
        assert redirect["error"] == ["invalid_request"]
        assert redirect["state"] == ["state-1"]
        assert "code" not in redirect


def test_a_wrong_verifier_and_a_reused_code_are_invalid_grants(http: httpx.Client) -> None:
    verifier, challenge = pkce()
    code = code_from(sign_in(http, challenge))["code"][0]
    wrong = exchange(http, code, pkce()[0])
    assert (wrong.status_code, error_of(wrong)) == (400, "invalid_grant")

    verifier, challenge = pkce()
    code = code_from(sign_in(http, challenge))["code"][0]
    assert exchange(http, code, verifier).status_code == 200
    reused = exchange(http, code, verifier)
    assert (reused.status_code, error_of(reused)) == (400, "invalid_grant")
    missing = exchange(http, code_from(sign_in(http, pkce()[1]))["code"][0], "")
    assert missing.status_code == 400


def test_a_code_expires_after_a_minute(http: httpx.Client, clock: Clock) -> None:
    verifier, challenge = pkce()
    code = code_from(sign_in(http, challenge))["code"][0]
    clock.skipped = CODE_TTL_SECONDS + 1

    assert error_of(exchange(http, code, verifier)) == "invalid_grant"


def test_the_token_request_must_name_the_authorize_requests_redirect_uri(http: httpx.Client) -> None:
    verifier, challenge = pkce()
    code = code_from(sign_in(http, challenge))["code"][0]

    other = exchange(http, code, verifier, redirect_uri="http://127.0.0.1:1/callback")
    assert error_of(other) == "invalid_grant"


@pytest.mark.parametrize(
    "redirect_uri",
    ["https://evil.example/callback", "http://localhost:5000/callback", "http://127.0.0.1:5000/other",
     "http://127.0.0.1/callback", "http://127.0.0.1:5000/callback?x=1", "http://127.0.0.1:99999/callback", ""],
)  # fmt: skip
def test_a_foreign_redirect_uri_gets_an_error_page_and_no_redirect(
    http: httpx.Client, redirect_uri: str
) -> None:
    answer = http.get("/authorize", params=authorize_params(pkce()[1], redirect_uri=redirect_uri))

    assert answer.status_code == 400
    assert "location" not in answer.headers
    assert "text/html" in answer.headers["content-type"]


def test_an_unknown_client_is_refused_everywhere(http: httpx.Client) -> None:
    page = http.get("/authorize", params=authorize_params(pkce()[1], client_id="someone-else"))
    assert page.status_code == 400
    assert "location" not in page.headers
    token = http.post(
        "/token", data={"grant_type": "refresh_token", "refresh_token": "x", "client_id": "other"}
    )
    assert error_of(token) == "invalid_client"
    device = http.post("/device_authorization", data={"client_id": "other"})
    assert error_of(device) == "invalid_client"


def test_a_forged_or_altered_sign_in_form_is_refused(http: httpx.Client) -> None:
    page = http.get("/authorize", params=authorize_params(pkce()[1]))
    fields = form_fields(page.text)

    altered = http.post("/authorize", data=fields | {"redirect_uri": "http://127.0.0.1:9/callback"} | PERSON)
    forged = http.post("/authorize", data=authorize_params(pkce()[1]) | PERSON)

    for answer in (altered, forged):
        assert answer.status_code == 400
        assert "location" not in answer.headers


@pytest.mark.parametrize(
    ("typed", "message"),
    [({"login_user_id": ""}, "User ID is required."),
     ({"login_phone": "13800138000"}, "Phone must be in E.164 form"),
     ({"login_email": "not-an-email"}, "Email must look like")],
)  # fmt: skip
def test_the_sign_in_form_checks_what_is_typed(
    http: httpx.Client, typed: dict[str, str], message: str
) -> None:
    answer = sign_in(http, pkce()[1], PERSON | typed)

    assert answer.status_code == 400
    assert message in answer.text
    assert "location" not in answer.headers


def test_no_code_token_or_state_reaches_the_log(http: httpx.Client, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG):
        body = signed_in(http)
        refresh(http, body["refresh_token"])
        http.get("/device", params={"user_code": "BCDF-GHJK"})
    # What the provider's server writes (the test's own httpx client logs its URLs, query included)
    server_side = ("memmy_local", "authlib", "werkzeug", "flask")
    text = "\n".join(r.getMessage() for r in caplog.records if r.name.startswith(server_side))

    assert "/authorize" in text  # the request log is on
    for secret in ("state-1", "nonce-1", "BCDF-GHJK", body["refresh_token"], body["access_token"][:40]):
        assert secret not in text
    assert "code=" not in text


def test_the_id_token_is_not_an_access_token_for_the_gateway(
    http: httpx.Client, idp: IdentityProvider
) -> None:
    body = signed_in(http)

    with pytest.raises(GatewayError) as refused:
        JwtAuthorizer(idp.key, idp.issuer, tokens.DEFAULT_AUDIENCE).authorize(f"Bearer {body['id_token']}")
    assert refused.value.status == 401


def test_the_template_cannot_be_deployed_with_the_dev_provider() -> None:
    # A development tool only: the template names none of it, and its issuer must be https.
    template = load_template(template_path())

    assert not re.fullmatch(template["Parameters"]["JwtIssuer"]["AllowedPattern"], tokens.DEFAULT_ISSUER)
    assert "identity_provider" not in template_path().read_text()


def test_a_taken_port_is_an_error_not_an_exit(idp: IdentityProvider, key_path: Path) -> None:
    port = int(idp.url.rsplit(":", 1)[1])

    with pytest.raises(OSError, match="cannot listen"):
        IdentityProvider(tokens.load_signing_key(key_path), port=port)
