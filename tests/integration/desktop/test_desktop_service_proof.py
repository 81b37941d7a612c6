"""Whom the desktop's callers trust before a credential goes out, and what write access to each directory
gives (SECURITY.md, "The desktop and a same-user agent").

The ``memmy-kb desktop`` commands find the service beside the control token (``desktop-private/`` or the
keychain), never in ``desktop/service.json``; every caller (the commands, the hooks, ``memmy-kb mcp``)
has the listener prove that it holds its token, bound to the port, before sending that token, a pasted
cloud token or a prompt. A ``Stranger`` (tests/support/desktop_proof.py) records every byte it receives.
"""

from __future__ import annotations

import io
import json
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest

from memmy_kb_client.agents import hook
from memmy_kb_client.agents.mcp_service import LocalService, ToolRefused
from memmy_kb_client.cli import main as cli
from memmy_kb_client.desktop.server import DesktopService
from memmy_kb_client.home import paths
from memmy_kb_client.home.control import NotThisService, call
from memmy_kb_client.home.credentials import (
    CONTROL_ENTRY,
    CloudLogin,
    KeyringStore,
    ServiceRecord,
    open_store,
)
from memmy_kb_client.sdk import ClientConfig
from tests.support.desktop_proof import ProvesThenHangsUp, Stranger, proof_reply, record_control
from tests.support.desktop_service import CLOUD_TOKEN, Client, FakeCloud, serving, start
from tests.support.hook_service import FakeService
from tests.support.keychain import MemoryKeyring

PASTED = CLOUD_TOKEN  # the cloud token a person pipes into `desktop login --token -`
PROMPT = "差旅报销需要哪些发票 DELTA-PROMPT"
EVENT = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": PROMPT}, ensure_ascii=False).encode()


