"""The agent hooks: each asks the local service with the hook token, prints what its agent reads, and on
any failure prints nothing and exits 0 in time. None reads the cloud login.

A tiny HTTP server on loopback stands in for the local service (``memmy-kb desktop serve``), recorded in
a temporary ``$MEMMY_KB_HOME/desktop/`` as the real one records itself; the subprocess tests run the
installed ``memmy-kb`` as the agents do.
"""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
import threading
import time
from http import HTTPStatus

import pytest

from memmy_kb_client.agents import hook
from memmy_kb_client.home import paths
from tests.support.hook_service import (
    AGENTS,
    CONTEXT,
    EVENTS,
    HOOK_TOKEN,
    FakeService,
    env_for,
    event_bytes,
    expected_output,
    home,
    record_service,
    run_hook,
    service,
)
from tests.support.stack import CLI

__all__ = ["home", "service"]  # the fixtures: a fake service that proves itself, and its home

# ------------------------------------------------------------------------------------------ success


@pytest.mark.parametrize("agent", AGENTS)
def test_each_agent_gets_the_block_in_its_own_form(service, home, agent):
    code, out, _ = run_hook(agent, event_bytes(agent), env_for(home))

    assert code == 0
    assert out == expected_output(agent)
    (request,) = service.requests
    assert request["path"] == "/hook/recall"
    assert request["host"] == f"127.0.0.1:{service.port}"
    assert request["authorization"] == f"Bearer {HOOK_TOKEN}"
    assert request["body"] == {"query": "MemOS 开源版和商业版有什么区别", "agent": agent}


def test_gemini_output_is_one_ascii_json_object_and_nothing_else(service, home):
    out = run_hook("gemini", event_bytes("gemini"), env_for(home))[1]
    assert out.isascii()
    assert json.loads(out)["hookSpecificOutput"]["additionalContext"] == CONTEXT


def test_a_long_prompt_is_searched_by_its_first_4000_characters(service, home):
    run_hook("codex", event_bytes("codex", prompt="问" * 5000), env_for(home))
    assert service.requests[0]["body"]["query"] == "问" * 4000


@pytest.mark.parametrize("agent", AGENTS)
def test_an_empty_block_prints_nothing(service, home, agent):
    service.body = {"context": "", "cloud": "logged_out"}
    assert run_hook(agent, event_bytes(agent), env_for(home))[:2] == (0, b"")


def test_the_cloud_login_and_its_variables_are_never_read(service, home, tmp_path):
    """A saved cloud login and the cloud variables are there; the hook asks only the local service."""
    cloud_home = tmp_path / "cloud-home"
    cloud = FakeService()
    thread = threading.Thread(target=cloud.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        (home / "config.json").write_text(
            json.dumps({"endpoint": f"http://127.0.0.1:{cloud.port}", "token": "t"})
        )
        cloud_home.mkdir()
        env = env_for(home, MEMMY_KB_TOKEN="cloud-token", MEMMY_KB_ENDPOINT=f"http://127.0.0.1:{cloud.port}")
        assert run_hook("claude-code", event_bytes("claude-code"), env)[1] == expected_output("claude-code")
    finally:
        cloud.shutdown()
        cloud.server_close()
    assert cloud.requests == []
    assert service.requests[0]["authorization"] == f"Bearer {HOOK_TOKEN}"


# ------------------------------------------------------------------------------------------ failures


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (HTTPStatus.UNAUTHORIZED, {"error": {"code": "unauthorized", "message": "no"}}),
        (HTTPStatus.FORBIDDEN, {"error": {"code": "forbidden_host", "message": "no"}}),
        (HTTPStatus.INTERNAL_SERVER_ERROR, b"<html>oops</html>"),
        (HTTPStatus.OK, b"not json"),
        (HTTPStatus.OK, {"context": 42}),
        (HTTPStatus.OK, ["a", "list"]),
    ],
)
@pytest.mark.parametrize("agent", AGENTS)
def test_a_failed_or_odd_reply_prints_nothing(service, home, agent, status, body):
    service.status, service.body = status, body
    assert run_hook(agent, event_bytes(agent), env_for(home))[:2] == (0, b"")


@pytest.mark.parametrize(
    "stdin",
    [
        b"",
        b"not json",
        b"\xff\xfe\x00garbage",
        b"[]",
        b"{}",
        json.dumps({**EVENTS["codex"], "prompt": None}).encode(),
        json.dumps({**EVENTS["codex"], "prompt": "   "}).encode(),
        json.dumps({**EVENTS["codex"], "hook_event_name": "PreToolUse"}).encode(),
        json.dumps({**EVENTS["codex"], "hook_event_name": "BeforeAgent"}).encode(),
    ],
)
def test_unusable_stdin_prints_nothing_and_calls_nobody(service, home, stdin):
    assert run_hook("codex", stdin, env_for(home))[:2] == (0, b"")
    assert service.requests == []


def test_gemini_takes_only_its_own_event(service, home):
    assert run_hook("gemini", event_bytes("claude-code"), env_for(home))[:2] == (0, b"")
    assert service.requests == []


def test_no_service_recorded_prints_nothing(tmp_path):
    assert run_hook("claude-code", event_bytes("claude-code"), env_for(tmp_path / "nowhere"))[:2] == (0, b"")


