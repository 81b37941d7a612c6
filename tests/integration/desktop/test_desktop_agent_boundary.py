"""What an agent holding only the hook token can and cannot do to the desktop service (SECURITY.md,
"The desktop and a same-user agent", guarantee 21): the service signed in through a fake OpenID Connect
provider (tests/support/oidc_provider.py), then every route tried with the hook token.

It cannot open a page session, change the login, read the refresh token (no answer carries it; nothing
in the hooks' directory holds it) or reach any cloud route; it can ask for recall. And, said as it is:
an agent that runs unsandboxed as this user can read the private directory's files too."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from memmy_kb_client.desktop import page
from memmy_kb_client.desktop.server import DesktopService
from memmy_kb_client.home import paths
from memmy_kb_client.home.credentials import CloudLogin
from tests.support.desktop_service import Client, serving, start
from tests.support.keychain import MemoryKeyring
from tests.support.oidc_provider import BLOCK, FakeLoginCloud, FakeProvider

# What the hooks' directory may hold: nothing a cloud or the control routes would take.
HOOK_DIRECTORY = {paths.HOOK_TOKEN_FILE, paths.SERVICE_FILE, paths.LOCK_FILE}


@pytest.fixture(autouse=True)
def no_keychain(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")


@pytest.fixture
def provider() -> Iterator[FakeProvider]:
    yield from serving(FakeProvider())


@pytest.fixture
def cloud(provider: FakeProvider) -> Iterator[FakeLoginCloud]:
    yield from serving(FakeLoginCloud(provider))


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    return tmp_path / "home" / "desktop"


def signed_in(state_dir: Path, cloud: FakeLoginCloud, **options: Any) -> DesktopService:
    running = start(state_dir, cloud.url, **options)
    client = Client(running)
    _, started = client.control("POST", "/control/login/start", {"mode": "browser"})
    assert httpx.get(started["url"], follow_redirects=True, timeout=10, trust_env=False).status_code == 200
    assert client.control("GET", "/control/status")[1]["login"]["state"] == "logged_in"
    return running


@pytest.fixture
def service(state_dir: Path, cloud: FakeLoginCloud) -> Iterator[DesktopService]:
    running = signed_in(state_dir, cloud)
    yield running
    running.stop()


@pytest.fixture
def agent(service: DesktopService) -> Client:
    """The agent's side: the hook token, read from the file every hook reads."""
    return Client(service)


def held(service: DesktopService) -> CloudLogin:
    login = service.state.current_login()
    assert login is not None
    return login


def as_agent(agent: Client, method: str, path: str, body: Any = None) -> tuple[int, dict[str, Any], bytes]:
    status, answer, _ = agent.request(method, path, agent.hook_token, body)
    return status, answer, json.dumps(answer).encode()


# ---------------------------------------------------------------------------- cannot: a page session


def test_the_hook_token_cannot_open_a_page_session(agent, service):
    status, answer, _ = as_agent(agent, "POST", "/control/page-code")
    assert (status, answer["error"]["code"]) == (403, "hook_token_not_allowed")
    for target in ("/open", "/open?code=", "/open?code=guessed-code"):
        opened = httpx.get(f"{service.url}{target}", follow_redirects=False, timeout=10)
        assert opened.status_code == 403
        assert "Set-Cookie" not in opened.headers
    assert as_agent(agent, "GET", "/api/session")[0] == 403


# ------------------------------------------------------------------------------ cannot: the login


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/control/login", {"token": "the.agents.token"}),
        ("POST", "/control/login/start", {"mode": "browser"}),
        ("POST", "/control/login/start", {"mode": "device"}),
        ("GET", "/control/login/flow?id=x", None),
        ("POST", "/control/logout", None),
        ("POST", "/api/login", None),
        ("POST", "/api/logout", None),
    ],
)
def test_the_hook_token_cannot_change_the_login(agent, service, provider, method, path, body):
    before = held(service)
    status, answer, _ = as_agent(agent, method, path, body)
    assert (status, answer["error"]["code"]) == (403, "hook_token_not_allowed")
    assert held(service) == before
    assert len(provider.authorize_requests) == 1  # the owner's sign-in only: no flow was started
    assert provider.revoked == []