@pytest.fixture(autouse=True)
def no_keychain(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")


@pytest.fixture
def cloud() -> Iterator[FakeCloud]:
    yield from serving(FakeCloud())


@pytest.fixture
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    state = tmp_path / "home" / "desktop"
    monkeypatch.setenv(paths.HOME_ENV, str(state.parent))
    for name in ("MEMMY_KB_TOKEN", "MEMMY_KB_ENDPOINT"):  # the commands would go straight to the cloud
        monkeypatch.delenv(name, raising=False)
    return state


@pytest.fixture
def service(state_dir: Path, cloud: FakeCloud) -> Iterator[DesktopService]:
    running = start(state_dir, cloud.url)
    yield running
    running.stop()


def stop_without_cleaning_up(service: DesktopService) -> tuple[int, str]:
    """Stop ``service`` as a crash would: its records stay. Its port and control token."""
    state_dir = Path(service.config.state_dir)
    kept = {path: path.read_bytes() for path in (state_dir / paths.SERVICE_FILE, private_file(state_dir))}
    port, token = service.port, service.state.control_token
    service.stop()
    for path, data in kept.items():
        path.write_bytes(data)
    return port, token


def private_file(state_dir: Path) -> Path:
    return Path(paths.private_dir(str(state_dir))) / paths.CONTROL_FILE


def desktop(
    args: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, stdin: str = ""
) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = cli.main(["desktop", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def the_three_commands(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> dict[str, tuple[int, str, str]]:
    """``desktop status``, ``desktop open`` and ``desktop login --token -`` (the token on stdin)."""
    return {
        "status": desktop(["status"], capsys, monkeypatch),
        "open": desktop(["open", "--no-browser"], capsys, monkeypatch),
        "login": desktop(["login", "--token", "-"], capsys, monkeypatch, stdin=PASTED + "\n"),
    }


# --------------------------------------------------------------------------- the "Show"


def test_a_stranger_on_the_port_a_tampered_service_json_names_gets_nothing_from_the_commands(
    service, state_dir, capsys, monkeypatch
):
    stranger = Stranger()
    try:
        (state_dir / paths.SERVICE_FILE).write_text(json.dumps({"port": stranger.port}))
        ran = the_three_commands(capsys, monkeypatch)
    finally:
        stranger.close()
    assert {name: code for name, (code, _, _) in ran.items()} == {"status": 0, "open": 0, "login": 0}
    assert f"service:  {service.url}" in ran["status"][1]
    assert ran["open"][1].startswith(f"{service.url}/open?code=")
    assert service.state.current_login() is not None
    assert service.state.current_login().token == PASTED  # type: ignore[union-attr]
    assert stranger.bytes_received() == b""  # the commands never read service.json


def test_a_stranger_on_a_stopped_services_port_gets_no_secret_from_the_commands(
    service, state_dir, capsys, monkeypatch
):
    hook_token = Client(service).hook_token
    port, control_token = stop_without_cleaning_up(service)
    opened: list[str] = []
    monkeypatch.setattr("webbrowser.open", lambda url: opened.append(url) or True)
    stranger = Stranger(port)
    try:
        ran = the_three_commands(capsys, monkeypatch)
        ran["login (browser)"] = desktop(["login"], capsys, monkeypatch)
    finally:
        stranger.close()
    refusal = f"the program listening on 127.0.0.1:{port} is not this desktop service; nothing was sent"
    for name, (code, out, err) in ran.items():
        assert code == 1, name
        assert refusal in err, name
        assert "memmy-kb desktop serve" in err, name
        assert out == "", name
    assert opened == []  # `desktop login` opened none of the stranger's URLs
    received = stranger.bytes_received()
    assert received.count(b"GET /proof?for=control&nonce=") == len(ran)  # it was challenged, and only that
    for secret in (control_token, PASTED, hook_token):
        assert secret.encode() not in received
    assert b"Authorization" not in received


def test_a_stranger_on_a_stopped_services_port_gets_nothing_from_the_cloud_commands(
    service, state_dir, cloud, capsys, monkeypatch
):
    """``kb ls``, ``recall`` and ``files upload`` would send the control token and the request to the
    service: to a stranger that cannot prove itself they send nothing, and go to the cloud with the saved
    login instead, or say that no login is left."""
    port, control_token = stop_without_cleaning_up(service)
    notes = state_dir.parent / "notes.md"
    notes.write_text("# DELTA-UPLOAD\n")
    commands = [["kb", "ls"], ["recall", PROMPT], ["files", "upload", "kb_1", str(notes)]]
    stranger = Stranger(port)
    try:
        without_login = [cli.main(argv) for argv in commands]
        refused = capsys.readouterr().err
        ClientConfig(cloud.url, PASTED).save()
        assert cli.main(["recall", PROMPT]) == 0
    finally:
        stranger.close()
    assert without_login == [1, 1, 1]
    refusal = (
        f"error: not signed in: there is no saved login, and the program listening on 127.0.0.1:{port} is"
    )
    assert refused.count(refusal) == 3
    assert [request["auth"] for request in cloud.requests] == [f"Bearer {PASTED}"]  # straight to the cloud
    received = stranger.bytes_received()
    assert received.count(b"GET /proof?for=control&nonce=") == 4
    for secret in (control_token, "DELTA-PROMPT", "DELTA-UPLOAD", PASTED):
        assert secret.encode() not in received
    assert b"Authorization" not in received


def test_a_stranger_on_a_stopped_services_port_gets_no_hook_token_and_no_prompt(service, state_dir):
    hook_token = Client(service).hook_token
    port, _ = stop_without_cleaning_up(service)
    env = {paths.HOME_ENV: str(state_dir.parent)}
    stranger = Stranger(port)
    try:
        out = io.BytesIO()
        assert hook.run("claude-code", io.BytesIO(EVENT), out, env) == 0
        with pytest.raises(ToolRefused, match=f"listening on 127.0.0.1:{port} is not this desktop service"):
            anyio.run(LocalService(env).search, PROMPT, None, None)
    finally:
        stranger.close()
    assert out.getvalue() == b""  # nothing of the stranger's reached the agent
    run = json.loads(Path(paths.hook_run_file(str(state_dir), "claude-code")).read_text())
    assert run["outcome"] == "not_the_service"
    received = stranger.bytes_received()
    assert received.count(b"GET /proof?for=hook&nonce=") == 2
    assert hook_token.encode() not in received
    assert "差旅".encode() not in received
    assert b"DELTA-PROMPT" not in received


def test_a_listener_that_relays_the_challenge_to_the_real_service_is_refused(service, state_dir):
    """The proof names the port it was asked on: a relay on another port passes on a proof for the
    service's own port, which is not the one its caller knocked on."""
    relay = Stranger(relay_to=service.port)
    env = {paths.HOME_ENV: str(state_dir.parent)}
    try:
        (state_dir / paths.SERVICE_FILE).write_text(json.dumps({"port": relay.port}))
        deadline = time.monotonic() + 5
        assert hook.recall_outcome(PROMPT, "codex", env, deadline) == ("", "not_the_service", 0, {})
        record_control(str(state_dir), relay.port, service.state.control_token)
        with pytest.raises(NotThisService, match=f"127.0.0.1:{relay.port} is not this desktop service"):
            call(str(state_dir), "GET", "/control/status")
        assert cli.main(["recall", PROMPT]) == 1  # the cloud commands prove it alike
    finally:
        relay.close()
    received = relay.bytes_received()
    assert received.count(b"GET /proof?") == 3
    assert b"DELTA-PROMPT" not in received
    for secret in (service.state.control_token, service.state.hook_token):
        assert secret.encode() not in received


@pytest.mark.parametrize("caller", ["commands", "cloud commands", "hook", "mcp"])
def test_after_the_proof_nothing_goes_out_on_another_connection(state_dir, caller, capsys):
    """The proof holds for the connection it came on. A listener that proves itself and then hangs up (a
    service that stops just then) leaves its port to whoever binds it next: no caller opens a second
    connection for its token, pasted token or prompt."""
    hook_token, control_token = "mkh_the-services-hook-token", "mkc_the-services-control-token"
    listener = ProvesThenHangsUp({"hook": hook_token, "control": control_token})
    env = {paths.HOME_ENV: str(state_dir.parent)}
    state_dir.mkdir(parents=True)
    (state_dir / paths.SERVICE_FILE).write_text(json.dumps({"port": listener.port}))
    (state_dir / paths.HOOK_TOKEN_FILE).write_text(hook_token)
    record_control(str(state_dir), listener.port, control_token)
    try:
        if caller == "commands":
            with pytest.raises(NotThisService, match="it closed the connection after the proof"):
                call(str(state_dir), "POST", "/control/login", {"token": PASTED})
        elif caller == "cloud commands":
            assert cli.main(["kb", "ls"]) == 1
            assert "closed the connection after the proof" in capsys.readouterr().err
        elif caller == "hook":
            out = io.BytesIO()
            hook.run("claude-code", io.BytesIO(EVENT), out, env)
            assert out.getvalue() == b""
        else:
            with pytest.raises(ToolRefused):
                anyio.run(LocalService(env).search, PROMPT, None, None)
    finally:
        listener.close()
    received = listener.bytes_received()
    for secret in (hook_token, control_token, PASTED, "DELTA-PROMPT"):
        assert secret.encode() not in received, caller
    assert listener.connections == 1, caller


# ------------------------------------------------------- what write access to each directory gives


def test_a_writer_of_the_hooks_directory_can_point_the_hooks_at_itself(service, state_dir):
    """Said plainly: ``desktop/`` is where the hooks learn both the token and the port, so whoever can
    write it can swap both for a listener of its own, which then proves itself under its own token and
    gets the prompts (it could read the hook token anyway). The commands are not moved (above)."""
    impostor = FakeService()
    impostor.token = "mkh_chosen-by-the-writer"
    impostor.body = {"context": "Injected by the writer.", "cloud": "ok"}
    with contextmanager(serving)(impostor):
        (state_dir / paths.SERVICE_FILE).write_text(json.dumps({"port": impostor.port}))
        (state_dir / paths.HOOK_TOKEN_FILE).write_text(impostor.token)
        out = io.BytesIO()
        hook.run("codex", io.BytesIO(EVENT), out, {paths.HOME_ENV: str(state_dir.parent)})
    assert out.getvalue() == b"Injected by the writer.\n"
    assert impostor.requests[0]["body"]["query"] == PROMPT


def test_a_login_put_in_the_hooks_directory_is_removed_unread(state_dir, cloud):
    """An older version kept the login (and the control token) in ``desktop/``. A writer of that directory
    could put a login for an account of its own there: the service removes it without reading it, so it
    never signs in to that account (where the person's uploads would go) nor sends its token anywhere."""
    state_dir.mkdir(parents=True, mode=0o700)
    planted = "planted.login.of-another-account"
    (state_dir / paths.CONTROL_TOKEN_FILE).write_text("mkc_old")
    (state_dir / paths.LOGIN_FILE).write_text(json.dumps({"cloud": cloud.url, "access_token": planted}))
    with start(state_dir, cloud.url) as running:
        client = Client(running)
        status = client.control("GET", "/control/status")[1]
        assert client.recall()["cloud"] == "logged_out"
        login = running.state.commands()["login"]  # as the person can run it
    assert status["login"]["state"] == "logged_out"
    assert f"removed unread: run `{login}`" in status["login"]["note"]
    assert {path.name for path in state_dir.iterdir()} <= {paths.HOOK_TOKEN_FILE, paths.LOCK_FILE}
    assert not Path(paths.private_dir(str(state_dir)), paths.LOGIN_FILE).exists()
    assert cloud.requests == []


@pytest.mark.parametrize("store", ["file", "keychain"])
def test_a_writer_of_the_private_store_can_point_the_commands_at_itself(state_dir, store):
    """Said plainly: whoever can write ``desktop-private/`` (or the keychain's entries, where they are
    kept) can name a listener and a control token of its own; the commands then trust it and hand it a
    pasted cloud token. That store is the commands' root of trust, as it holds the secrets themselves."""
    impostor_token = "mkc_chosen-by-the-writer"
    impostor = ControlImpostor(impostor_token)
    backend = MemoryKeyring() if store == "keychain" else None
    with contextmanager(serving)(impostor.server):
        if backend is None:
            record_control(str(state_dir), impostor.port, impostor_token)
        else:
            record = ServiceRecord(impostor_token, impostor.port)
            KeyringStore(backend, str(state_dir)).put(CONTROL_ENTRY, record.to_json())
        call(str(state_dir), "POST", "/control/login", {"token": PASTED}, keyring_backend=backend)
    assert impostor.bodies[0] == ""  # the challenge, then the pasted token
    assert PASTED in impostor.bodies[1]


@pytest.mark.parametrize("store", ["file", "keychain"])
def test_a_writer_of_the_private_store_chooses_the_login(state_dir, cloud, store):
    """Said plainly: the login the service signs in with is the one in that store, so whoever can write it
    chooses the account from the service's next start (and a person's uploads through the page go there)."""
    backend = MemoryKeyring() if store == "keychain" else None
    chosen = "chosen.by-the.writer"
    open_store(str(state_dir), backend).save(CloudLogin(cloud.url, chosen))
    with start(state_dir, cloud.url, keyring_backend=backend) as running:
        Client(running).recall()
    assert cloud.requests[0]["auth"] == f"Bearer {chosen}"


class ControlImpostor:
    """A listener holding a control token of its own choosing: it proves itself and records bodies."""

    def __init__(self, token: str) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        impostor = self
        self.bodies: list[str] = []

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _reply(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                impostor.bodies.append(body.decode())
                answer = proof_reply(self.path, {"control": token}, impostor.port) or {"login": {}}
                raw = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            do_GET = do_POST = _reply

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = int(self.server.server_address[1])


@pytest.mark.parametrize("agent", ["claude-code", "codex", "gemini"])
def test_the_agents_settings_files_hold_no_token(service, tmp_path, monkeypatch, capsys, agent):
    """What ``hook install`` and ``hook install --mcp`` write into an agent's settings: a command line
    and ``MEMMY_KB_HOME``, never a token. A writer of those files can run any command as the user, which
    is beyond this design; it learns nothing from them."""
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "user" / ".codex"))
    assert cli.main(["hook", "install", agent]) == 0
    assert cli.main(["hook", "install", agent, "--mcp"]) == 0
    capsys.readouterr()
    written = [path for path in (tmp_path / "user").rglob("*") if path.is_file()]
    assert written
    for secret in (service.state.hook_token, service.state.control_token, "mkh_", "mkc_"):
        assert not any(secret in path.read_text(errors="replace") for path in written)
