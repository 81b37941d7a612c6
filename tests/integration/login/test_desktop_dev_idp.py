"""The desktop's sign-in against the local stack's real dev identity provider (memmy_local.identity.provider),
in-process: a browser sign-in through its form, a refresh it rotates, a device sign-in through its
/device page (and the desktop's polling slowed down by it), and logout revoking at it. The cloud is a stand-in whose /login-configuration names the
provider and whose recall takes the provider's access tokens through the local gateway's authorizer."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from memmy_kb_client.desktop import oidc
from memmy_kb_client.desktop.flows import poll_device
from memmy_kb_client.desktop.server import DesktopService
from memmy_kb_client.home import paths
from memmy_kb_client.home.credentials import CloudLogin
from memmy_local import tokens
from memmy_local.gateway.authorizer import JwtAuthorizer
from memmy_local.gateway.http_events import GatewayError
from memmy_local.identity.provider import IdentityProvider
from memmy_local.identity.records import CLIENT_ID
from tests.support.clock import Clock
from tests.support.desktop_service import Client, serving, start

AUDIENCE = "memmy-kb"
PERSON = {"login_user_id": "alice", "login_name": "Alice", "login_email": "alice@example.com",
          "login_phone": "+8613800138000"}  # fmt: skip


class StandInCloud(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, idp: IdentityProvider) -> None:
        super().__init__(("127.0.0.1", 0), _CloudHandler)
        self.idp = idp
        self.authorizer = JwtAuthorizer(idp.key, idp.issuer, AUDIENCE)
        self.callers: list[str] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _CloudHandler(BaseHTTPRequestHandler):
    server: StandInCloud
    protocol_version = "HTTP/1.1"

    def _reply(self, status: int, body: Any) -> None:
        raw = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_GET(self) -> None:
        scopes = ["openid", "profile", "email", "phone", "offline_access"]
        configuration = {"issuer": self.server.idp.issuer, "client_id": CLIENT_ID, "audience": AUDIENCE,
                         "scopes": scopes, "bearer_token": "access_token"}  # fmt: skip
        self._reply(200, configuration)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            claims = self.server.authorizer.authorize(
                (self.headers.get("Authorization") or "").removeprefix("Bearer ")
            )
        except GatewayError:
            self._reply(401, {"message": "Unauthorized"})
            return
        self.server.callers.append(str(claims["sub"]))
        self._reply(200, {"context": "the block", "items": []})

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(autouse=True)
def no_keychain(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")


# Tokens that last 3 s: refreshed once less than 1.5 s is left (half their lifetime), on the real clock,
# which the stand-in cloud's authorizer reads too.
ACCESS_TOKEN_TTL = 3


@pytest.fixture
def idp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[IdentityProvider]:
    key = tokens.load_signing_key(tmp_path_factory.mktemp("idp-key") / "key.pem")
    with IdentityProvider(key, port=0, audience=AUDIENCE, access_token_ttl=ACCESS_TOKEN_TTL) as provider:
        yield provider


@pytest.fixture
def cloud(idp: IdentityProvider) -> Iterator[StandInCloud]:
    yield from serving(StandInCloud(idp))


@pytest.fixture
def client(tmp_path: Path, cloud: StandInCloud) -> Iterator[Client]:
    running: DesktopService = start(tmp_path / "desktop", cloud.url)
    yield Client(running)
    running.stop()


def form_fields(page: str) -> dict[str, str]:
    return dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', page))


def wait_for(client: Client, flow: str) -> dict[str, Any]:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        answer = client.control("GET", f"/control/login/flow?id={flow}")[1]
        if answer["state"] != "pending":
            return answer
        time.sleep(0.1)
    raise AssertionError("the sign-in did not finish")


def saved(client: Client) -> CloudLogin:
    login = CloudLogin.from_json((client.private_dir / paths.LOGIN_FILE).read_text())
    assert login is not None
    return login


def test_a_browser_sign_in_at_the_dev_provider_then_a_refresh_and_a_logout(client, idp, cloud):
    status, started = client.control("POST", "/control/login/start", {"mode": "browser"})
    assert status == 200, started
    with httpx.Client(timeout=10, trust_env=False) as browser:
        form = browser.get(started["url"])
        assert form.status_code == 200, form.text
        redirect = browser.post(f"{idp.url}/authorize", data=form_fields(form.text) | PERSON)
        assert redirect.status_code == 302, redirect.text
        assert redirect.headers["location"].startswith(f"{client.service.url}/callback?")
        landed = browser.get(redirect.headers["location"])
    assert (landed.status_code, landed.headers["location"]) == (303, "/"), landed.text
    done = wait_for(client, started["flow"])
    assert done["state"] == "done"
    assert (done["status"]["login"]["user"], done["status"]["login"]["name"]) == ("alice", "Alice")

    assert client.recall()["cloud"] == "ok"
    first = saved(client)
    time.sleep(ACCESS_TOKEN_TTL / 2 + 0.2)  # within the margin now
    assert client.recall()["cloud"] == "ok"
    second = saved(client)
    assert second.refresh_token != first.refresh_token  # rotated, and kept
    assert second.access_token != first.access_token
    assert cloud.callers == ["alice", "alice"]

    client.control("POST", "/control/logout")
    refused = httpx.post(
        f"{idp.url}/token",
        data={"grant_type": "refresh_token", "refresh_token": second.refresh_token, "client_id": CLIENT_ID},
    )
    assert refused.json()["error"] == "invalid_grant"  # revoked at the provider


def test_a_device_sign_in_at_the_dev_provider(client, idp, cloud):
    status, started = client.control("POST", "/control/login/start", {"mode": "device"})
    assert status == 200, started
    assert started["verification_uri"] == f"{idp.url}/device"
    with httpx.Client(base_url=idp.url, timeout=10, trust_env=False) as phone:
        page = phone.get("/device")
        code_page = phone.post("/device", data=form_fields(page.text) | {"user_code": started["user_code"]})
        done = phone.post("/device", data=form_fields(code_page.text) | PERSON)
        assert done.status_code == 200, done.text
    assert wait_for(client, started["flow"])["state"] == "done"
    assert client.recall()["cloud"] == "ok"
    assert cloud.callers == ["alice"]


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def clocked_cloud(tmp_path_factory: pytest.TempPathFactory, clock: Clock) -> Iterator[StandInCloud]:
    """A stand-in cloud naming a provider whose clock the test skips ahead."""
    key = tokens.load_signing_key(tmp_path_factory.mktemp("idp-key") / "key.pem")
    with IdentityProvider(key, port=0, audience=AUDIENCE, clock=clock) as provider:
        yield from serving(StandInCloud(provider))


def test_the_desktops_polling_honours_the_dev_providers_slow_down(clocked_cloud, clock):
    """The desktop's own polling loop (``flows.poll_device``, as a device sign-in runs it) against the
    provider's slow_down: a poll too soon is slowed down, the desktop waits 5 s longer from then on, is
    not slowed down again, and gets its tokens. Each wait skips the provider's clock instead of sleeping."""
    provider = oidc.discover(clocked_cloud.url)
    device = oidc.device_authorization(provider)
    waits: list[float] = []

    def wait(seconds: float) -> bool:
        waits.append(seconds)
        if len(waits) <= 2:
            return False  # the first two polls go at once: the second is too soon
        if len(waits) == 4:  # the person signs in while the desktop waits
            with httpx.Client(base_url=clocked_cloud.idp.url, timeout=10, trust_env=False) as phone:
                page = phone.get("/device")
                code_page = phone.post(
                    "/device", data=form_fields(page.text) | {"user_code": device["user_code"]}
                )
                assert phone.post("/device", data=form_fields(code_page.text) | PERSON).status_code == 200
        clock.skipped += seconds
        return False

    outcome = poll_device(
        lambda: oidc.device_token(provider, device["device_code"]),
        float(device["interval"]),
        time.monotonic() + 600,
        wait,
        time.monotonic,
    )

    assert isinstance(outcome, dict), outcome
    assert outcome["access_token"]
    # 5 s, then at once again (slow_down: 5 s more), then 10 s twice: the third poll was pending, not slowed.
    assert waits == [5.0, 5.0, 10.0, 10.0]
