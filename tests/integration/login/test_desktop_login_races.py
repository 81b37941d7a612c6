"""One sign-in at a time, over HTTP against the fake provider (tests/support/oidc_provider.py): a sign-in
that completes (a flow, or a pasted token) and a logout (``desktop logout``, the page's Sign out) cancel
every pending flow, and starting a sign-in cancels the one before. A late device approval or browser
callback is then refused and changes nothing; ``desktop login`` says why its sign-in ended."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from memmy_kb_client.cli import desktop_commands as commands
from memmy_kb_client.cli import main as cli
from memmy_kb_client.desktop import flows
from memmy_kb_client.desktop.server import DesktopService
from memmy_kb_client.home import paths
from tests.support.clock import FakeClock
from tests.support.desktop_login import SIGNED_IN, browse, flow_state, page_session
from tests.support.desktop_service import Client, serving, start
from tests.support.oidc_provider import FakeLoginCloud, FakeProvider


@pytest.fixture(autouse=True)
def no_keychain(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(time.time())


@pytest.fixture
def provider(clock: FakeClock) -> Iterator[FakeProvider]:
    yield from serving(FakeProvider(clock.now))


@pytest.fixture
def cloud(provider: FakeProvider) -> Iterator[FakeLoginCloud]:
    yield from serving(FakeLoginCloud(provider))


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    return tmp_path / "home" / "desktop"


@pytest.fixture
def service(state_dir: Path, cloud: FakeLoginCloud, clock: FakeClock) -> Iterator[DesktopService]:
    running = start(state_dir, cloud.url, clock=clock.now, login_timeout=5.0)
    yield running
    running.stop()


@pytest.fixture
def client(service: DesktopService) -> Client:
    return Client(service)


def start_flow(client: Client, mode: str) -> dict[str, Any]:
    status, started = client.control("POST", "/control/login/start", {"mode": mode})
    assert status == 200, started
    return started


def signed_in_as(client: Client) -> str | None:
    login = client.control("GET", "/control/status")[1]["login"]
    return login.get("user") if login["state"] == "logged_in" else None


def sign_in_in_the_browser(client: Client, provider: FakeProvider, user: str) -> None:
    provider.user = {"sub": user, "name": user.title()}
    assert browse(start_flow(client, "browser")["url"]).status_code == SIGNED_IN
    assert signed_in_as(client) == user


def paste_token_for(client: Client, provider: FakeProvider, user: str) -> None:
    token = provider.sign({"iss": provider.issuer, "sub": user, "exp": int(time.time()) + 3600})
    client.login(token)
    assert signed_in_as(client) == user


def approve_too_late(provider: FakeProvider, started: dict[str, Any]) -> None:
    """The person approves the device code now; the service must no longer be asking."""
    polls = provider.device_polls()
    provider.user = {"sub": "mallory", "name": "Mallory"}
    provider.approve_device(started["user_code"])
    time.sleep(0.3)  # six of the provider's poll intervals
    assert provider.device_polls() == polls  # the poller had stopped


# ------------------------------------------------------------------------- a late device approval


@pytest.mark.parametrize("other", ["a browser sign-in", "a pasted token"])
def test_a_device_code_approved_after_another_sign_in_completed_is_refused(client, provider, other):
    device = start_flow(client, "device")
    if other == "a pasted token":
        paste_token_for(client, provider, "bob")
        why = flows.REPLACED
    else:
        sign_in_in_the_browser(client, provider, "bob")
        why = flows.SUPERSEDED  # started after the device flow, so it cancelled it at once
    approve_too_late(provider, device)

    assert flow_state(client, device["flow"]) == {"state": "cancelled", "error": why}
    assert signed_in_as(client) == "bob"


def test_after_a_logout_a_late_device_approval_is_refused(client, provider):
    sign_in_in_the_browser(client, provider, "alice")
    device = start_flow(client, "device")
    assert client.control("POST", "/control/logout")[0] == 200
    approve_too_late(provider, device)

    assert flow_state(client, device["flow"]) == {"state": "cancelled", "error": flows.LOGGED_OUT}
    assert signed_in_as(client) is None
    assert provider.live_refresh_tokens() == []


# ------------------------------------------------------------------------ a late browser callback


def test_after_a_logout_a_late_browser_callback_is_refused(client, provider, state_dir):
    started = start_flow(client, "browser")
    assert client.control("POST", "/control/logout")[0] == 200
    page = browse(started["url"])  # the person finishes signing in at the provider only now

    assert page.status_code == 400
    assert "Sign-in cancelled" in page.text
    assert "Set-Cookie" not in page.headers  # no page session for a sign-in that kept nothing
    assert "cancelled by a newer sign-in or a sign-out" in page.text
    assert flow_state(client, started["flow"]) == {"state": "cancelled", "error": flows.LOGGED_OUT}
    assert signed_in_as(client) is None
    assert "authorization_code" not in provider.grants  # its code was never exchanged
    assert not (client.private_dir / paths.LOGIN_FILE).exists()


def test_of_two_sign_ins_started_the_first_is_cancelled(client, provider):
    first = start_flow(client, "browser")
    second = start_flow(client, "browser")

    late = browse(first["url"])
    assert late.status_code == 400
    assert "cancelled by a newer sign-in or a sign-out" in late.text
    assert flow_state(client, first["flow"]) == {"state": "cancelled", "error": flows.SUPERSEDED}
    assert browse(second["url"]).status_code == SIGNED_IN
    assert flow_state(client, second["flow"])["state"] == "done"
    assert signed_in_as(client) == "alice"


def test_the_pages_sign_in_and_sign_out_count_too(client, provider, service):
    headers = page_session(service)
    device = start_flow(client, "device")
    from_page = httpx.post(f"{service.url}/api/login", headers=headers, timeout=10)
    assert from_page.status_code == 200
    assert flow_state(client, device["flow"]) == {"state": "cancelled", "error": flows.SUPERSEDED}

    assert httpx.post(f"{service.url}/api/logout", headers=headers, timeout=10).status_code == 200
    late = browse(from_page.json()["url"])
    assert late.status_code == 400
    assert "cancelled by a newer sign-in or a sign-out" in late.text
    assert signed_in_as(client) is None


def test_desktop_login_says_its_sign_in_was_cancelled(service, client, provider, state_dir, monkeypatch, capsys):
    monkeypatch.setenv(paths.HOME_ENV, str(state_dir.parent))
    monkeypatch.setattr(commands, "FLOW_POLL_SECONDS", 0.05)

    def log_out_once_asked() -> None:
        deadline = time.monotonic() + 10
        while not any(provider.device_polls()) and time.monotonic() < deadline:
            time.sleep(0.02)  # the service is polling: its flow is under way
        client.control("POST", "/control/logout")

    other = threading.Thread(target=log_out_once_asked)
    other.start()
    assert cli.main(["desktop", "login", "--device"]) == 1
    other.join()
    err = capsys.readouterr().err
    assert f"error: the sign-in is cancelled: {flows.LOGGED_OUT}" in err
