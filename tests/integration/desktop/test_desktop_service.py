"""The local service in-process, in front of a fake cloud: who may call what (hook token, control token,
neither), Host and Origin checks, login/logout/status/rotate, what a 401, a dead cloud or a 503 leave
behind, the state files, and the keychain path (an in-memory keyring backend)."""

from __future__ import annotations

import http.client
import json
import os
import socket
import stat
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from memmy_kb.domain.recall.context_block import Excerpt
from memmy_kb_client.agents import hook
from memmy_kb_client.desktop.server import DesktopService, DesktopStartError
from memmy_kb_client.home import paths
from memmy_kb_client.recall_contract import CONTEXT_LIMITS
from tests.support.clock import FakeClock
from tests.support.desktop_service import (
    BLOCK,
    CLOUD_TOKEN,
    QUERY,
    Client,
    FakeCloud,
    jwt,
    recall_reply,
    serving,
    start,
)
from tests.support.keychain import MemoryKeyring


@pytest.fixture
def cloud() -> Iterator[FakeCloud]:
    yield from serving(FakeCloud())


@pytest.fixture(autouse=True)
def no_keychain(monkeypatch: pytest.MonkeyPatch) -> None:
    # keyring's own switch: its fail backend, as on this headless machine (and never a developer's keychain).
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    return tmp_path / "home" / "desktop"


@pytest.fixture
def service(state_dir: Path, cloud: FakeCloud) -> Iterator[DesktopService]:
    running = start(state_dir, cloud.url)
    yield running
    running.stop()


@pytest.fixture
def client(service: DesktopService) -> Client:
    return Client(service)


# ---------------------------------------------------------------------------------------------- recall


def test_recall_forwards_the_query_with_the_cloud_login_and_returns_the_block(client, cloud):
    client.login()
    status, body, response = client.request(
        "POST", "/hook/recall", client.hook_token, {"query": f"  {QUERY}  ", "agent": "claude-code"}
    )
    assert (status, body) == (200, {"context": BLOCK, "cloud": "ok", "excerpts": 1})
    assert response.getheader("Server-Timing", "").startswith("cloud;dur=")
    assert response.getheader("Access-Control-Allow-Origin") is None
    (request,) = cloud.requests
    limit = CONTEXT_LIMITS["claude-code"]
    assert request == {
        "path": "/recall",
        "auth": f"Bearer {CLOUD_TOKEN}",
        "body": {"query": QUERY, "context_limit": limit},
    }


def test_logged_out_recall_is_empty_and_asks_no_cloud(client, cloud):
    assert client.recall() == {"context": "", "cloud": "logged_out", "excerpts": 0}
    assert cloud.requests == []


@pytest.mark.parametrize("prompt", ["/clear", "  OK! ", "继续", "好的。"])
def test_a_prompt_with_nothing_to_search_asks_no_cloud_and_is_counted(client, cloud, prompt):
    client.login()
    status, body, _ = client.request("POST", "/hook/recall", client.hook_token, {"query": prompt})
    assert (status, body) == (200, {"context": "", "cloud": "skipped", "excerpts": 0})
    assert cloud.requests == []
    status_code, described = client.control("GET", "/control/status")
    assert status_code == 200
    assert described["skipped_prompts"] == 1
    assert described["last_recall"] is None  # the status keeps the last recall that reached the cloud


def test_the_hook_records_a_skipped_prompt_as_skipped(client, state_dir):
    client.login()
    env = {paths.HOME_ENV: str(state_dir.parent)}
    assert hook.recall_outcome("ok", "codex", env, time.monotonic() + 5) == ("", "skipped", 0, {})


def test_with_the_skip_off_every_prompt_reaches_the_cloud(state_dir, cloud):
    running = start(state_dir, cloud.url, skip_trivial_prompts=False)
    try:
        client = Client(running)
        client.login()
        status, body, _ = client.request("POST", "/hook/recall", client.hook_token, {"query": "继续"})
        assert (status, body["cloud"]) == (200, "ok")
        assert [r["body"] for r in cloud.requests] == [{"query": "继续"}]
    finally:
        running.stop()


