"""Every command of ``memmy-kb`` and ``memmy-local``, found by walking their argument parsers (so a command
added later is walked too), run in-process against what goes wrong: nothing listening, a 401, a 5xx, TLS
spoken to a plain HTTP server, a server that never answers, no login at all, a desktop service whose cloud
is down or refuses its login, and a stdout whose reader has gone. None may end in a traceback, and each
says what happened in at most two lines (cli/failures.py)."""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from memmy_kb_client.cli import cloud_route
from memmy_kb_client.cli import main as kb_cli
from memmy_kb_client.desktop.server import DesktopService
from memmy_local import cli as local_cli
from tests.support.desktop_page import RecordingCloud
from tests.support.desktop_service import CLOUD_TOKEN, serving, start
from tests.support.polling import wait_until
from tests.support.stack import CLI

# Commands that run until they are stopped: each has its own test of what it says when it cannot run.
LONG_RUNNING = {
    ("desktop", "serve"): "test_serve_on_a_taken_port_says_so_in_one_line",
    ("mcp",): "tests/integration/agents/test_mcp_server.py (no service, a refused token, ...)",
    ("up",): "memmy-local up: tests/unit/local/test_local_cli.py and the e2e tier",
    ("memos",): "memmy-local memos: the emulator until Ctrl-C (tests/unit/local/test_local_cli.py)",
    ("dev",): "memmy-kb dev forwards to memmy-local, walked on its own here",
}
MAX_LINES = 2


class Answering(RecordingCloud):
    """A cloud that answers every request with one status and body, as API Gateway does for a refused
    token (``{"message": "Unauthorized"}``) or a failed function."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        super().__init__()
        self.status, self.body = status, body

    def answer(self, method: str, path: str) -> tuple[int, Any]:
        return self.status, self.body


class Silent:
    """A listener that accepts connections and never answers."""

    def __init__(self) -> None:
        self._socket = socket.socket()
        self._socket.bind(("127.0.0.1", 0))
        self._socket.listen(64)
        self._held: list[socket.socket] = []
        self.url = f"http://127.0.0.1:{self._socket.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                self._held.append(self._socket.accept()[0])

    def held(self) -> int:
        return len(self._held)

    def close(self) -> None:
        self._socket.close()
        for held in self._held:
            held.close()


def dead_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


# ------------------------------------------------------------------------------------ the walk


def leaves(
    parser: argparse.ArgumentParser, words: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Each command the parser runs, as its words and its own parser."""
    groups = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not groups:
        yield words, parser
        return
    for group in groups:
        for name, sub in group.choices.items():
            yield from leaves(sub, (*words, name))


def arguments(words: tuple[str, ...], parser: argparse.ArgumentParser, work: Path) -> list[str]:
    """A command line that gets past the parser: each positional filled (an existing file or folder where
    one is read), ``--yes`` where a command would ask first."""
    filled = list(words)
    for action in parser._actions:
        if action.option_strings:
            if "--yes" in action.option_strings:
                filled.append("--yes")
            continue
        if action.choices:
            value = str(next(iter(action.choices)))
        elif action.dest in ("path", "paths"):
            value = str(work / "notes.md")
        elif action.dest == "dir":
            value = str(work / "folder")
        else:
            value = "x1"
        filled.append(value)
    return filled


def kb_commands() -> list[tuple[str, ...]]:
    return [words for words, _ in leaves(kb_cli.build_parser()) if words not in LONG_RUNNING]


def local_commands() -> list[tuple[str, ...]]:
    return [words for words, _ in leaves(local_cli.build_parser()) if words not in LONG_RUNNING]


@dataclass
class Run:
    argv: list[str]
    code: int | None
    out: str
    err: str
    raised: BaseException | None = None


