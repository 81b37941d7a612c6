"""The desktop's sign-in checks without a network: the authorization request (PKCE S256, state, nonce),
the ID token's checks, when a login is due for refresh, the device grant's polling, and the single-flight
refresh (many recalls waiting on an expiring token make exactly one refresh call; rotation is saved
before use; ``invalid_grant`` logs out; a provider that cannot be reached keeps the login)."""

from __future__ import annotations

import base64
import hashlib
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from memmy_kb_client.desktop import flows, oidc
from memmy_kb_client.desktop.state import SIGN_IN_ENDED, DesktopConfig, DesktopState
from memmy_kb_client.home import paths
from memmy_kb_client.home.credentials import CloudLogin, FileStore
from tests.support.clock import FakeClock
from tests.support.desktop_oidc import CLIENT, ISSUER, PROVIDER
from tests.support.oidc_provider import signing_key

NOW = 1_800_000_000.0
KEY = signing_key("test-key-1")
KEYS = {"keys": [KEY.as_dict(private=False)]}


def id_token(key: Any = KEY, header: dict[str, Any] | None = None, **changes: Any) -> str:
    from joserfc import jwt

    claims = {"iss": ISSUER, "aud": CLIENT, "sub": "alice", "iat": NOW, "exp": NOW + 3600, "nonce": "n-1"}
    claims.update(changes)
    claims = {name: value for name, value in claims.items() if value is not None}
    return jwt.encode(header or {"alg": "RS256", "kid": str(key.kid)}, claims, key)


def verify(token: str, **options: Any) -> dict[str, Any]:
    return oidc.verify_id_token(token, KEYS, issuer=ISSUER, client_id=CLIENT, now=NOW, **{"nonce": "n-1", **options})


# -------------------------------------------------------------------------------- the request


def test_the_authorization_request_carries_an_s256_challenge_a_state_and_a_nonce():
    first = oidc.browser_request(PROVIDER, "http://127.0.0.1:8765/callback")
    second = oidc.browser_request(PROVIDER, "http://127.0.0.1:8765/callback")

    query = {key: values[0] for key, values in parse_qs(urlsplit(first.url).query).items()}
    digest = hashlib.sha256(first.code_verifier.encode()).digest()
    assert query["code_challenge"] == base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
    assert query["code_challenge_method"] == "S256"
    assert first.code_verifier not in first.url  # only its hash travels
    assert 43 <= len(first.code_verifier) <= 128
    assert (query["state"], query["nonce"]) == (first.state, first.nonce)
    assert query["redirect_uri"] == "http://127.0.0.1:8765/callback"
    assert (query["response_type"], query["client_id"]) == ("code", CLIENT)
    assert query["scope"] == "openid profile email offline_access"
    assert len({first.state, first.nonce, second.state, second.nonce, first.code_verifier}) == 5


# ------------------------------------------------------------------------------------ ID token


def test_a_good_id_token_passes():
    assert verify(id_token(name="Alice"))["name"] == "Alice"
    assert verify(id_token(aud=[CLIENT, "other"], azp=CLIENT))["sub"] == "alice"


@pytest.mark.parametrize(
    ("token", "options", "why"),
    [
        (lambda: id_token(nonce="another"), {}, "nonce"),
        (lambda: id_token(nonce=None), {}, "nonce"),
        (lambda: id_token(iss="https://foreign.example"), {}, "another issuer"),
        (lambda: id_token(aud="another-client"), {}, "aud"),
        (lambda: id_token(aud=[CLIENT, "other"], azp="other"), {}, "azp"),
        (lambda: id_token(exp=NOW), {}, "expired"),
        (lambda: id_token(exp=None), {}, "expired"),
        (lambda: id_token(sub=None), {}, "no subject"),
        (lambda: id_token(sub="mallory"), {"subject": "alice"}, "another subject"),
        (lambda: id_token(signing_key("test-key-2")), {}, "signature"),
        (lambda: id_token(header={"alg": "RS256", "kid": "unknown"}), {}, "signature"),
        (lambda: id_token()[:-4] + "AAAA", {}, "signature"),
        (lambda: id_token().rsplit(".", 1)[0] + ".", {}, "signature"),
        (lambda: "not-a-jwt", {}, "signature"),
    ],
)
def test_an_id_token_failing_a_check_is_refused(token, options, why):
    with pytest.raises(oidc.LoginError) as refused:
        verify(token(), **options)
    assert refused.value.code == "id_token_invalid"
    assert why in refused.value.message


