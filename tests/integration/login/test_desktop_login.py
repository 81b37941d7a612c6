"""The desktop's sign-in over HTTP, in-process: the local service, a fake OpenID Connect provider and a
cloud that logs in with it (tests/support/oidc_provider.py). The browser is played by httpx following
the provider's redirect to ``/callback``.

Covered: the browser flow (PKCE, state, nonce) end to end and each refusal with nothing stored, the
device flow, refresh before expiry (one at a time, rotation kept, ``invalid_grant``, the provider down),
logout revoking the refresh token, the page's /api/login, /api/logout and /api/session, and the
``memmy-kb desktop login`` command."""

from __future__ import annotations

import html
import io
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from memmy_kb_client.cli import desktop_commands as commands
from memmy_kb_client.cli import main as cli
from memmy_kb_client.desktop.server import DesktopService
from memmy_kb_client.home import paths
from memmy_kb_client.home.credentials import CloudLogin
from tests.support.clock import FakeClock
from tests.support.desktop_login import SIGNED_IN, browse, flow_state, page_session, sign_in
from tests.support.desktop_service import Client, serving, start
from tests.support.keychain import MemoryKeyring
from tests.support.oidc_provider import BLOCK, FakeLoginCloud, FakeProvider


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


def nothing_stored(client: Client, state_dir: Path) -> None:
    assert client.control("GET", "/control/status")[1]["login"] == {"state": "logged_out"}
    assert not (client.private_dir / paths.LOGIN_FILE).exists()
    assert not (state_dir / paths.LOGIN_FILE).exists()


def secret_files(*folders: Path) -> list[Path]:
    return [path for folder in folders if folder.exists() for path in folder.iterdir() if path.is_file()]


# ------------------------------------------------------------------------------------ browser flow


def test_the_browser_flow_signs_in_and_recall_uses_the_access_token(client, provider, cloud, state_dir):
    started, page = sign_in(client)

    assert set(started) == {"flow", "url", "expires_in"}
    (asked,) = provider.authorize_requests
    assert asked["redirect_uri"] == f"{client.service.url}/callback"
    assert asked["code_challenge_method"] == "S256"
    assert asked["scope"].split() == ["openid", "profile", "email", "offline_access"]
    assert len(asked["state"]) >= 32
    assert len(asked["nonce"]) >= 32
    # The browser that signed in goes on to the page, with a page session of its own
    assert page.status_code == SIGNED_IN
    assert page.headers["Location"] == "/"
    assert page.headers["Referrer-Policy"] == "no-referrer"
    cookie = page.headers["Set-Cookie"]
    assert cookie.startswith(f"memmy_kb_session_{client.service.port}=")
    assert {"HttpOnly", "SameSite=Strict", "Path=/"} <= {flag.strip() for flag in cookie.split(";")[1:]}
    session = httpx.get(f"{client.service.url}/api/session", headers={"Cookie": cookie.split(";")[0]}, timeout=10)
    assert session.json()["user"] == {"user_id": "alice", "name": "Alice", "email": "alice@example.com"}
    done = flow_state(client, started["flow"])
    assert done["state"] == "done"
    assert done["status"]["login"]["user"] == "alice"
    assert done["status"]["login"]["name"] == "Alice"
    assert done["status"]["login"]["email"] == "alice@example.com"
    assert done["status"]["login"]["refreshes"] is True

    assert client.recall() == {"context": BLOCK, "cloud": "ok", "excerpts": 0}
    sent = CloudLogin.from_json((client.private_dir / paths.LOGIN_FILE).read_text())
    assert sent is not None
    assert cloud.bearers == [sent.access_token]
    assert sent.refresh_token in provider.live_refresh_tokens()
    # No answer carries a token, and nothing the hooks read holds one.
    for secret in (sent.access_token, sent.refresh_token, sent.id_token):
        assert secret not in json.dumps(done)
        assert secret not in page.text
        assert not any(secret in path.read_text(errors="replace") for path in secret_files(state_dir))


def test_the_id_token_is_the_bearer_when_the_cloud_says_so(client, provider, cloud):
    cloud.bearer_token = "id_token"
    sign_in(client)
    assert client.recall()["cloud"] == "ok"
    sent = CloudLogin.from_json((client.private_dir / paths.LOGIN_FILE).read_text())
    assert sent is not None
    assert cloud.bearers == [sent.id_token]