@dataclass
class Walk:
    """Runs commands in-process with a clean environment of their own; ``stdout`` replaces sys.stdout."""

    home: Path
    monkeypatch: pytest.MonkeyPatch
    capsys: pytest.CaptureFixture[str]
    runs: list[Run] = field(default_factory=list)

    def run(self, main: Callable[[list[str]], int], argv: list[str], stdout: Any = None) -> Run:
        self.monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))
        captured = sys.stdout
        sys.stdout = stdout or captured
        code: int | None = None
        raised: BaseException | None = None
        try:
            code = main(argv)
        except SystemExit as done:  # argparse's usage error or --help
            code = done.code if isinstance(done.code, int) else 2
        except BaseException as escaped:  # what the walk is looking for
            raised = escaped
        finally:
            sys.stdout = captured
        if stdout is not None and raised is None:
            try:
                stdout.flush()  # as the interpreter does at exit: "Exception ignored ... BrokenPipeError"
            except BrokenPipeError as broken:
                raised = broken
        out, err = self.capsys.readouterr()
        run = Run(argv, code, out, err, raised)
        self.runs.append(run)
        return run

    def problems(self) -> list[str]:
        found = []
        for run in self.runs:
            lines = [line for line in run.err.splitlines() if line.strip()]
            if run.raised is not None:
                found.append(f"{' '.join(run.argv)}: raised {type(run.raised).__name__}: {run.raised}")
            elif "Traceback" in run.err or "Exception ignored" in run.err:
                found.append(f"{' '.join(run.argv)}: a traceback:\n{run.err}")
            elif len(lines) > MAX_LINES:
                found.append(f"{' '.join(run.argv)}: {len(lines)} lines:\n{run.err}")
        return found


@pytest.fixture
def walk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Walk:
    for name in list(os.environ):
        if name.startswith("MEMMY_KB_") or name in ("CODEX_HOME", "CLAUDE_CONFIG_DIR"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    monkeypatch.setenv("MEMMY_KB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    monkeypatch.setattr("webbrowser.open", lambda *a, **k: False)
    monkeypatch.setattr(cloud_route, "REQUEST_TIMEOUT_SECONDS", 0.5)
    monkeypatch.setattr(cloud_route, "DESKTOP_TIMEOUT_SECONDS", 0.5)
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "a.md").write_text("# a\n")
    (tmp_path / "notes.md").write_text("# notes\n")
    return Walk(tmp_path / "home", monkeypatch, capsys)


def walk_kb(walk: Walk, after_each: Callable[[], object] = lambda: None) -> None:
    parser = kb_cli.build_parser()
    found = dict(leaves(parser))
    for words in kb_commands():
        walk.run(kb_cli.main, arguments(words, found[words], walk.home.parent))
        after_each()


def walk_local(walk: Walk) -> None:
    found = dict(leaves(local_cli.build_parser()))
    for words in local_commands():
        walk.run(local_cli.main, arguments(words, found[words], walk.home.parent))


def test_the_walk_finds_every_command() -> None:
    commands = {" ".join(words) for words in kb_commands()}
    assert {"kb ls", "kb rm", "files upload", "folders mv", "recall", "sync", "desktop status"} <= commands
    assert {"hook claude-code", "hook status", "me", "login"} <= commands
    assert {" ".join(words) for words in local_commands()} == {"token", "reconcile"}


# ------------------------------------------------------------------------------- the scenarios


def test_nothing_listening(walk: Walk, monkeypatch: pytest.MonkeyPatch) -> None:
    url = dead_url()
    monkeypatch.setenv("MEMMY_KB_ENDPOINT", url)
    monkeypatch.setenv("MEMMY_KB_TOKEN", CLOUD_TOKEN)
    _record_local_stack(walk.home, url)
    walk_kb(walk)
    walk_local(walk)
    assert walk.problems() == []
    said = {" ".join(run.argv[:2]): run.err for run in walk.runs}
    assert f"error: nothing answers at {url}" in said["kb ls"]
    assert "start it with `make run`" in said["kb ls"]


def test_no_login_anywhere(walk: Walk) -> None:
    walk_kb(walk)
    assert walk.problems() == []
    kb_ls = next(run for run in walk.runs if run.argv[:2] == ["kb", "ls"])
    assert kb_ls.code == 1
    assert kb_ls.err.startswith(
        "error: not signed in: no desktop service is running, and there is no saved login"
    )
    assert "desktop login" in kb_ls.err
    assert "login --token TOKEN" in kb_ls.err


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (401, {"message": "Unauthorized"}),
        (500, {"message": "Internal Server Error"}),
        (503, {"error": {"code": "recall_unavailable", "message": "MemOS did not answer"}}),
    ],
    ids=["401", "500", "503"],
)
def test_a_cloud_that_refuses_or_fails(
    walk: Walk, monkeypatch: pytest.MonkeyPatch, status: int, body: dict[str, Any]
) -> None:
    for cloud in serving(Answering(status, body)):
        monkeypatch.setenv("MEMMY_KB_ENDPOINT", cloud.url)
        monkeypatch.setenv("MEMMY_KB_TOKEN", CLOUD_TOKEN)
        _record_local_stack(walk.home, cloud.url)
        walk_kb(walk)
        walk_local(walk)
    assert walk.problems() == []
    kb_ls = next(run for run in walk.runs if run.argv[:2] == ["kb", "ls"])
    if status == 401:
        assert "refused the token in $MEMMY_KB_TOKEN (401 http_error)" in kb_ls.err
    else:
        assert "failed: " in kb_ls.err
        assert "try again in a moment" in kb_ls.err