def test_each_agent_gets_the_block_cut_to_its_limit(client, cloud):
    cloud.hits = [Excerpt(f"制度{i}", "报销规则说明" * 150, None) for i in range(10)]
    client.login()
    codex = client.recall("codex")
    assert 0 < len(codex["context"].encode("utf-8")) <= CONTEXT_LIMITS["codex"]["max"]
    assert 0 < codex["excerpts"] < len(recall_reply(cloud.hits)["items"])
    assert client.recall("gemini")["context"] == recall_reply(cloud.hits)["context"]


def test_the_in_process_hook_gets_the_block_through_the_service(client, state_dir):
    import io

    client.login()
    out = io.BytesIO()
    event = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": QUERY}).encode()
    hook.run("codex", io.BytesIO(event), out, {paths.HOME_ENV: str(state_dir.parent)})
    assert out.getvalue() == BLOCK.encode() + b"\n"


def test_parallel_recalls_all_get_the_block(client):
    client.login()
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda _: client.recall()["context"], range(24)))
    assert results == [BLOCK] * 24


# --------------------------------------------------------------------------------------- who may call


CONTROL_ROUTES = [
    ("GET", "/control/status"),
    ("POST", "/control/login"),
    ("POST", "/control/logout"),
    ("POST", "/control/rotate-hook-token"),
]
OTHER_PATHS = [
    ("GET", "/"),
    ("GET", "/hook/recall"),
    ("POST", "/nope"),
    ("DELETE", "/hook/recall"),
    ("GET", "/page/"),
]


@pytest.mark.parametrize(("method", "path"), CONTROL_ROUTES + OTHER_PATHS)
def test_the_hook_token_is_refused_on_every_other_route(client, method, path):
    status, body, _ = client.request(method, path, client.hook_token, {"token": CLOUD_TOKEN})
    assert status == 403
    assert body["error"]["code"] == "hook_token_not_allowed"


def test_the_hook_token_changes_nothing_when_refused(client):
    client.login()
    client.request("POST", "/control/logout", client.hook_token)
    client.request("POST", "/control/login", client.hook_token, {"token": "attacker"})
    assert client.recall()["cloud"] == "ok"


def test_the_control_token_may_not_ask_for_recall(client):
    status, body, _ = client.request("POST", "/hook/recall", client.control_token, {"query": QUERY})
    assert (status, body["error"]["code"]) == (403, "forbidden")


@pytest.mark.parametrize(("method", "path"), [*CONTROL_ROUTES, ("POST", "/hook/recall")])
@pytest.mark.parametrize("token", [None, "wrong", "mkh_" + "x" * 43])
def test_no_or_a_wrong_token_is_401(client, method, path, token):
    assert client.request(method, path, token, {"query": QUERY})[0] == 401


def test_unknown_routes_are_404_and_known_paths_with_another_method_405(client):
    assert client.request("GET", "/nope", client.control_token)[0] == 404
    assert client.request("GET", "/hook/recall")[0] == 405


@pytest.mark.parametrize(
    "host",
    ["evil.example:{port}", "evil.example", "127.0.0.1", "127.0.0.1:1", "localhost", "[::1]:{port}", ""],
)
def test_a_foreign_host_is_refused_before_anything_else(client, host):
    client.login()
    status, body, _ = client.request(
        "POST",
        "/hook/recall",
        client.hook_token,
        {"query": QUERY},
        headers={"Host": host.format(port=client.service.port)},
    )
    assert (status, body["error"]["code"]) == (403, "forbidden_host")


def test_the_own_names_are_hosts(client):
    client.login()
    for host in (f"localhost:{client.service.port}", f"LOCALHOST:{client.service.port}"):
        assert client.recall(headers={"Host": host})["cloud"] == "ok"


def test_a_request_without_host_is_refused(client):
    with socket.create_connection(("127.0.0.1", client.service.port), timeout=5) as sock:
        sock.sendall(
            f"GET /control/status HTTP/1.0\r\nAuthorization: Bearer {client.control_token}\r\n\r\n".encode()
        )
        reply = sock.recv(65536)
    assert reply.startswith(b"HTTP/1.1 403")