def test_a_callback_with_a_tampered_state_is_refused_and_stores_nothing(client, provider, state_dir):
    status, started = client.control("POST", "/control/login/start", {"mode": "browser"})
    assert status == 200
    # The provider's redirect, its state changed on the way.
    redirect = httpx.get(started["url"], follow_redirects=False, timeout=10, trust_env=False)
    location = redirect.headers["Location"]
    tampered = location.replace("state=", "state=x", 1)
    answer = httpx.get(tampered, timeout=10, trust_env=False)
    assert answer.status_code == 400
    assert provider.grants == []  # the code was never exchanged
    nothing_stored(client, state_dir)
    assert flow_state(client, started["flow"])["state"] == "pending"
    # No state at all, or a made-up one: the same.
    for query in ("code=x", "code=x&state=", "state=made-up&code=x"):
        assert httpx.get(f"{client.service.url}/callback?{query}", timeout=10).status_code == 400
    # The untouched redirect still signs in, once: a second use of its state is refused, with no session.
    assert httpx.get(location, timeout=10, trust_env=False).status_code == SIGNED_IN
    again = httpx.get(location, timeout=10, trust_env=False, headers={"Accept-Language": "en"})
    assert again.status_code == 400
    assert "Sign-in not recognised" in again.text
    assert "set-cookie" not in again.headers


@pytest.mark.parametrize(
    ("misbehaviour", "why"),
    [
        ({"nonce": "another-nonce"}, "nonce"),
        ({"iss": "https://foreign.example"}, "another issuer"),
        ({"aud": "another-client"}, "aud"),
        ({"exp": 1}, "expired"),
    ],
)
def test_an_id_token_that_fails_a_check_is_refused_and_stores_nothing(
    client, provider, state_dir, misbehaviour, why
):
    provider.id_token_overrides = misbehaviour
    started, page = sign_in(client)
    assert page.status_code == 400
    answer = flow_state(client, started["flow"])
    assert answer["state"] == "failed"
    assert why in answer["error"]
    nothing_stored(client, state_dir)


def test_an_id_token_under_a_key_the_provider_does_not_publish_is_refused(client, provider, state_dir):
    provider.sign_with_unpublished_key = True
    started, page = sign_in(client)
    assert page.status_code == 400
    assert "signature" in flow_state(client, started["flow"])["error"]
    nothing_stored(client, state_dir)


def test_a_discovery_document_naming_another_issuer_is_refused(client, provider, state_dir):
    provider.discovery_issuer = "https://foreign.example"
    status, answer = client.control("POST", "/control/login/start", {"mode": "browser"})
    assert (status, answer["error"]["code"]) == (502, "issuer_mismatch")
    assert provider.authorize_requests == []
    nothing_stored(client, state_dir)


def test_a_refused_sign_in_fails_the_flow(client, provider, state_dir):
    provider.deny = True
    started, page = sign_in(client)
    assert page.status_code == 400
    answer = flow_state(client, started["flow"])
    assert (answer["state"], "access_denied" in answer["error"]) == ("failed", True)
    nothing_stored(client, state_dir)


def test_a_refused_sign_in_says_so_in_the_pages_style_and_language_and_opens_no_session(
    client, provider, state_dir, service
):
    provider.deny = True
    headers = page_session(service)
    started = httpx.post(f"{service.url}/api/login", headers=headers, json={"lang": "zh"}, timeout=10)
    page = browse(started.json()["url"], language="en-US")  # the page's language wins over the browser's

    assert page.status_code == 400
    assert "Set-Cookie" not in page.headers
    assert '<link rel="stylesheet" href="/app.css">' in page.text
    assert "<h1>登录失败</h1>" in page.text
    assert "access_denied" in page.text
    assert '<a href="/?lang=zh">返回 Memmy</a>' in page.text
    # The command to sign in again is named as the person can run it, as code
    login = service.state.commands()["login"]
    assert f"<code>{html.escape(login)}</code>" in page.text
    assert page.headers["Content-Security-Policy"].startswith("default-src 'self'")