def test_tls_spoken_to_a_plain_server_and_a_server_that_never_answers(
    walk: Walk, monkeypatch: pytest.MonkeyPatch
) -> None:
    silent = Silent()
    monkeypatch.setenv("MEMMY_KB_TOKEN", CLOUD_TOKEN)
    try:
        for cloud in serving(Answering(200, {})):
            monkeypatch.setenv("MEMMY_KB_ENDPOINT", cloud.url.replace("http://", "https://"))
            walk_kb(walk)
        monkeypatch.setenv("MEMMY_KB_ENDPOINT", silent.url)
        walk_kb(walk)
    finally:
        silent.close()
    assert walk.problems() == []
    said = [run.err for run in walk.runs if run.argv[:2] == ["kb", "ls"]]
    assert "error: no secure (TLS) connection to https://127.0.0.1:" in said[0]
    assert "did not answer in time" in said[1]


@pytest.fixture
def desktop(tmp_path: Path, walk: Walk) -> Iterator[Callable[[str], DesktopService]]:
    """A desktop service in the walk's home, signed in, in front of the cloud at the URL given."""
    started: list[DesktopService] = []

    def start_for(cloud_url: str) -> DesktopService:
        running = start(walk.home / "desktop", cloud_url)
        running.state.set_login(CLOUD_TOKEN)
        started.append(running)
        return running

    yield start_for
    for running in started:
        running.stop()


def test_through_a_desktop_service_whose_cloud_is_down_or_refuses_it(
    walk: Walk, desktop: Callable[[str], DesktopService]
) -> None:
    down = desktop(dead_url())
    walk_kb(walk, after_each=functools.partial(down.state.set_login, CLOUD_TOKEN))
    down.stop()
    for cloud in serving(Answering(401, {"message": "Unauthorized"})):
        refusing = desktop(cloud.url)
        walk_kb(walk, after_each=functools.partial(refusing.state.set_login, CLOUD_TOKEN))
    assert walk.problems() == []
    said = [run.err for run in walk.runs if run.argv[:2] == ["kb", "ls"]]
    assert "cannot reach the cloud at http://127.0.0.1:" in said[0]
    assert "(503 cloud_login_rejected; desktop service at http://127.0.0.1:" in said[1]
    assert "sign in again with `" in said[1]


def test_a_desktop_service_that_stopped_without_cleaning_up(walk: Walk) -> None:
    from tests.support.desktop_proof import record_control

    record_control(str(walk.home / "desktop"), int(dead_url().rsplit(":", 1)[1]), "mkc_" + "a" * 43)
    walk_kb(walk)
    assert walk.problems() == []
    kb_ls = next(run for run in walk.runs if run.argv[:2] == ["kb", "ls"])
    assert "the desktop service does not answer" in kb_ls.err


def _record_local_stack(home: Path, url: str) -> None:
    """A local stack recorded in the dev home (``memmy-local reconcile`` asks it) at ``url``."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "local-stack.json").write_text(json.dumps({"control_url": url, "token": "t"}))


# ---------------------------------------------------------------------------------- closed pipe


def closed_stdout() -> io.TextIOWrapper:
    """A stdout whose reader has gone: every write that reaches the pipe fails with EPIPE."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    return io.TextIOWrapper(io.FileIO(write_end, "w"), encoding="utf-8")


