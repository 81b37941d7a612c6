"""``GET /login-configuration``: the deployment's public login settings, answered without a caller."""

from __future__ import annotations

import dataclasses
import json
from http import HTTPStatus
from typing import Any

import pytest

from memmy_kb import composition
from memmy_kb.api.resolver import build_resolver
from memmy_kb.api.routes import login
from memmy_kb.settings import Settings, get_settings
from tests.support.events import FakeLambdaContext, http_event

CONFIGURED = Settings(
    table_name="never-read",
    memos_base_url="http://127.0.0.1:9",
    memos_api_key_secret="",
    login_issuer="https://login.memmy.test/pool",
    login_client_id="desktop-client",
    login_audience="memmy-api",
    login_scopes=("openid", "profile", "offline_access"),
)


def _get(settings: Settings, claims: dict[str, str] | None = None) -> tuple[int, Any, dict[str, str]]:
    app = build_resolver()
    app.include_router(login.router)
    app.dependency_overrides[get_settings] = lambda: settings
    reply = app.resolve(http_event("GET", "/login-configuration", claims=claims), FakeLambdaContext())
    return reply["statusCode"], json.loads(reply["body"]), reply.get("headers") or {}


@pytest.fixture(autouse=True)
def no_environment(monkeypatch: pytest.MonkeyPatch) -> Any:
    # Reading the real settings would fail without TABLE_NAME: the route must get the overridden ones.
    monkeypatch.delenv("TABLE_NAME", raising=False)
    composition.reset_composition()
    yield
    composition.reset_composition()


def test_the_configuration_is_answered_without_a_caller_from_the_settings() -> None:
    status, body, headers = _get(CONFIGURED)
    assert status == HTTPStatus.OK, body
    assert body == {
        "issuer": "https://login.memmy.test/pool",
        "client_id": "desktop-client",
        "audience": "memmy-api",
        "scopes": ["openid", "profile", "offline_access"],
        "bearer_token": "access_token",
    }
    assert headers["Cache-Control"] == "public, max-age=300"


def test_the_configuration_names_the_token_the_desktop_sends() -> None:
    # Given a deployment whose provider puts the audience and the profile claims in its ID tokens (Cognito)
    status, body, _ = _get(dataclasses.replace(CONFIGURED, login_bearer_token="id_token"))
    # Then the desktop is told to send the ID token
    assert status == HTTPStatus.OK, body
    assert body["bearer_token"] == "id_token"


@pytest.mark.parametrize("token", ["refresh_token", "ID_TOKEN", "id_token "])
def test_a_deployment_naming_an_unknown_token_says_so_rather_than_guessing(token: str) -> None:
    status, body, _ = _get(dataclasses.replace(CONFIGURED, login_bearer_token=token))
    assert status == HTTPStatus.SERVICE_UNAVAILABLE
    assert body["error"]["code"] == "login_not_configured"


def test_a_caller_gets_the_same_answer_and_nothing_about_themselves() -> None:
    anonymous = _get(CONFIGURED)
    signed_in = _get(CONFIGURED, claims={"sub": "alice", "email": "alice@example.com", "email_verified": "true"})
    assert signed_in == anonymous
    assert "alice" not in json.dumps(signed_in[1])


@pytest.mark.parametrize("missing", ["login_issuer", "login_client_id", "login_audience", "login_scopes"])
def test_a_deployment_without_its_login_settings_says_so(missing: str) -> None:
    empty: Any = () if missing == "login_scopes" else ""
    status, body, headers = _get(dataclasses.replace(CONFIGURED, **{missing: empty}))
    assert status == HTTPStatus.SERVICE_UNAVAILABLE
    assert body["error"]["code"] == "login_not_configured"
    assert "Cache-Control" not in headers


def test_the_settings_read_the_login_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TABLE_NAME", "t")
    monkeypatch.setenv("LOGIN_ISSUER", "https://login.memmy.test/pool")
    monkeypatch.setenv("LOGIN_CLIENT_ID", "desktop-client")
    monkeypatch.setenv("LOGIN_AUDIENCE", "memmy-api")
    monkeypatch.setenv("LOGIN_SCOPES", "openid  profile\temail ")
    composition.reset_composition()
    settings = get_settings()
    assert (settings.login_issuer, settings.login_client_id, settings.login_audience) == (
        "https://login.memmy.test/pool",
        "desktop-client",
        "memmy-api",
    )
    assert settings.login_scopes == ("openid", "profile", "email")
    # Without LOGIN_BEARER_TOKEN the desktop sends its access token, as before the setting existed.
    assert settings.login_bearer_token == "access_token"
    monkeypatch.setenv("LOGIN_BEARER_TOKEN", " id_token ")
    composition.reset_composition()
    assert get_settings().login_bearer_token == "id_token"