@pytest.mark.parametrize(
    "origin", ["https://evil.example", "null", "http://127.0.0.1:1", "http://localhost.evil.example"]
)
def test_a_state_changing_request_from_a_foreign_origin_is_refused(client, origin):
    status, body, _ = client.request(
        "POST", "/control/logout", client.control_token, headers={"Origin": origin}
    )
    assert (status, body["error"]["code"]) == (403, "forbidden_origin")
    status, body, _ = client.request(
        "POST", "/hook/recall", client.hook_token, {"query": QUERY}, headers={"Origin": origin}
    )
    assert status == 403


def test_the_own_origin_may_change_state(client):
    origin = f"http://127.0.0.1:{client.service.port}"
    assert (
        client.request("POST", "/control/logout", client.control_token, headers={"Origin": origin})[0] == 200
    )


def test_no_preflight_is_answered(client):
    status, _, response = client.request(
        "OPTIONS",
        "/hook/recall",
        headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"},
    )
    assert status == 403
    assert response.getheader("Access-Control-Allow-Origin") is None


@pytest.mark.parametrize(
    ("body", "status"),
    [
        (b"{not json", 422),
        (b"[]", 422),
        (json.dumps({"query": "  "}).encode(), 422),
        (b"x" * (64 * 1024 + 1), 413),
    ],
)
def test_bad_bodies(client, body, status):
    assert client.request("POST", "/hook/recall", client.hook_token, body)[0] == status


def test_a_chunked_body_is_refused(client):
    connection = http.client.HTTPConnection("127.0.0.1", client.service.port, timeout=5)
    connection.request(
        "POST",
        "/hook/recall",
        body=iter([b'{"query": "q"}']),
        headers={"Authorization": f"Bearer {client.hook_token}", "Transfer-Encoding": "chunked"},
    )
    assert connection.getresponse().status == 413
    connection.close()


# ------------------------------------------------------------------------------ login, status, rotate


def test_login_status_logout(client, state_dir):
    status = client.login()
    assert status["login"]["state"] == "logged_in"
    assert status["login"]["user"] == "alice"
    assert "expires_at" in status["login"]
    assert status["credential_store"].startswith("file ")
    assert "any process running as this user can read" in status["warning"]
    assert not (state_dir / paths.LOGIN_FILE).exists()  # beside the hook token: never
    saved = client.private_dir / paths.LOGIN_FILE
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    assert stat.S_IMODE(client.private_dir.stat().st_mode) == 0o700
    assert json.loads(saved.read_text()) == {
        "cloud": client.service.state.cloud.base_url,
        "access_token": CLOUD_TOKEN,
        "bearer": "access_token",
    }
    assert CLOUD_TOKEN not in json.dumps(client.control("GET", "/control/status")[1])

    assert client.control("POST", "/control/logout")[1]["login"] == {"state": "logged_out"}
    assert not saved.exists()
    assert client.recall()["cloud"] == "logged_out"


@pytest.mark.parametrize("token", ["", "has space", "new\nline", 42, None, "é"])
def test_login_takes_only_a_token(client, token):
    assert client.control("POST", "/control/login", {"token": token})[0] == 422


def test_an_expired_token_is_refused_at_login(client):
    status, body = client.control(
        "POST", "/control/login", {"token": jwt(sub="alice", exp=int(time.time()) - 5)}
    )
    assert (status, body["error"]["code"]) == (422, "login_expired")


def test_a_token_the_cloud_refuses_is_not_kept_and_the_refusal_says_how_to_get_one(client, cloud):
    refused = jwt(sub="alice", exp=int(time.time()) + 3600)
    cloud.refused_logins.add(refused)

    status, body = client.control("POST", "/control/login", {"token": refused})

    assert (status, body["error"]["code"]) == (422, "login_rejected")
    assert "refused this token (401): nothing was kept" in body["error"]["message"]
    assert "--data-dir" in body["error"]["message"]
    assert client.control("GET", "/control/status")[1]["login"] == {"state": "logged_out"}