def test_every_commands_help_into_a_closed_pipe(walk: Walk) -> None:
    for main, commands in ((kb_cli.main, kb_commands()), (local_cli.main, local_commands())):
        for words in commands:
            stdout = closed_stdout()
            walk.run(main, [*words, "--help"], stdout=stdout)
            with contextlib.suppress(OSError):
                stdout.close()
    assert walk.problems() == []
    assert all(run.code == 0 for run in walk.runs)


def test_output_into_a_closed_pipe_ends_quietly(walk: Walk, desktop: Callable[[str], DesktopService]) -> None:
    for cloud in serving(
        Answering(
            200,
            {
                "items": [{"id": "kb_1", "name": "资料", "role": "owner", "recall": True}],
                "folders": [],
                "files": [],
            },
        )
    ):
        desktop(cloud.url)
        for argv in (
            ["kb", "ls"],
            ["files", "ls", "kb_1"],
            ["hook", "status"],
            ["desktop", "status"],
            ["me"],
        ):
            stdout = closed_stdout()
            run = walk.run(kb_cli.main, argv, stdout=stdout)
            with contextlib.suppress(OSError):
                stdout.close()
            assert run.code == 1, run
    assert walk.problems() == []
    assert all(run.err == "" for run in walk.runs)


@pytest.mark.parametrize("argv", [["hook", "status"], ["--help"], ["kb", "ls"]])
def test_the_console_script_into_a_closed_pipe(tmp_path: Path, argv: list[str]) -> None:
    """As a shell runs ``memmy-kb hook status | head -0``: the reader is gone before the first write."""
    # A person's shell buffers stdout (no PYTHONUNBUFFERED): the last flush, at exit, meets the closed pipe.
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMMY_KB_") and k != "PYTHONUNBUFFERED"}
    env.update(HOME=str(tmp_path), MEMMY_KB_HOME=str(tmp_path / "home"), MEMMY_KB_TOKEN=CLOUD_TOKEN)
    env["MEMMY_KB_ENDPOINT"] = dead_url()
    process = subprocess.Popen(  # noqa: S603 - our own CLI
        [*CLI, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    assert process.stdout is not None
    process.stdout.close()
    _, err = process.communicate(timeout=60)
    assert b"Traceback" not in err, err.decode()
    assert b"Exception ignored" not in err, err.decode()


# ------------------------------------------------------------------------- Ctrl-C, a taken port


def _person_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMMY_KB_") and k != "PYTHONUNBUFFERED"}
    return {**env, "HOME": str(tmp_path), "MEMMY_KB_HOME": str(tmp_path / "home"), **extra}


def test_ctrl_c_while_the_cloud_is_slow_says_interrupted(tmp_path: Path) -> None:
    silent = Silent()
    env = _person_env(tmp_path, MEMMY_KB_ENDPOINT=silent.url, MEMMY_KB_TOKEN=CLOUD_TOKEN)
    try:
        process = subprocess.Popen(  # noqa: S603 - our own CLI
            [*CLI, "kb", "ls"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
        )
        wait_until(lambda: silent.held() > 0, timeout=30, message="the command to connect")
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    finally:
        silent.close()
    assert (process.returncode, out, err) == (130, b"", b"\ninterrupted\n")


def test_serve_on_a_taken_port_says_so_in_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(  # noqa: S603 - our own CLI
            [*CLI, "desktop", "serve", "--port", str(port), "--cloud", dead_url()],
            capture_output=True,
            text=True,
            env=_person_env(tmp_path, PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring"),
            timeout=60,
            check=False,
        )
    assert done.returncode == 1
    assert (
        done.stderr == f"error: cannot listen on 127.0.0.1:{port} (Address already in use)\n"
    )


@pytest.mark.parametrize("main", [kb_cli.main, local_cli.main], ids=["memmy-kb", "memmy-local"])
def test_a_port_out_of_range_is_a_usage_error(
    main: Callable[[list[str]], int], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["desktop", "serve", "--port", "70000"] if main is kb_cli.main else ["up", "--port", "70000"]
    with pytest.raises(SystemExit) as done:
        main(argv)
    assert done.value.code == 2
    assert capsys.readouterr().err.endswith("error: argument --port: a port is 0 to 65535, not 70000\n")