def test_an_unsigned_id_token_is_refused():
    def part(value: str) -> str:
        return base64.urlsafe_b64encode(value.encode()).rstrip(b"=").decode()

    header, claims = part('{"alg":"none","kid":"test-key-1"}'), part('{"iss":"https://id.example"}')
    unsigned = f"{header}.{claims}."
    with pytest.raises(oidc.LoginError, match="signature"):
        verify(unsigned)


# ----------------------------------------------------------------------------- refresh margin


def login_expiring(at: float, obtained: float, **changes: Any) -> CloudLogin:
    return CloudLogin(
        "https://api.example",
        "opaque-access-token",
        refresh_token="rt-1",
        obtained_at=obtained,
        expires_at_hint=at,
        token_endpoint=f"{ISSUER}/token",
        **changes,
    )


def test_a_login_is_refreshed_a_minute_before_expiry_or_at_half_its_lifetime():
    hour = login_expiring(NOW + 3600, NOW)
    assert not hour.refresh_due(NOW + 3600 - 61)
    assert hour.refresh_due(NOW + 3600 - 60)
    short = login_expiring(NOW + 40, NOW)
    assert not short.refresh_due(NOW + 19)
    assert short.refresh_due(NOW + 20)
    assert not CloudLogin("c", "opaque").refresh_due(NOW)  # no expiry known: nothing to do


def test_an_older_login_record_still_reads():
    old = CloudLogin.from_json('{"cloud": "https://api.example", "token": "tok"}')
    assert old == CloudLogin("https://api.example", "tok")
    assert old.token == "tok"
    assert not old.refreshable()
    again = login_expiring(NOW + 60, NOW, id_token="idt", bearer="id_token")
    assert CloudLogin.from_json(again.to_json()) == again
    assert again.token == "idt"


# ---------------------------------------------------------------------------- device polling


def test_device_polling_waits_the_interval_and_slows_down_when_told():
    answers: list[Any] = [
        oidc.ProviderRefused("authorization_pending", "pending"),
        oidc.ProviderRefused("slow_down", "slow"),
        oidc.ProviderUnreachable("unreachable", "no answer"),
        oidc.ProviderRefused("authorization_pending", "pending"),
        {"access_token": "a"},
    ]
    waits: list[float] = []

    def ask() -> dict[str, Any]:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return dict(answer)

    outcome = flows.poll_device(ask, 5.0, float("inf"), lambda s: bool(waits.append(s)), time.monotonic)

    assert outcome == {"access_token": "a"}
    assert waits == [5.0, 5.0, 10.0, 10.0, 10.0]


@pytest.mark.parametrize(
    ("error", "state"),
    [("expired_token", "expired"), ("access_denied", "failed"), ("invalid_client", "failed")],
)
def test_device_polling_ends_on_a_final_answer(error, state):
    def ask() -> dict[str, Any]:
        raise oidc.ProviderRefused(error, f"refused ({error})")

    outcome = flows.poll_device(ask, 1.0, float("inf"), lambda s: False, time.monotonic)
    assert isinstance(outcome, tuple)
    assert outcome[0] == state


def test_device_polling_stops_at_the_deadline_and_on_stop():
    clock = FakeClock(0)

    def ask() -> dict[str, Any]:
        raise oidc.ProviderRefused("authorization_pending", "pending")

    def wait(seconds: float) -> bool:
        clock.advance(seconds)
        return False

    assert flows.poll_device(ask, 5.0, 12.0, wait, clock.now)[0] == "expired"  # type: ignore[index]
    assert flows.poll_device(ask, 5.0, 12.0, lambda s: True, clock.now)[0] == "failed"  # type: ignore[index]


# ---------------------------------------------------------------------- single-flight refresh


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> DesktopState:
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    clock = FakeClock(NOW)
    desktop = DesktopState(DesktopConfig(state_dir=str(tmp_path / "desktop"), cloud_url="https://api.example", clock=clock.now))
    desktop.clock = clock  # type: ignore[attr-defined]
    desktop.keep_login(login_expiring(NOW + 3600, NOW))
    return desktop


def saved(state: DesktopState) -> CloudLogin | None:
    return FileStore(paths.private_dir(state.state_dir)).load()