def test_a_callback_without_a_pending_flows_state_changes_nothing(agent, service):
    before = held(service)
    for query in ("code=x&state=guessed", "error=access_denied&state=guessed", "code=x"):
        assert httpx.get(f"{service.url}/callback?{query}", timeout=10).status_code == 400
    assert held(service) == before


# -------------------------------------------------------------------------- cannot: the refresh token


def test_no_route_answers_the_agent_with_a_token(agent, service):
    login = held(service)
    secrets = [login.refresh_token, login.access_token, login.id_token, agent.control_token]
    answers = [as_agent(agent, "POST", "/hook/recall", {"query": "差旅"})[2]]
    for method, path in [*[(m, p) for m, p in service_routes()], ("GET", "/api/knowledge-bases")]:
        answers.append(as_agent(agent, method, path, {})[2])
    assert all(secret and secret.encode() not in answer for secret in secrets for answer in answers)


def service_routes() -> list[tuple[str, str]]:
    from memmy_kb_client.desktop.handler import ROUTES

    return sorted(ROUTES)


def test_nothing_in_the_hooks_directory_holds_a_secret(agent, service, state_dir):
    login = held(service)
    assert {path.name for path in state_dir.iterdir()} <= HOOK_DIRECTORY
    for path in state_dir.iterdir():
        text = path.read_text(errors="replace")
        for secret in (login.refresh_token, login.access_token, login.id_token, agent.control_token):
            assert secret not in text, path.name


def test_with_a_keychain_no_secret_is_a_file_anywhere(state_dir, cloud):
    backend = MemoryKeyring()
    running = signed_in(state_dir, cloud, keyring_backend=backend)
    try:
        login = held(running)
        files = [p for p in state_dir.parent.rglob("*") if p.is_file()]
        for secret in (login.refresh_token, login.access_token, agent_control(running)):
            assert not any(secret in p.read_text(errors="replace") for p in files)
        assert {username.split(":", 1)[0] for _, username in backend.entries} == {"cloud-login", "control"}
    finally:
        running.stop()


def agent_control(service: DesktopService) -> str:
    return service.state.control_token


# ------------------------------------------------------------------------------- cannot: the cloud


@pytest.mark.parametrize("prefix", ["/api", "/control/cloud"], ids=["page", "commands"])
@pytest.mark.parametrize(("method", "template"), [(m, "/" + "/".join(t)) for m, t in page.CLOUD_ROUTES])
def test_the_hook_token_reaches_no_cloud_route(agent, cloud, method, template, prefix):
    path = prefix + template.replace("{}", "kb-1")
    status, answer, _ = as_agent(agent, method, path, {})
    assert (status, answer["error"]["code"]) == (403, "hook_token_not_allowed")
    assert cloud.bearers == []


def test_the_cloud_refuses_the_hook_token(agent, cloud):
    reply = httpx.post(
        f"{cloud.url}/recall", headers={"Authorization": f"Bearer {agent.hook_token}"}, json={"query": "q"}
    )
    assert reply.status_code == 401


# ------------------------------------------------------------------------------------------- can


def test_the_hook_token_asks_for_recall(agent, cloud, service):
    assert agent.recall() == {"context": BLOCK, "cloud": "ok", "excerpts": 0}
    assert cloud.bearers == [held(service).access_token]


def test_an_unsandboxed_agent_of_this_user_can_read_the_fallback_files(agent, state_dir):
    """Said as it is: with no keychain the private directory keeps the secrets from the hooks'
    directory, not from this user. A sandbox that denies ``desktop-private/`` is what keeps an agent out."""
    private = Path(paths.private_dir(str(state_dir)))
    assert private != state_dir
    assert private.parent == state_dir.parent  # beside it, not inside: a sandbox can allow one, deny the other
    login_file = private / paths.LOGIN_FILE
    assert os.access(login_file, os.R_OK)  # the same user: readable
    assert held(agent.service).refresh_token in login_file.read_text()