def test_a_sign_in_finished_too_late_says_it_expired(client, provider, state_dir):
    started = client.control("POST", "/control/login/start", {"mode": "browser"})[1]
    flow = client.service.state.flows.get(started["flow"])
    assert flow is not None
    flow.expires_at = time.monotonic() - 1  # ten minutes went by at the provider

    page = browse(started["url"])

    assert page.status_code == 400
    assert "<h1>Sign-in expired</h1>" in page.text
    assert "not finished within 10 minutes" in page.text
    assert provider.grants == []  # its code was never exchanged
    nothing_stored(client, state_dir)


def test_a_sign_in_from_the_page_lands_on_the_page_in_its_language(client, provider, service):
    headers = page_session(service)
    started = httpx.post(f"{service.url}/api/login", headers=headers, json={"lang": "en"}, timeout=10)

    page = browse(started.json()["url"])

    assert (page.status_code, page.headers["Location"]) == (SIGNED_IN, "/?lang=en")
    # Its own new session: the callback's browser may not send the old one (SameSite=Strict, another site)
    fresh = page.headers["Set-Cookie"].split(";")[0]
    assert fresh != headers["Cookie"]
    for cookie in (fresh, headers["Cookie"]):
        answer = httpx.get(f"{service.url}/api/session", headers={"Cookie": cookie}, timeout=10).json()
        assert answer["login"] == "logged_in"


def test_an_unreachable_cloud_or_unknown_mode_cannot_start_a_flow(client, state_dir):
    assert client.control("POST", "/control/login/start", {"mode": "carrier-pigeon"})[0] == 422
    assert client.control("GET", "/control/login/flow?id=nope")[0] == 404
    with start(state_dir.parent / "other" / "desktop", "http://127.0.0.1:9", login_timeout=1.0) as running:
        status, answer = Client(running).control("POST", "/control/login/start", {"mode": "browser"})
    assert (status, answer["error"]["code"]) == (502, "login_unavailable")


# ------------------------------------------------------------------------------------- device flow


def test_the_device_flow_polls_until_the_person_signs_in(client, provider):
    status, started = client.control("POST", "/control/login/start", {"mode": "device"})
    assert status == 200
    assert set(started) == {"flow", "verification_uri", "verification_uri_complete", "user_code", "expires_in"}
    assert started["verification_uri"] == f"{provider.issuer}/device"
    time.sleep(0.2)
    assert flow_state(client, started["flow"])["state"] == "pending"
    provider.approve_device(started["user_code"])
    deadline = time.monotonic() + 10
    while flow_state(client, started["flow"])["state"] == "pending" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert flow_state(client, started["flow"])["state"] == "done"
    assert client.recall()["cloud"] == "ok"


def test_a_denied_device_sign_in_fails_the_flow(client, provider, state_dir):
    _, started = client.control("POST", "/control/login/start", {"mode": "device"})
    provider.approve_device(started["user_code"], deny=True)
    deadline = time.monotonic() + 10
    while flow_state(client, started["flow"])["state"] == "pending" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert flow_state(client, started["flow"])["state"] == "failed"
    nothing_stored(client, state_dir)


# ----------------------------------------------------------------------------------------- refresh


def saved_login(client: Client) -> CloudLogin:
    login = CloudLogin.from_json((client.private_dir / paths.LOGIN_FILE).read_text())
    assert login is not None
    return login


def test_a_token_about_to_expire_is_refreshed_once_and_the_rotation_kept(client, provider, cloud, clock):
    sign_in(client)
    first = saved_login(client)
    clock.advance(3600 - 30)  # within a minute of expiry
    provider.refresh_delay = 0.3  # every recall arrives while the refresh is under way

    with ThreadPoolExecutor(20) as pool:
        answers = list(pool.map(lambda _: client.recall()["cloud"], range(20)))

    assert answers == ["ok"] * 20
    assert provider.refresh_calls == 1
    second = saved_login(client)
    assert second.refresh_token != first.refresh_token
    assert provider.live_refresh_tokens() == [second.refresh_token]  # the old one was rotated out
    assert set(cloud.bearers) == {second.access_token}
    assert cloud.expired_received == 0


def test_the_cloud_never_gets_an_expired_token_after_a_sleep(client, provider, cloud, clock):
    sign_in(client)
    clock.advance(2 * 3600)  # the laptop slept past the expiry
    assert client.recall()["cloud"] == "ok"
    assert provider.refresh_calls == 1
    assert cloud.expired_received == 0