def test_twenty_waiting_recalls_make_one_refresh_and_all_use_its_token(state, monkeypatch):
    calls: list[str] = []
    started = threading.Event()

    def refresh(login: CloudLogin, now: float, timeout: float) -> CloudLogin:
        calls.append(login.refresh_token)
        started.set()
        time.sleep(0.2)  # every other thread arrives meanwhile
        return login.rotated(access_token="new-access", refresh_token="rt-2", obtained_at=now, expires_at_hint=now + 3600)

    monkeypatch.setattr(oidc, "refresh", refresh)
    state.clock.advance(3600 - 30)  # type: ignore[attr-defined]
    results: list[tuple[CloudLogin | None, str]] = []
    threads = [threading.Thread(target=lambda: results.append(state.fresh_login())) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert calls == ["rt-1"]
    assert {(login.access_token if login else None, why) for login, why in results} == {("new-access", "")}
    kept = saved(state)
    assert kept is not None
    assert kept.refresh_token == "rt-2"  # the rotated token replaced the old one on disk


def test_the_rotated_token_is_saved_before_it_is_used(state, monkeypatch):
    seen_on_disk: list[str] = []

    def refresh(login: CloudLogin, now: float, timeout: float) -> CloudLogin:
        return login.rotated(access_token="new-access", refresh_token="rt-2", obtained_at=now, expires_at_hint=now + 3600)

    real_save = state._save

    def save(login: CloudLogin) -> None:
        real_save(login)
        current = state.current_login()
        seen_on_disk.append(f"{login.refresh_token} saved while {current.refresh_token if current else None} in use")

    monkeypatch.setattr(oidc, "refresh", refresh)
    monkeypatch.setattr(state, "_save", save)
    state.clock.advance(3600)  # type: ignore[attr-defined]
    login, _ = state.fresh_login()
    assert login is not None
    assert login.refresh_token == "rt-2"
    assert seen_on_disk == ["rt-2 saved while rt-1 in use"]


def test_invalid_grant_is_logged_out_with_a_note(state, monkeypatch):
    def refresh(login: CloudLogin, now: float, timeout: float) -> CloudLogin:
        raise oidc.ProviderRefused("invalid_grant", "refused (invalid_grant)")

    monkeypatch.setattr(oidc, "refresh", refresh)
    state.clock.advance(3600 - 10)  # type: ignore[attr-defined]
    assert state.fresh_login() == (None, "logged_out")
    assert state.current_login() is None
    assert saved(state) is None
    note = SIGN_IN_ENDED.replace("{login}", state.commands()["login"])  # the command as it can be run
    assert state.status()["login"] == {"state": "logged_out", "note": note}
    assert "desktop login`" in note


def test_a_network_failure_keeps_the_login_and_never_sends_an_expired_token(state, monkeypatch):
    calls: list[float] = []

    def refresh(login: CloudLogin, now: float, timeout: float) -> CloudLogin:
        calls.append(now)
        raise oidc.ProviderUnreachable("unreachable", "the provider did not answer")

    monkeypatch.setattr(oidc, "refresh", refresh)
    state.clock.advance(3600 - 10)  # type: ignore[attr-defined]
    login, why = state.fresh_login()
    assert (login is not None, why) == (True, "")  # still valid for 10 s: used as it is
    state.clock.advance(20)  # type: ignore[attr-defined]
    assert state.fresh_login() == (None, "unreachable")  # expired now: never sent
    assert len(calls) == 1  # the retry waits a few seconds
    assert state.current_login() is not None
    assert saved(state) is not None
    state._retry_refresh_at = 0.0
    assert state.fresh_login() == (None, "unreachable")
    assert len(calls) == 2


def test_a_logout_during_a_refresh_is_not_undone_by_it(state, monkeypatch):
    refreshing, finish = threading.Event(), threading.Event()

    def refresh(login: CloudLogin, now: float, timeout: float) -> CloudLogin:
        refreshing.set()
        finish.wait(5)
        return login.rotated(access_token="new-access", refresh_token="rt-2", obtained_at=now, expires_at_hint=now + 3600)

    monkeypatch.setattr(oidc, "refresh", refresh)
    state.clock.advance(3600 - 10)  # type: ignore[attr-defined]
    recall = threading.Thread(target=state.fresh_login)
    recall.start()
    assert refreshing.wait(5)
    logout = threading.Thread(target=state.clear_login)
    logout.start()
    finish.set()
    recall.join()
    logout.join()

    assert state.current_login() is None
    assert saved(state) is None  # the refreshed login was not written back after the logout