def test_the_local_stacks_banner_tells_a_kept_login_its_cloud_refuses(client, cloud):
    from memmy_kb_client.desktop.status_text import describe
    from memmy_local.desktop_side import try_kept_login

    kept = jwt(sub="alice", exp=int(time.time()) + 3600)
    client.login(kept)
    cloud.refused_logins.add(kept)  # the stack started again with another --data-dir: another key

    try_kept_login(client.service)

    assert "the cloud refused the login (401)" in describe(client.service)


def test_a_login_that_expires_is_not_sent(state_dir, cloud):
    clock = FakeClock()
    running = start(state_dir, cloud.url, clock=clock.now)
    try:
        client = Client(running)
        client.login(jwt(sub="alice", exp=int(clock.now()) + 60))
        assert client.control("GET", "/control/status")[1]["login"]["state"] == "logged_in"
        clock.advance(60)
        assert client.recall()["cloud"] == "expired"
        assert cloud.requests == []
        assert client.control("GET", "/control/status")[1]["login"]["state"] == "expired"
    finally:
        running.stop()


def test_a_401_from_the_cloud_is_an_empty_answer_and_a_clear_status(client, cloud):
    client.login(jwt(sub="alice", exp=int(time.time()) + 3600, jti="revoked"))
    assert client.recall() == {"context": "", "cloud": "unauthorized", "excerpts": 0}
    status = client.control("GET", "/control/status")[1]
    assert status["login"]["state"] == "rejected"
    assert status["last_recall"]["outcome"] == "unauthorized"
    assert status["last_recall"]["status"] == 401
    client.login()
    assert client.recall()["cloud"] == "ok"
    assert client.control("GET", "/control/status")[1]["login"]["state"] == "logged_in"


def test_a_cloud_error_is_an_empty_answer(client, cloud):
    cloud.status, cloud.body = 503, {"error": {"code": "recall_unavailable", "message": "later"}}
    client.login()
    assert client.recall() == {"context": "", "cloud": "cloud_error", "excerpts": 0}
    last = client.control("GET", "/control/status")[1]["last_recall"]
    assert (last["status"], last["detail"]) == (503, "recall_unavailable")


def test_an_unreachable_cloud_is_an_empty_answer_and_a_clear_status(state_dir):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead = probe.getsockname()[1]
    with start(state_dir, f"http://127.0.0.1:{dead}", cloud_timeout=1.0) as running:
        client = Client(running)
        client.login()
        started = time.monotonic()
        assert client.recall() == {"context": "", "cloud": "unreachable", "excerpts": 0}
        assert time.monotonic() - started < 2
        assert client.control("GET", "/control/status")[1]["last_recall"]["outcome"] == "unreachable"


def test_a_kept_alive_connection_the_cloud_dropped_is_retried_once(client, cloud):
    client.login()
    cloud.drop_connections = True
    assert client.recall()["cloud"] == "ok"
    time.sleep(0.1)  # the cloud has closed the connection the service keeps
    assert client.recall()["cloud"] == "ok"
    assert len(cloud.requests) == 2


def test_rotation_refuses_the_old_hook_token(client):
    client.login()
    old = client.hook_token
    status, body = client.control("POST", "/control/rotate-hook-token")
    assert status == 200
    assert "mkh_" not in json.dumps(body)  # the token stays in its file
    assert client.hook_token != old
    assert client.request("POST", "/hook/recall", old, {"query": QUERY})[0] == 401
    assert client.recall()["cloud"] == "ok"


# ------------------------------------------------------------------------------------------ state


