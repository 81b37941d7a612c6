"""One sign-in at a time (``desktop/flows.py``), without a network: a flow whose tokens arrive after a
logout or a newer sign-in cancelled it keeps nothing and revokes them, and a device flow's poller leaves
as soon as its flow is cancelled. The sequences over HTTP are in
``tests/integration/login/test_desktop_login_races.py``."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from memmy_kb_client.desktop import flows, oidc
from memmy_kb_client.desktop.state import DesktopConfig, DesktopState
from memmy_kb_client.home.credentials import CloudLogin
from tests.support.desktop_oidc import PROVIDER

LATE = CloudLogin("https://api.example", "late.access.token", refresh_token="late-refresh")
KEPT = CloudLogin("https://api.example", "kept.access.token")


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> DesktopState:
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    return DesktopState(DesktopConfig(state_dir=str(tmp_path / "desktop"), cloud_url="https://api.example"))


@pytest.fixture
def revoked(monkeypatch: pytest.MonkeyPatch) -> list[CloudLogin]:
    seen: list[CloudLogin] = []
    monkeypatch.setattr(oidc, "revoke", lambda login, timeout=5.0: bool(seen.append(login)))
    return seen


class Gate:
    """Holds the provider's answer until the test lets it through."""

    def __init__(self) -> None:
        self.asked = threading.Event()
        self.release = threading.Event()

    def hold(self, answer: Any) -> Any:
        self.asked.set()
        assert self.release.wait(10)
        return answer


def cancel_by(state: DesktopState, how: str) -> None:
    if how == "logout":
        state.logout()
    elif how == "a pasted token":
        state.keep_login(KEPT)
    else:  # a newer sign-in
        state.flows.start_browser(PROVIDER, "http://127.0.0.1:8765/callback")


@pytest.mark.parametrize("how", ["logout", "a pasted token", "a newer sign-in"])
def test_a_browser_flow_cancelled_while_its_code_is_exchanged_keeps_nothing(state, revoked, monkeypatch, how):
    gate = Gate()
    monkeypatch.setattr(oidc, "exchange_code", lambda *args, **kwargs: gate.hold(LATE))
    flow = state.flows.start_browser(PROVIDER, "http://127.0.0.1:8765/callback")
    assert flow.request is not None
    claimed = state.flows.claim_by_state(flow.request.state)
    assert claimed is flow
    answers: list[CloudLogin | None] = []
    callback = threading.Thread(target=lambda: answers.append(state.flows.finish_browser(flow, "code", None)))
    callback.start()
    assert gate.asked.wait(10)
    cancel_by(state, how)
    gate.release.set()
    callback.join(10)

    assert answers == [None]
    assert flow.state == "cancelled"
    assert state.current_login() == (KEPT if how == "a pasted token" else None)
    assert revoked == [LATE]  # the late tokens are revoked at the provider


@pytest.mark.parametrize("how", ["logout", "a pasted token", "a newer sign-in"])
def test_device_tokens_that_arrive_after_a_cancellation_keep_nothing(state, revoked, monkeypatch, how):
    gate = Gate()
    monkeypatch.setattr(oidc, "device_authorization", lambda *a, **k: {"device_code": "d", "interval": 0.01})
    monkeypatch.setattr(oidc, "device_token", lambda *args, **kwargs: gate.hold({"access_token": "a"}))
    monkeypatch.setattr(oidc, "login_from_tokens", lambda *args, **kwargs: LATE)
    flow = state.flows.start_device(PROVIDER)
    assert gate.asked.wait(10)
    cancel_by(state, how)
    gate.release.set()
    _wait_for(lambda: revoked == [LATE])

    assert flow.state == "cancelled"
    assert state.current_login() == (KEPT if how == "a pasted token" else None)


def test_a_cancelled_device_flows_poller_leaves_at_once(state, monkeypatch):
    polls: list[int] = []

    def pending(*args: Any, **kwargs: Any) -> dict[str, Any]:
        polls.append(1)
        raise oidc.ProviderRefused("authorization_pending", "pending")

    monkeypatch.setattr(oidc, "device_authorization", lambda *a, **k: {"device_code": "d", "interval": 60})
    monkeypatch.setattr(oidc, "device_token", pending)
    flow = state.flows.start_device(PROVIDER)
    poller = next(t for t in threading.enumerate() if t.name == "memmy-kb-device-login" and t.is_alive())
    state.logout()
    poller.join(5)  # it waits 60 s between polls: only the cancellation can wake it this soon

    assert not poller.is_alive()
    assert polls == []
    assert (flow.state, flow.error) == ("cancelled", flows.LOGGED_OUT)


def test_starting_a_sign_in_cancels_the_one_pending(state):
    first = state.flows.start_browser(PROVIDER, "http://127.0.0.1:8765/callback")
    second = state.flows.start_browser(PROVIDER, "http://127.0.0.1:8765/callback")
    assert (first.state, first.error) == ("cancelled", flows.SUPERSEDED)
    assert second.state == "pending"
    assert first.request is not None
    assert state.flows.claim_by_state(first.request.state) is first  # found, to say it was cancelled
    assert first.state == "cancelled"


def _wait_for(condition: Any) -> None:
    deadline = time.monotonic() + 10
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert condition()