def test_invalid_grant_ends_the_sign_in(client, provider, cloud, clock):
    sign_in(client)
    provider.refresh_error = "invalid_grant"
    clock.advance(3600)
    assert client.recall() == {"context": "", "cloud": "logged_out", "excerpts": 0}
    status = client.control("GET", "/control/status")[1]
    assert status["login"]["state"] == "logged_out"
    assert "the sign-in has ended" in status["login"]["note"]
    assert f"`{client.service.state.commands()['login']}`" in status["login"]["note"]  # as it can be run
    assert not (client.private_dir / paths.LOGIN_FILE).exists()
    assert cloud.bearers == []


def test_a_provider_down_while_refreshing_keeps_the_login(client, provider, cloud, clock):
    sign_in(client)
    kept = saved_login(client)
    provider.hang_up = True
    clock.advance(3600)
    assert client.recall() == {"context": "", "cloud": "unreachable", "excerpts": 0}
    status = client.control("GET", "/control/status")[1]
    assert status["login"]["state"] == "logged_in"
    assert status["last_recall"]["outcome"] == "unreachable"
    assert saved_login(client) == kept
    assert cloud.bearers == []


def test_logout_revokes_the_refresh_token(client, provider):
    sign_in(client)
    refresh = saved_login(client).refresh_token
    assert client.control("POST", "/control/logout")[1]["login"] == {"state": "logged_out"}
    assert provider.revoked == [refresh]
    assert provider.live_refresh_tokens() == []


# -------------------------------------------------------------------------------- the page's routes


def test_the_page_signs_in_and_out_and_sees_who(client, provider, service):
    headers = page_session(service)
    assert httpx.post(f"{service.url}/api/login", headers={"Cookie": headers["Cookie"]}, timeout=10).status_code == 403
    started = httpx.post(f"{service.url}/api/login", headers=headers, timeout=10)
    assert started.status_code == 200
    assert set(started.json()) == {"url"}
    assert browse(started.json()["url"]).status_code == SIGNED_IN

    session = httpx.get(f"{service.url}/api/session", headers=headers, timeout=10).json()
    assert session["login"] == "logged_in"
    assert session["user"] == {"user_id": "alice", "name": "Alice", "email": "alice@example.com"}

    assert httpx.post(f"{service.url}/api/logout", headers=headers, timeout=10).json() == {}
    assert provider.live_refresh_tokens() == []
    assert httpx.get(f"{service.url}/api/session", headers=headers, timeout=10).json()["login"] == "logged_out"


def test_with_a_keychain_the_commands_read_the_control_token_from_it(state_dir, cloud):
    from memmy_kb_client.home.control import call

    backend = MemoryKeyring()
    with start(state_dir, cloud.url, keyring_backend=backend) as running:
        assert json.loads((state_dir / paths.SERVICE_FILE).read_text()) == {"port": running.port}
        assert not Path(paths.private_dir(str(state_dir)), paths.CONTROL_FILE).exists()
        status = call(str(state_dir), "GET", "/control/status", keyring_backend=backend)
        assert status["service"] == running.url
        assert "warning" not in status


# ---------------------------------------------------------------------------------- the command