def test_state_files_are_private_and_stop_cleans_up(state_dir, cloud):
    running = start(state_dir, cloud.url)
    private = Client(running).private_dir
    try:
        assert stat.S_IMODE(state_dir.stat().st_mode) == 0o700
        assert stat.S_IMODE(private.stat().st_mode) == 0o700
        for name in (paths.HOOK_TOKEN_FILE, paths.SERVICE_FILE):
            assert stat.S_IMODE((state_dir / name).stat().st_mode) == 0o600, name
        assert stat.S_IMODE((private / paths.CONTROL_FILE).stat().st_mode) == 0o600
        assert not (state_dir / paths.CONTROL_TOKEN_FILE).exists()
        # The hooks' directory says where to knock, and nothing else.
        assert json.loads((state_dir / paths.SERVICE_FILE).read_text()) == {"port": running.port}
        hook_token, control_token = Client(running).hook_token, Client(running).control_token
        assert hook_token.startswith("mkh_")
        assert control_token.startswith("mkc_")
        # The commands read where the service is beside the control token.
        assert json.loads((private / paths.CONTROL_FILE).read_text()) == {
            "token": control_token,
            "port": running.port,
            "pid": os.getpid(),
            "url": running.url,
        }
    finally:
        running.stop()
    assert not (state_dir / paths.SERVICE_FILE).exists()
    assert not (private / paths.CONTROL_FILE).exists()
    # The hook token and the login outlive a restart; the control token does not.
    with start(state_dir, cloud.url) as again:
        assert Client(again).hook_token == hook_token
        assert Client(again).control_token != control_token


def test_the_login_survives_a_restart_but_only_for_its_cloud(state_dir, cloud):
    with start(state_dir, cloud.url) as running:
        Client(running).login()
    with start(state_dir, cloud.url) as running:
        assert Client(running).recall()["cloud"] == "ok"
    with start(state_dir, "http://127.0.0.1:9") as running:
        status = Client(running).control("GET", "/control/status")[1]
        assert status["login"]["state"] == "logged_out"
        assert "log in again" in status["login"]["note"]
        assert Client(running).recall()["cloud"] == "logged_out"


def test_a_second_service_on_the_same_state_dir_refuses_to_start(service, state_dir, cloud):
    with pytest.raises(DesktopStartError, match="already runs"):
        start(state_dir, cloud.url)


def test_a_bad_cloud_url_is_refused(state_dir):
    with pytest.raises(ValueError, match="http"):
        start(state_dir, "ftp://example")


# ------------------------------------------------------------------------------------- the keychain


def test_with_a_keychain_the_login_never_touches_the_disk(state_dir, cloud):
    backend = MemoryKeyring()
    with start(state_dir, cloud.url, keyring_backend=backend) as running:
        client = Client(running)
        status = client.login()
        assert status["credential_store"].startswith("OS keychain (")
        assert "warning" not in status
        assert not (state_dir / paths.LOGIN_FILE).exists()
        entries = {username.split(":", 1)[0]: value for (_, username), value in backend.entries.items()}
        assert CLOUD_TOKEN in entries["cloud-login"]
        assert json.loads(entries["control"])["token"] == client.control_token
        assert json.loads(entries["control"])["port"] == running.port
        # Nothing secret is a plain file: no login, no control token, in either directory.
        on_disk = [p for d in (state_dir, client.private_dir) if d.exists() for p in d.iterdir() if p.is_file()]
        for secret in (CLOUD_TOKEN, client.control_token):
            assert not any(secret in p.read_text(errors="replace") for p in on_disk)
        assert client.recall()["cloud"] == "ok"
    with start(state_dir, cloud.url, keyring_backend=backend) as running:
        client = Client(running)
        assert client.recall()["cloud"] == "ok"
        client.control("POST", "/control/logout")
    assert backend.entries == {}  # logged out, and the stopped service's control token gone


class RefusingKeyring(MemoryKeyring):
    def set_password(self, service: str, username: str, password: str) -> None:
        raise RuntimeError("locked")


def test_a_keychain_that_refuses_falls_back_to_the_file(state_dir, cloud):
    with start(state_dir, cloud.url, keyring_backend=RefusingKeyring()) as running:
        status = Client(running).login()
        assert status["credential_store"].startswith("file ")
        assert "refused" in status["login"]["note"]
        assert (Client(running).private_dir / paths.LOGIN_FILE).exists()
        assert Client(running).recall()["cloud"] == "ok"
