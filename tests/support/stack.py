"""The ``local_stack`` fixture: the real ``memmy-local up`` in a subprocess, on free ports, per test session.

Every port is 0 (the stack picks free ones and prints them), so xdist workers never collide. The
subprocess gets its own ``MEMMY_KB_HOME`` and so its own signing key; ``token()`` signs with that key.
Its output goes to ``stack.log`` in the fixture's temp dir (a pipe nobody reads would fill and block it);
a start failure shows the log's tail.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from memmy_local import tokens
from tests.support.polling import wait_until

READY_TIMEOUT_SECONDS = 60
STOP_TIMEOUT_SECONDS = 10
READY_LINE = re.compile(r"^Memmy local stack ready at (\S+)$", re.MULTILINE)
URL_LINE = re.compile(r"^\s+(API|MemOS|moto|IdP):\s+(\S+)", re.MULTILINE)
STATE_URL = re.compile(r"\(state: (\S+)/_emulator/state\)")


def _command(script: str, module: str) -> list[str]:
    """The installed entry point, as people and `make run` use it; the module when the venv has no script."""
    path = Path(sys.executable).with_name(script)
    return [str(path)] if path.exists() else [sys.executable, "-m", module]


# The user's command (client/) and the developers' local stack (infra/local).
CLI = _command("memmy-kb", "memmy_kb_client.cli")
LOCAL_CLI = _command("memmy-local", "memmy_local.cli")


def run_hook(
    env: dict[str, str], stdin: bytes, *, timeout: float = 60
) -> tuple[subprocess.CompletedProcess[bytes], float]:
    """``memmy-kb hook claude-code`` as Claude Code runs it: event on stdin; the result and its duration."""
    started = time.monotonic()
    done = subprocess.run(  # noqa: S603 - our own CLI
        [*CLI, "hook", "claude-code"],
        input=stdin,
        capture_output=True,
        env={**os.environ, **env},
        timeout=timeout,
        check=False,
    )
    return done, time.monotonic() - started


@dataclass(frozen=True)
class RunningStack:
    """A started local stack: its URLs, and login tokens signed with its key."""

    api_url: str
    memos_url: str
    memos_api_url: str
    moto_url: str
    key_path: Path
    log_path: Path
    # The dev identity provider's URL: the stack's issuer.
    issuer: str

    def token(self, user: str, **claims: Any) -> str:
        """A login token for ``user``; ``name``/``email``/``phone``/``ttl_seconds``/... as ``issue_token``."""
        return tokens.issue_token(user, key_path=self.key_path, **{"issuer": self.issuer, **claims})

    def log(self) -> str:
        """Everything the stack printed so far."""
        return self.log_path.read_text(errors="replace")

    def function_log(self) -> str:
        """The handlers' JSON log lines below WARNING, which the stack keeps apart from its console
        (``local-functions.jsonl`` in its dev home, where the signing key is: memmy_local.console)."""
        from memmy_local.console import FUNCTIONS_FILE_NAME

        path = self.key_path.parent / FUNCTIONS_FILE_NAME
        return path.read_text(errors="replace") if path.exists() else ""


def _wait_until_ready(process: subprocess.Popen[bytes], log_path: Path) -> str:
    def ready() -> str | None:
        output = log_path.read_text(errors="replace")
        if READY_LINE.search(output):
            return output
        if process.poll() is not None:
            raise RuntimeError(f"memmy-local up exited with {process.returncode}:\n{output[-4000:]}")
        return None

    return wait_until(
        ready,
        timeout=READY_TIMEOUT_SECONDS,
        message=lambda: f"memmy-local up to be ready:\n{log_path.read_text(errors='replace')[-4000:]}",
    )


def stop_stack(process: subprocess.Popen[bytes]) -> int:
    """SIGTERM (the stack stops cleanly, keeping its data dir), then kill after a grace period; the exit code."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=STOP_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return process.returncode


def start_stack(
    workdir: Path, data_dir: Path | None = None, extra: Sequence[str] = ()
) -> tuple[subprocess.Popen[bytes], RunningStack]:
    """Start ``memmy-local up`` (with ``--data-dir`` if given, then ``extra`` options); return it once its
    ready line appears.

    Its home (signing key when there is no data dir) and its log are under ``workdir``.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    home = workdir / "home"
    log_path = workdir / "stack.log"
    extra_args = ["--data-dir", str(data_dir)] if data_dir is not None else []
    env = {**os.environ, tokens.HOME_ENV: str(home), "PYTHONUNBUFFERED": "1"}
    command = [*LOCAL_CLI, "up", "--port", "0", "--memos-port", "0", "--moto-port", "0", "--idp-port", "0"]
    command += ["--processing-delay", "0.2", *extra_args, *extra]
    with log_path.open("wb") as log_file:
        process = subprocess.Popen(  # noqa: S603 - our own CLI with fixed arguments
            command, stdout=log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env
        )
    try:
        output = _wait_until_ready(process, log_path)
    except BaseException:
        stop_stack(process)
        raise
    urls = dict(URL_LINE.findall(output))
    state = STATE_URL.search(output)
    assert state is not None, output
    stack = RunningStack(
        api_url=urls["API"],
        memos_url=state.group(1),
        memos_api_url=urls["MemOS"],
        moto_url=urls["moto"],
        key_path=tokens.signing_key_path(data_dir or home),
        log_path=log_path,
        issuer=urls["IdP"],
    )
    return process, stack


@pytest.fixture(scope="session")
def local_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningStack]:
    """The whole local stack over HTTP, started once per test session (per xdist worker)."""
    process, stack = start_stack(tmp_path_factory.mktemp("local-stack"))
    try:
        yield stack
    finally:
        stop_stack(process)