@pytest.fixture
def home(state_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(paths.HOME_ENV, str(state_dir.parent))
    monkeypatch.setattr(commands, "FLOW_POLL_SECONDS", 0.05)
    return state_dir.parent


def test_the_command_opens_the_browser_and_waits_for_the_sign_in(service, home, monkeypatch, capsys):
    opened: list[str] = []

    def browser(url: str) -> bool:
        opened.append(url)
        threading.Timer(0.2, browse, args=(url,)).start()
        return True

    monkeypatch.setattr("webbrowser.open", browser)
    assert cli.main(["desktop", "login"]) == 0
    out = capsys.readouterr().out
    assert len(opened) == 1
    assert opened[0] not in out  # opened, so not printed
    assert "logged in as alice (Alice)" in out
    assert "any process running as this user can read" in out  # no keychain here: said plainly


def test_the_command_without_a_browser_prints_the_link(service, home, monkeypatch, capsys):
    monkeypatch.setattr("webbrowser.open", lambda url: pytest.fail("no browser was to be opened"))

    def follow_printed_link() -> None:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            for line in capsys.readouterr().out.splitlines():
                if line.startswith("http://"):
                    browse(line)
                    return
            time.sleep(0.05)

    follower = threading.Thread(target=follow_printed_link)
    follower.start()
    assert cli.main(["desktop", "login", "--no-browser"]) == 0
    follower.join()


def test_the_command_with_a_device_prints_the_code_and_waits(service, provider, home, capsys):
    def approve_when_asked() -> None:
        deadline = time.monotonic() + 10
        while not provider.pending_user_codes() and time.monotonic() < deadline:
            time.sleep(0.05)
        for code in provider.pending_user_codes():
            provider.approve_device(code)

    approver = threading.Thread(target=approve_when_asked)
    approver.start()
    assert cli.main(["desktop", "login", "--device"]) == 0
    approver.join()
    out = capsys.readouterr().out
    assert f"open {provider.issuer}/device and enter the code " in out
    assert "logged in as alice" in out


def test_the_command_takes_a_token_on_stdin_or_as_a_flag(service, home, monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.StringIO("a.piped.token\n"))
    assert cli.main(["desktop", "login", "--token", "-"]) == 0
    assert service.state.current_login() == CloudLogin(service.state.cloud.base_url, "a.piped.token")
    assert cli.main(["desktop", "login", "--token", "a.flag.token"]) == 0
    assert "a.flag.token" not in capsys.readouterr().out
    assert service.state.current_login() == CloudLogin(service.state.cloud.base_url, "a.flag.token")


def test_a_failed_sign_in_makes_the_command_fail(service, provider, home, monkeypatch, capsys):
    provider.id_token_overrides = {"nonce": "another-nonce"}
    monkeypatch.setattr("webbrowser.open", lambda url: threading.Timer(0.1, browse, args=(url,)).start() or True)
    assert cli.main(["desktop", "login"]) == 1
    captured = capsys.readouterr()
    assert "failed: the ID token was refused: not the nonce of this sign-in" in captured.err
    assert "logged out" in captured.out


# --------------------------------------------------------------------------------- what is imported


def test_the_services_start_and_a_recall_load_no_oauth_or_jose_library(tmp_path, cloud):
    script = f"""
import json, sys
from memmy_kb_client.desktop.server import DesktopConfig, DesktopService
service = DesktopService(DesktopConfig(state_dir={str(tmp_path / "desktop")!r}, cloud_url={cloud.url!r}, port=0)).start()
service.state.recall("q", "codex")
service.stop()
print(json.dumps(sorted(sys.modules)))
"""
    done = subprocess.run(  # noqa: S603 - our own interpreter
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    loaded = {name.split(".")[0] for name in json.loads(done.stdout)}
    assert not loaded & {"authlib", "joserfc", "httpx", "cryptography"}


def test_no_token_or_code_is_logged(client, provider, clock, caplog):
    caplog.set_level("DEBUG")
    sign_in(client)
    first = saved_login(client)
    clock.advance(3600)
    assert client.recall()["cloud"] == "ok"
    second = saved_login(client)
    client.control("POST", "/control/logout")
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "/callback" in logged  # the requests were logged, without their query
    (asked,) = provider.authorize_requests
    for secret in (
        first.access_token,
        first.refresh_token,
        first.id_token,
        second.access_token,
        second.refresh_token,
        asked["state"],
        asked["nonce"],
        client.control_token,
        client.hook_token,
    ):
        assert secret not in logged
    assert "code=" not in logged


def test_the_page_is_told_when_the_login_cannot_be_renewed(client, provider, service, clock):
    sign_in(client)
    headers = page_session(service)
    provider.hang_up = True
    clock.advance(3600)
    answer = httpx.get(f"{service.url}/api/knowledge-bases", headers=headers, timeout=10)
    assert (answer.status_code, answer.json()["error"]["code"]) == (503, "login_refresh_unreachable")
    provider.hang_up = False
    service.state._retry_refresh_at = 0.0  # the next try, without waiting the 5 s
    assert client.recall()["cloud"] == "ok"
    assert provider.refresh_calls == 1  # the dropped request was never taken
