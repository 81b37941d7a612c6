"""The dev identity provider as the MCP clients' authorization server (docs/login.md, "MCP clients"),
driven over HTTP as a client and a browser would: its RFC 8414 metadata, a registered client's sign-in,
consent and code (with RFC 9207's ``iss``), the MCP access token's claims (contract section 1), RFC 8707
``resource`` at every step, refresh rotation that keeps ``auth_time``, and each refusal."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
from authlib.oauth2 import rfc8414, rfc9207

from memmy_local import tokens
from memmy_local.gateway.authorizer import JwtAuthorizer
from memmy_local.gateway.http_events import GatewayError
from memmy_local.identity.provider import IdentityProvider
from memmy_local.identity.records import CLIENT_ID
from tests.support.clock import Clock
from tests.support.mcp_oauth import pkce, read_form, redirect_params, register, sign_in_and_consent

RESOURCE = "http://127.0.0.1:18080/mcp"
CALLBACK = "http://127.0.0.1:33418/callback"


@pytest.fixture(scope="module")
def key_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mcp-idp-key") / "key.pem"


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def idp(key_path: Path, tmp_path: Path, clock: Clock) -> Iterator[IdentityProvider]:
    key = tokens.load_signing_key(key_path)
    with IdentityProvider(key, port=0, state_dir=tmp_path, clock=clock, mcp_resource=RESOURCE) as provider:
        yield provider


@pytest.fixture
def http(idp: IdentityProvider) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=idp.url, timeout=10) as client:
        yield client


@pytest.fixture
def client_id(http: httpx.Client) -> str:
    answer = register(http)
    assert answer.status_code == 201, answer.text
    return str(answer.json()["client_id"])


def authorization_url(idp: IdentityProvider, client_id: str, challenge: str, *extra: tuple[str, str]) -> str:
    params = [("response_type", "code"), ("client_id", client_id), ("redirect_uri", CALLBACK),
              ("scope", "kb.search"), ("state", "state-9"), ("code_challenge", challenge),
              ("code_challenge_method", "S256"), *extra]  # fmt: skip
    return f"{idp.url}/authorize?{urlencode(params)}"


def exchange(http: httpx.Client, client_id: str, code: str, verifier: str, **over: str) -> httpx.Response:
    data = {"grant_type": "authorization_code", "code": code, "redirect_uri": CALLBACK, "client_id": client_id,
            "code_verifier": verifier} | over  # fmt: skip
    return http.post("/token", data=data)


def refresh(http: httpx.Client, client_id: str, refresh_token: str, **over: str) -> httpx.Response:
    data = {"grant_type": "refresh_token", "refresh_token": refresh_token, "client_id": client_id} | over
    return http.post("/token", data=data)


def mcp_claims(idp: IdentityProvider, token: str) -> dict[str, Any]:
    return tokens.verify_token(
        token, key=idp.key, issuer=idp.issuer, audience=RESOURCE, clock=idp.state.clock
    )


def allowed(
    idp: IdentityProvider, http: httpx.Client, client_id: str, *extra: tuple[str, str]
) -> dict[str, Any]:
    """A person allows the client; the token response for its code."""
    verifier, challenge = pkce()
    redirect = redirect_params(
        sign_in_and_consent(authorization_url(idp, client_id, challenge, *extra), "alice")
    )
    answer = exchange(http, client_id, redirect["code"], verifier, resource=RESOURCE)
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


# -- metadata ----------------------------------------------------------------------------------------


def test_the_authorization_server_metadata_names_what_mcp_clients_need(
    idp: IdentityProvider, http: httpx.Client
) -> None:
    meta = http.get("/.well-known/oauth-authorization-server").json()

    rfc8414.AuthorizationServerMetadata(meta).validate(metadata_classes=[rfc9207.AuthorizationServerMetadata])
    assert meta["issuer"] == idp.issuer == idp.url
    for name, path in [("authorization_endpoint", "/authorize"), ("token_endpoint", "/token"),
                       ("registration_endpoint", "/register"), ("jwks_uri", "/jwks.json"),
                       ("revocation_endpoint", "/revoke")]:  # fmt: skip
        assert meta[name] == idp.url + path
    assert meta["response_types_supported"] == ["code"]
    assert {"authorization_code", "refresh_token"} <= set(meta["grant_types_supported"])
    assert meta["code_challenge_methods_supported"] == ["S256"]
    assert meta["token_endpoint_auth_methods_supported"] == ["none"]
    assert "kb.search" in meta["scopes_supported"]
    assert meta["client_id_metadata_document_supported"] is True
    assert meta["authorization_response_iss_parameter_supported"] is True
    assert http.get(meta["jwks_uri"]).json()["keys"][0]["kid"] == idp.kid


# -- the whole grant ---------------------------------------------------------------------------------


def test_a_registered_client_signs_in_gets_consent_and_an_mcp_token(
    idp: IdentityProvider, http: httpx.Client, client_id: str
) -> None:
    verifier, challenge = pkce()
    redirect = redirect_params(sign_in_and_consent(authorization_url(idp, client_id, challenge), "alice"))
    assert (redirect["state"], redirect["iss"]) == ("state-9", idp.issuer)
    answer = exchange(http, client_id, redirect["code"], verifier, resource=RESOURCE)

    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert "id_token" not in body  # no openid asked for (nor granted)
    assert body["scope"] == "kb.search"
    assert body["refresh_token"]
    claims = mcp_claims(idp, body["access_token"])
    assert claims["aud"] == RESOURCE  # exactly, as a string
    assert (claims["iss"], claims["sub"], claims["scope"]) == (idp.issuer, "alice", "kb.search")
    assert (claims["client_id"], claims["client_name"]) == (client_id, "Test Agent")
    assert 0 < claims["exp"] - claims["iat"] <= 3600
    assert body["expires_in"] == claims["exp"] - claims["iat"]
    assert abs(claims["auth_time"] - claims["iat"]) <= 5
    assert claims["jti"]
    assert "email" not in claims
    assert "name" not in claims


def test_an_mcp_token_is_refused_by_the_apis_authorizer(
    idp: IdentityProvider, http: httpx.Client, client_id: str
) -> None:
    mcp_token = allowed(idp, http, client_id)["access_token"]

    with pytest.raises(GatewayError):
        JwtAuthorizer(idp.key, idp.issuer, tokens.DEFAULT_AUDIENCE).authorize(f"Bearer {mcp_token}")


def test_refresh_rotates_keeps_auth_time_and_a_reused_token_revokes_the_family(
    idp: IdentityProvider, http: httpx.Client, client_id: str, clock: Clock
) -> None:
    first = allowed(idp, http, client_id)
    signed_in_at = mcp_claims(idp, first["access_token"])["auth_time"]
    clock.skipped += 1800

    second = refresh(http, client_id, first["refresh_token"], resource=RESOURCE)
    assert second.status_code == 200, second.text
    claims = mcp_claims(idp, second.json()["access_token"])
    assert claims["auth_time"] == signed_in_at  # unchanged across refreshes
    assert claims["iat"] >= signed_in_at + 1800
    assert (claims["aud"], claims["scope"], claims["client_id"]) == (RESOURCE, "kb.search", client_id)
    without_resource = refresh(http, client_id, second.json()["refresh_token"])  # absent: the grant's
    assert without_resource.status_code == 200, without_resource.text
    assert mcp_claims(idp, without_resource.json()["access_token"])["auth_time"] == signed_in_at

    replayed = refresh(http, client_id, first["refresh_token"])
    newest = refresh(http, client_id, without_resource.json()["refresh_token"])
    assert replayed.json()["error"] == "invalid_grant"
    assert newest.json()["error"] == "invalid_grant"  # the whole family is revoked


def test_a_client_revoking_its_refresh_token_ends_the_grant(
    idp: IdentityProvider, http: httpx.Client, client_id: str
) -> None:
    grant = allowed(idp, http, client_id)
    rotated = refresh(http, client_id, grant["refresh_token"]).json()

    revoked = http.post("/revoke", data={"token": rotated["refresh_token"], "client_id": client_id})

    assert revoked.status_code == 200
    assert refresh(http, client_id, rotated["refresh_token"]).json()["error"] == "invalid_grant"


def test_a_registered_client_outlives_a_restart_with_its_refresh_token(
    key_path: Path, tmp_path: Path, clock: Clock
) -> None:
    key = tokens.load_signing_key(key_path)
    with (
        IdentityProvider(key, port=0, state_dir=tmp_path, clock=clock, mcp_resource=RESOURCE) as before,
        httpx.Client(base_url=before.url, timeout=10) as http,
    ):
        client_id = register(http).json()["client_id"]
        grant = allowed(before, http, client_id)
    with (
        IdentityProvider(key, port=0, state_dir=tmp_path, clock=clock, mcp_resource=RESOURCE) as after,
        httpx.Client(base_url=after.url, timeout=10) as http,
    ):
        answer = refresh(http, client_id, grant["refresh_token"])
    assert answer.status_code == 200, answer.text
    assert mcp_claims(after, answer.json()["access_token"])["client_name"] == "Test Agent"


# -- consent -----------------------------------------------------------------------------------------


def test_the_consent_page_names_the_client_its_host_and_what_it_may_do(
    idp: IdentityProvider, http: httpx.Client
) -> None:
    client_id = register(
        http, client_name="Claude\u202e evil\n  agent", redirect_uris=["https://agent.example/cb"]
    ).json()["client_id"]
    _, challenge = pkce()
    url = authorization_url(idp, client_id, challenge).replace(
        urlencode({"redirect_uri": CALLBACK}), urlencode({"redirect_uri": "https://agent.example/cb"})
    )
    page = http.get(url)
    action, hidden = read_form(page.text)
    consent = http.post(action, data=dict(hidden) | {"login_user_id": "alice"})

    assert consent.status_code == 200, consent.text
    text = consent.text
    assert "<strong>Claude evil agent</strong> (agent.example)" in text
    assert (
        "search and read your knowledge bases, read only; it cannot change, share or delete anything." in text
    )
    assert 'value="allow">Allow</button>' in text
    assert 'value="deny">Deny</button>' in text
    assert "<script" not in text
    assert (
        "https://agent.example" in consent.headers["content-security-policy"]
    )  # the form may redirect there
    assert consent.headers["x-frame-options"] == "DENY"


def test_deny_answers_access_denied_with_state_and_iss(idp: IdentityProvider, client_id: str) -> None:
    _, challenge = pkce()
    redirect = redirect_params(
        sign_in_and_consent(authorization_url(idp, client_id, challenge), "alice", decision="deny")
    )

    assert redirect["error"] == "access_denied"
    assert (redirect["state"], redirect["iss"]) == ("state-9", idp.issuer)
    assert "code" not in redirect


def test_a_sign_in_form_does_not_pass_for_a_consent_nor_a_forged_consent(
    idp: IdentityProvider, http: httpx.Client, client_id: str
) -> None:
    _, challenge = pkce()
    action, hidden = read_form(http.get(authorization_url(idp, client_id, challenge)).text)
    skipped = http.post(action, data=dict(hidden) | {"login_user_id": "alice", "decision": "allow"})
    consent = http.post(action, data=dict(hidden) | {"login_user_id": "alice"})
    _, consent_hidden = read_form(consent.text)
    as_bob = http.post(action, data=dict(consent_hidden) | {"consent_user_id": "bob", "decision": "allow"})

    assert skipped.status_code == 400
    assert "not made here" in skipped.text
    assert as_bob.status_code == 400
    assert "not made here" in as_bob.text
    assert "location" not in skipped.headers
    assert "location" not in as_bob.headers


def test_the_desktop_gets_no_consent_page_and_its_tokens_as_before(
    idp: IdentityProvider, http: httpx.Client
) -> None:
    verifier, challenge = pkce()
    params = {"response_type": "code", "client_id": CLIENT_ID, "redirect_uri": CALLBACK, "state": "s",
              "scope": "openid profile", "code_challenge": challenge, "code_challenge_method": "S256"}  # fmt: skip
    redirect = redirect_params(sign_in_and_consent(f"{idp.url}/authorize?{urlencode(params)}", "alice"))
    answer = exchange(http, CLIENT_ID, redirect["code"], verifier)

    assert redirect["iss"] == idp.issuer
    claims = JwtAuthorizer(idp.key, idp.issuer, tokens.DEFAULT_AUDIENCE).authorize(
        answer.json()["access_token"]
    )
    assert (claims["aud"], claims["client_id"], claims["scope"]) == ("memmy-kb", CLIENT_ID, "openid profile")
    assert "id_token" in answer.json()


# -- resource (RFC 8707) -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "resources",
    [[("resource", "http://127.0.0.1:18080/other")], [("resource", RESOURCE), ("resource", RESOURCE + "2")]],
    ids=["another", "two"],
)
def test_an_authorization_for_another_resource_is_invalid_target_at_the_client(
    idp: IdentityProvider, http: httpx.Client, client_id: str, resources: list[tuple[str, str]]
) -> None:
    _, challenge = pkce()
    answer = http.get(authorization_url(idp, client_id, challenge, *resources))

    assert answer.status_code == 302
    redirect = redirect_params(answer.headers["location"])
    assert answer.headers["location"].startswith(CALLBACK + "?")
    assert (redirect["error"], redirect["state"], redirect["iss"]) == (
        "invalid_target",
        "state-9",
        idp.issuer,
    )


def test_no_resource_means_the_mcp_resource_and_the_token_request_may_name_no_other(
    idp: IdentityProvider, http: httpx.Client, client_id: str
) -> None:
    verifier, challenge = pkce()
    redirect = redirect_params(sign_in_and_consent(authorization_url(idp, client_id, challenge), "alice"))
    wrong = exchange(http, client_id, redirect["code"], verifier, resource="http://127.0.0.1:18080/api")
    assert wrong.status_code == 400
    assert wrong.json()["error"] == "invalid_target"

    verifier, challenge = pkce()
    redirect = redirect_params(sign_in_and_consent(authorization_url(idp, client_id, challenge), "alice"))
    answer = exchange(http, client_id, redirect["code"], verifier)  # no resource: the code's
    assert mcp_claims(idp, answer.json()["access_token"])["aud"] == RESOURCE
    other = refresh(http, client_id, answer.json()["refresh_token"], resource="https://elsewhere.example/mcp")
    assert other.json()["error"] == "invalid_target"


def test_the_desktop_may_name_no_resource(idp: IdentityProvider, http: httpx.Client) -> None:
    _, challenge = pkce()
    params = {"response_type": "code", "client_id": CLIENT_ID, "redirect_uri": CALLBACK, "state": "s",
              "code_challenge": challenge, "code_challenge_method": "S256", "resource": RESOURCE}  # fmt: skip
    answer = http.get("/authorize", params=params)

    assert redirect_params(answer.headers["location"])["error"] == "invalid_target"


# -- refusals before the client's redirect URI is known -----------------------------------------------


def test_pkce_s256_is_required(idp: IdentityProvider, http: httpx.Client, client_id: str) -> None:
    url = authorization_url(idp, client_id, "x" * 43)
    without = http.get(url.replace("&code_challenge=" + "x" * 43, ""))
    plain = http.get(url.replace("code_challenge_method=S256", "code_challenge_method=plain"))

    for answer in (without, plain):
        redirect = redirect_params(answer.headers["location"])
        assert (redirect["error"], redirect["iss"]) == ("invalid_request", idp.issuer)


def test_a_redirect_uri_the_client_did_not_register_gets_a_page_not_a_redirect(
    idp: IdentityProvider, http: httpx.Client, client_id: str
) -> None:
    _, challenge = pkce()
    url = authorization_url(idp, client_id, challenge)
    other_port = http.get(url.replace("33418", "40000"))  # loopback: any port (RFC 8252 7.3)
    other_path = http.get(url.replace("%2Fcallback", "%2Felsewhere"))
    foreign = http.get(
        url.replace(urlencode({"x": CALLBACK})[2:], urlencode({"x": "https://evil.example/cb"})[2:])
    )

    assert other_port.status_code == 200
    assert "Sign in" in other_port.text
    for answer in (other_path, foreign):
        assert answer.status_code == 400
        assert "location" not in answer.headers


def test_an_unknown_client_and_a_client_asking_for_the_device_grant_are_refused(
    http: httpx.Client, client_id: str
) -> None:
    unknown = http.get("/authorize", params={"client_id": "mcp-nobody", "response_type": "code"})
    device = http.post("/device_authorization", data={"client_id": client_id})

    assert unknown.status_code == 400
    assert "invalid_client" in unknown.text
    assert device.json()["error"] == "unauthorized_client"