@pytest.mark.parametrize("token", [None, "", "has space", "new\nline", "x" * 500])
def test_a_missing_or_malformed_hook_token_calls_nobody(service, tmp_path, token):
    home = tmp_path / "home"
    record_service(home, service.port, token=None)
    if token is not None:
        (home / "desktop" / paths.HOOK_TOKEN_FILE).write_text(token)
    assert run_hook("claude-code", event_bytes("claude-code"), env_for(home))[:2] == (0, b"")
    assert service.requests == []


def test_a_dead_port_prints_nothing_at_once(tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead = probe.getsockname()[1]
    home = tmp_path / "home"
    record_service(home, dead)
    code, out, elapsed = run_hook("codex", event_bytes("codex"), env_for(home))
    assert (code, out) == (0, b"")
    assert elapsed < 3  # a refused connection is not waited on (margins are wide: CI machines are loaded)


def test_a_reply_slower_than_the_deadline_prints_nothing_at_the_deadline(service, home):
    service.delay = 10.0
    code, out, elapsed = run_hook(
        "claude-code", event_bytes("claude-code"), env_for(home, **{hook.TIMEOUT_ENV: "0.5"})
    )
    assert (code, out) == (0, b"")
    assert 0.4 < elapsed < 5  # at the deadline, far before the reply


def test_stdin_that_never_ends_is_abandoned_at_the_deadline(tmp_path):
    read_end, write_end = os.pipe()
    with os.fdopen(read_end, "rb") as never_closed:
        started = time.monotonic()
        code = hook.run("gemini", never_closed, io.BytesIO(), env_for(tmp_path, **{hook.TIMEOUT_ENV: "0.3"}))
        elapsed = time.monotonic() - started
        # End the abandoned read before the reader is closed (closing waits for the reading thread).
        os.close(write_end)
    assert code == 0
    assert elapsed < 5  # without the deadline the read would never end


@pytest.mark.parametrize(
    ("value", "expected"), [("2", 2.0), ("0", 4.0), ("-1", 4.0), ("abc", 4.0), ("999", 4.0)]
)
def test_the_deadline_comes_from_the_environment_within_bounds(value, expected):
    assert hook.hook_timeout({hook.TIMEOUT_ENV: value}) == expected
    assert hook.hook_timeout({}) == hook.DEFAULT_TIMEOUT_SECONDS


# ---------------------------------------------------------------------------- as the agents run it


def run_command(
    agent: str, env: dict[str, str], stdin: bytes
) -> tuple[subprocess.CompletedProcess[bytes], float]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MEMMY_KB_")}
    started = time.monotonic()
    done = subprocess.run(  # noqa: S603 - our own CLI
        [*CLI, "hook", agent], input=stdin, capture_output=True, env={**clean, **env}, timeout=30, check=False
    )
    return done, time.monotonic() - started


@pytest.mark.parametrize("agent", AGENTS)
def test_the_command_prints_the_block_on_stdout(service, home, agent):
    done, _ = run_command(agent, env_for(home), event_bytes(agent))
    assert (done.returncode, done.stderr) == (0, b"")
    assert done.stdout == expected_output(agent)


def test_the_command_against_a_black_hole_exits_0_silently_at_its_deadline(tmp_path):
    with socket.socket() as black_hole:  # accepts connections, never answers
        black_hole.bind(("127.0.0.1", 0))
        black_hole.listen(8)
        home = tmp_path / "home"
        record_service(home, black_hole.getsockname()[1])
        done, elapsed = run_command("codex", env_for(home, **{hook.TIMEOUT_ENV: "1"}), event_bytes("codex"))
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert elapsed < 10  # the subprocess would otherwise run into its 30 s timeout


def imported_modules(*args: str, stdin: bytes = b"", env: dict[str, str] | None = None) -> set[str]:
    done = subprocess.run(  # noqa: S603 - our own interpreter and CLI
        [sys.executable, "-X", "importtime", *args],
        input=stdin,
        capture_output=True,
        timeout=30,
        check=False,
        env={**os.environ, **(env or {})},
    )
    return {line.rsplit("|", 1)[-1].strip() for line in done.stderr.decode().splitlines() if "|" in line}


def test_the_hook_imports_neither_the_cli_nor_an_http_library(home):
    """What ``memmy-kb hook AGENT`` loads: the entry, the hook and paths; no argparse, httpx, http.client,
    ssl, the SDK or typing."""
    modules = imported_modules(
        "-c",
        "import sys; sys.argv = ['memmy-kb', 'hook', 'codex']; from memmy_kb_client.entry import main; main()",
        stdin=event_bytes("codex"),
        env=env_for(home),
    )
    assert {"memmy_kb_client.agents.hook", "memmy_kb_client.home.paths", "socket"} <= modules
    assert {"memmy_kb_client.home.proof", "hmac"} <= modules  # the service proves itself first
    assert not modules & {
        "argparse",
        "httpx",
        "http.client",
        "ssl",
        "typing",
        "memmy_kb_client.sdk",
        "memmy_kb_client.cli",
        "memmy_kb_client.home.credentials",
        "authlib",
        "joserfc",
    }
