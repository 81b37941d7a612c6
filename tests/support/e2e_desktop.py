"""``memmy-kb desktop serve`` in a subprocess with its own ``MEMMY_KB_HOME``, on the stage, and the agent
hooks run as their agents run them (``run_hook``), with an environment that holds no cloud token, no
endpoint and no ``config.json`` (``clean_env``); for the desktop's e2e tests and the real agents'."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.e2e_recall import QUESTION
from tests.support.polling import wait_until
from tests.support.stack import CLI, stop_stack
from tests.support.stage import ApiTarget

READY = re.compile(r"^Memmy desktop service on (http://127\.0\.0\.1:(\d+)) ", re.MULTILINE)
AGENTS = ["claude-code", "codex", "gemini"]
EVENTS: dict[str, dict[str, Any]] = {
    "claude-code": {
        "session_id": "e2e",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": "/work",
        "permission_mode": "default",
        "hook_event_name": "UserPromptSubmit",
        "prompt": QUESTION,
    },
    "codex": {
        "session_id": "e2e",
        "turn_id": "t1",
        "transcript_path": None,
        "cwd": "/work",
        "hook_event_name": "UserPromptSubmit",
        "model": "gpt-5-codex",
        "permission_mode": "default",
        "prompt": QUESTION,
    },
    "gemini": {
        "session_id": "e2e",
        "transcript_path": "/tmp/t.json",
        "cwd": "/work",
        "hook_event_name": "BeforeAgent",
        "timestamp": "2026-01-01T00:00:00Z",
        "prompt": QUESTION,
    },
}


def clean_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment an agent gives its hook: no cloud token, no endpoint, no other Memmy setting."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("MEMMY_KB_")}
    return {
        **env,
        "MEMMY_KB_HOME": str(home),
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
        **extra,
    }


@dataclass(frozen=True)
class Desktop:
    url: str
    port: int
    home: Path
    log_path: Path

    @property
    def state_dir(self) -> Path:
        return self.home / "desktop"

    @property
    def hook_token(self) -> str:
        return (self.state_dir / "hook-token").read_text().strip()

    @property
    def control_token(self) -> str:
        # No keychain here (PYTHON_KEYRING_BACKEND=fail): the private directory beside the hooks' one.
        return str(json.loads((self.home / "desktop-private" / "control.json").read_text())["token"])

    def cli(self, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run(  # noqa: S603 - our own CLI
            [*CLI, "desktop", *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=clean_env(self.home),
            timeout=60,
            check=False,
        )


def start_desktop(workdir: Path, cloud_url: str) -> tuple[subprocess.Popen[bytes], Desktop]:
    home = workdir / "home"
    log_path = workdir / "desktop.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(  # noqa: S603 - our own CLI with fixed arguments
            [*CLI, "desktop", "serve", "--port", "0", "--cloud", cloud_url],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=clean_env(home, PYTHONUNBUFFERED="1"),
        )
    def ready() -> re.Match[str] | None:
        assert process.poll() is None, log_path.read_text()
        return READY.search(log_path.read_text(errors="replace"))

    found = wait_until(ready, timeout=30, message=lambda: f"the desktop service to start: {log_path.read_text()}")
    return process, Desktop(found.group(1), int(found.group(2)), home, log_path)


@contextmanager
def logged_in_desktop(workdir: Path, stack: ApiTarget, token: str) -> Iterator[Desktop]:
    """A desktop service on ``stack``, logged in with ``token`` pasted, stopped afterwards."""
    process, running = start_desktop(workdir, stack.api_url)
    try:
        login = running.cli("login", "--token", "-", stdin=token + "\n")
        assert login.returncode == 0, login.stderr
        yield running
    finally:
        assert stop_stack(process) == 0, running.log_path.read_text()


class Paced:
    """Calls spaced to stay within one user's sustained recall rate (docs/limits.md, "Recall per user": 2 a
    second after a burst of 10), with a margin: a measurement that recalls as one user many times waits
    between its calls, outside the times it measures, as no person's agents would recall faster."""

    def __init__(self, interval: float = 0.55) -> None:
        self.interval = interval
        self._next = 0.0

    def wait(self) -> None:
        delay = self._next - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        self._next = time.monotonic() + self.interval


def run_hook(
    agent: str, home: Path, stdin: bytes | None = None
) -> tuple[subprocess.CompletedProcess[bytes], float]:
    started = time.perf_counter()
    done = subprocess.run(  # noqa: S603 - our own CLI, as the agent runs it
        [*CLI, "hook", agent],
        input=stdin if stdin is not None else json.dumps(EVENTS[agent], ensure_ascii=False).encode(),
        capture_output=True,
        env=clean_env(home),
        timeout=60,
        check=False,
    )
    return done, time.perf_counter() - started


def block_of(agent: str, stdout: bytes) -> str:
    if agent == "gemini":
        output = json.loads(stdout)
        assert set(output) == {"hookSpecificOutput"}
        assert output["hookSpecificOutput"]["hookEventName"] == "BeforeAgent"
        return str(output["hookSpecificOutput"]["additionalContext"])
    return stdout.decode("utf-8")
