"""What the commands say when something expected goes wrong (``cli/failures.py``), sentence by sentence, and
the order in which a command picks its way to the cloud without a desktop service (``cli/cloud_route.py``;
through a running service: tests/integration/cli/test_cli_through_desktop.py)."""

from __future__ import annotations

import argparse
import http.client
import json
import ssl
import sys
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from memmy_kb_client.cli import cloud_route, failures
from memmy_kb_client.home import advice
from memmy_kb_client.home.proof import NotProven
from memmy_kb_client.http_client import TransportError
from memmy_kb_client.sdk import MemmyApiError

LOCAL, DEPLOYED = "http://127.0.0.1:8080", "https://api.example.test"
SERVICE = "http://127.0.0.1:8765"


@dataclass(frozen=True)
class Route:
    kind: str
    endpoint: str = LOCAL
    state_dir: str = "/nowhere/desktop"
    service: str | None = None
    desktop_state: str = "absent"


@pytest.fixture(autouse=True)
def off_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This installation's scripts in a virtualenv's bin/ that is not on PATH, run from the checkout."""
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    for name in ("python", "memmy-kb"):
        (bin_dir / name).write_text("#!/bin/sh\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "executable", str(bin_dir / "python"))
    monkeypatch.setattr(sys, "argv", [".venv/bin/memmy-kb"])
    monkeypatch.setenv("PATH", str(tmp_path / "elsewhere"))
    return bin_dir


def said(err: BaseException, route: Route) -> list[str]:
    failure = failures.routed_failure(err, route)
    assert failure is not None
    return failure.lines


@pytest.mark.parametrize(
    ("kind", "first", "second"),
    [
        (
            "flag",
            f"error: the cloud at {LOCAL} refused the token given with --token (401 http_error): it has expired "
            "or is for another cloud",
            "pass a valid --token, or leave it out to use the desktop service's login "
            "(`.venv/bin/memmy-kb desktop login`)",
        ),
        (
            "environment",
            f"error: the cloud at {LOCAL} refused the token in $MEMMY_KB_TOKEN (401 http_error): it has expired "
            "or is for another cloud",
            "set a new $MEMMY_KB_TOKEN, or unset it to use the desktop service's login "
            "(`.venv/bin/memmy-kb desktop login`)",
        ),
        (
            "saved",
            f"error: the cloud at {LOCAL} refused the saved login's token (401 http_error): it has expired or is "
            "for another cloud",
            "sign in through the desktop service (start it with `.venv/bin/memmy-kb desktop serve`, then "
            "`.venv/bin/memmy-kb desktop login`), or save a token with `.venv/bin/memmy-kb login --token TOKEN`",
        ),
    ],
)
def test_a_401_names_where_the_token_came_from_and_how_to_sign_in(kind: str, first: str, second: str) -> None:
    assert said(MemmyApiError(401, "http_error", "Unauthorized"), Route(kind)) == [first, second]


def test_with_the_service_running_but_signed_out_sign_in_is_one_command() -> None:
    route = Route("saved", desktop_state="signed_out")
    assert said(MemmyApiError(401, "http_error", "Unauthorized"), route)[1] == (
        "sign in with `.venv/bin/memmy-kb desktop login`, or save a token with "
        "`.venv/bin/memmy-kb login --token TOKEN`"
    )


@pytest.mark.parametrize(
    ("code", "fix"),
    [
        ("cloud_login_rejected", "sign in again with `.venv/bin/memmy-kb desktop login`"),
        ("desktop_logged_out", "sign in again with `.venv/bin/memmy-kb desktop login`"),
        (
            "login_refresh_unreachable",
            "check your network, then `.venv/bin/memmy-kb desktop status`; or sign in again with "
            "`.venv/bin/memmy-kb desktop login`",
        ),
    ],
)
def test_the_desktop_services_own_login_answers_say_to_sign_it_in(code: str, fix: str) -> None:
    route = Route("desktop", service=SERVICE, desktop_state="signed_in")
    lines = said(MemmyApiError(503, code, "what the service says"), route)
    assert lines[0].startswith("error: what the service says (503 ")
    assert lines[1] == fix


def test_the_cloud_behind_the_service_not_answering_names_the_stack_or_the_address(tmp_path: Path) -> None:
    unreachable = MemmyApiError(502, "cloud_unreachable", "the cloud did not answer (ConnectionRefusedError)")
    local = Route("desktop", service=SERVICE, state_dir=str(tmp_path / "home" / "desktop"))
    assert said(unreachable, local) == [
        f"error: the desktop service at {SERVICE} cannot reach the cloud at {LOCAL}: the cloud did not answer "
        "(ConnectionRefusedError)",
        "is the local stack running? start it with `make run` (in the repository's checkout)",
    ]
    advice.record_launcher(local.state_dir, advice.Launcher('make run ARGS="--demo"', "/src/memmy"))
    assert said(unreachable, local)[1] == (
        'is the local stack running? start it with `make run ARGS="--demo"` (in /src/memmy)'
    )
    deployed = Route("desktop", endpoint=DEPLOYED, service=SERVICE)
    assert said(unreachable, deployed)[1].startswith(
        "check the cloud's address (--endpoint, $MEMMY_KB_ENDPOINT"
    )


def test_a_5xx_says_to_try_again_and_where_the_local_stack_says_why() -> None:
    failed = MemmyApiError(500, "internal_error", "Internal Server Error")
    assert said(failed, Route("saved")) == [
        f"error: the cloud at {LOCAL} failed: Internal Server Error (500 internal_error)",
        "try again in a moment; the `make run` console shows what failed",
    ]
    assert said(failed, Route("saved", endpoint=DEPLOYED))[1] == "try again in a moment"


@pytest.mark.parametrize(
    ("err", "first"),
    [
        (
            ConnectionRefusedError(111, "Connection refused"),
            f"error: nothing answers at {LOCAL} (ConnectionRefusedError:",
        ),
        (
            TimeoutError("timed out"),
            f"error: the cloud at {LOCAL} did not answer in time (TimeoutError: timed out)",
        ),
        (
            ssl.SSLCertVerificationError(1, "certificate verify failed"),
            f"error: no secure (TLS) connection to {LOCAL}",
        ),
        (
            TransportError("IncompleteRead: 3 bytes"),
            f"error: the answer from the cloud at {LOCAL} could not be read",
        ),
        (
            http.client.RemoteDisconnected("closed"),
            f"error: nothing answers at {LOCAL} (RemoteDisconnected: closed)",
        ),
    ],
    ids=["refused", "timeout", "tls", "unreadable", "hung up"],
)
def test_each_network_failure_has_its_sentence(err: BaseException, first: str) -> None:
    lines = said(err, Route("environment"))
    assert lines[0].startswith(first)
    assert len(lines) == 2


def test_the_service_stopping_mid_command_says_how_to_start_it(tmp_path: Path) -> None:
    route = Route("desktop", service=SERVICE, state_dir=str(tmp_path / "desktop"))
    assert said(ConnectionResetError(104, "Connection reset by peer"), route) == [
        f"error: the desktop service at {SERVICE} stopped answering (ConnectionResetError: [Errno 104] "
        "Connection reset by peer)",
        "start it with `.venv/bin/memmy-kb desktop serve`",
    ]
    refusal = "the program listening on 127.0.0.1:8765 is not this desktop service; nothing was sent (...)"
    assert said(NotProven(refusal), route) == [f"error: {refusal}"]


def test_storage_that_does_not_answer_says_nothing_was_stored() -> None:
    request = httpx.Request("POST", "http://127.0.0.1:5000/bucket")
    assert said(httpx.ConnectError("refused", request=request), Route("desktop", service=SERVICE)) == [
        "error: the upload to 127.0.0.1:5000 failed (ConnectError: refused)",
        "try again: nothing of this file was stored; is the local stack running? (`make run` starts its "
        "storage too)",
    ]


@pytest.mark.parametrize(
    "err",
    [
        MemmyApiError(404, "kb_not_found", "Knowledge base not found."),
        MemmyApiError(409, "version_conflict", "stale"),
        FileNotFoundError(2, "No such file or directory", "notes.md"),
        KeyError("items"),
    ],
    ids=["404", "409", "a local file", "a bug"],
)
def test_what_the_command_says_itself_or_a_bug_is_left_alone(err: BaseException) -> None:
    assert failures.routed_failure(err, Route("saved")) is None


# ------------------------------------------------------------------------------------ run_command


def command(raise_: BaseException | None) -> argparse.Namespace:
    def func(args: argparse.Namespace) -> int:
        if raise_ is not None:
            raise raise_
        print("done")
        return 0

    return argparse.Namespace(func=func)


def test_ctrl_c_says_interrupted_and_exits_130(capsys: pytest.CaptureFixture[str]) -> None:
    assert failures.run_command(lambda: command(KeyboardInterrupt())) == failures.INTERRUPTED
    assert capsys.readouterr().err == "\ninterrupted\n"


def test_a_worded_failure_is_printed_as_is(capsys: pytest.CaptureFixture[str]) -> None:
    assert failures.run_command(lambda: command(failures.CommandFailed("error: x", "run y"))) == 1
    assert capsys.readouterr().err == "error: x\nrun y\n"


def test_an_expected_failure_outside_a_client_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert failures.run_command(lambda: command(httpx.ConnectError("refused"))) == 1
    assert capsys.readouterr().err == "error: the connection failed (ConnectError: refused)\ntry again\n"


def test_another_system_error_is_said_as_it_is(capsys: pytest.CaptureFixture[str]) -> None:
    assert failures.run_command(lambda: command(OSError(98, "Address already in use"))) == 1
    assert capsys.readouterr().err == "error: OSError: [Errno 98] Address already in use\n"


def test_a_broken_connection_is_not_taken_for_a_closed_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    assert failures.run_command(lambda: command(BrokenPipeError(32, "Broken pipe"))) == 1
    assert "error: the connection failed (BrokenPipeError" in capsys.readouterr().err


def test_a_bug_keeps_its_traceback() -> None:
    with pytest.raises(ZeroDivisionError):
        failures.run_command(lambda: command(ZeroDivisionError()))


# ------------------------------------------------------------------------- the way, without a service


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MEMMY_KB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    (tmp_path / "home").mkdir()
    return tmp_path / "home"


def test_a_token_for_the_run_comes_before_the_saved_login(home: Path) -> None:
    (home / "config.json").write_text(json.dumps({"endpoint": DEPLOYED, "token": "saved"}))
    env = {"MEMMY_KB_HOME": str(home)}
    flag, _ = cloud_route.choose(None, "flag", {**env, "MEMMY_KB_TOKEN": "env"})
    assert (flag.kind, flag.token, flag.endpoint) == ("flag", "flag", DEPLOYED)
    environment, _ = cloud_route.choose(LOCAL, None, {**env, "MEMMY_KB_TOKEN": "env"})
    assert (environment.kind, environment.token, environment.endpoint) == ("environment", "env", LOCAL)
    saved, _ = cloud_route.choose(None, None, env)
    assert (saved.kind, saved.token, saved.desktop_state) == ("saved", "saved", "absent")
    assert (
        saved.describe()
        == f"the saved login in {home / 'config.json'}, as a token whose user is unknown, straight to {DEPLOYED}"
    )


def test_no_login_anywhere_asks_the_cloud_nothing_and_says_how_to_sign_in(home: Path) -> None:
    with pytest.raises(failures.CommandFailed) as failed:
        cloud_route.client_for(None, None, {"MEMMY_KB_HOME": str(home)})
    assert (
        failed.value.lines[0]
        == "error: not signed in: no desktop service is running, and there is no saved login"
    )


def test_a_saved_login_that_cannot_be_read_says_so(home: Path) -> None:
    (home / "config.json").write_text("{not json")
    with pytest.raises(failures.CommandFailed) as failed:
        cloud_route.choose(None, None, {"MEMMY_KB_HOME": str(home)})
    assert failed.value.lines[0].startswith(f"error: the saved login {home / 'config.json'} cannot be read")
    assert (
        failed.value.lines[1]
        == "save the login again with `.venv/bin/memmy-kb login --endpoint URL --token TOKEN`"
    )
