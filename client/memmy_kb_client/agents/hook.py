"""Agent hooks: ``memmy-kb hook claude-code|codex|gemini`` reads the agent's event on stdin and prints
the turn's block, asked of the local service with the hook token on a raw socket (``home.raw_request``;
docs/desktop.md, "The hooks"). Run before every turn, it loads as little as it can and never gets in a
turn's way."""

from __future__ import annotations

import json
import os
import threading
import time

from memmy_kb_client.home import paths
from memmy_kb_client.home.proof import NotProven
from memmy_kb_client.home.raw_request import post_proven
from memmy_kb_client.recall_contract import MAX_QUERY_CHARS

# typing is not imported at run time (it costs the hook milliseconds); mypy reads TYPE_CHECKING as True.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import BinaryIO

    from memmy_kb_client.home.service_replies import HookRecallReply

TIMEOUT_ENV = "MEMMY_KB_HOOK_TIMEOUT_SECONDS"
# The service waits up to 3.5 s for the cloud (whose own MemOS budget is 2.5 s): a slow but successful
# search still reaches the turn, and a dead cloud costs a turn little.
DEFAULT_TIMEOUT_SECONDS = 4.0
MAX_TIMEOUT_SECONDS = 30.0
MAX_STDIN_BYTES = 4 * 1024 * 1024
RECALL_PATH = "/hook/recall"

# agent -> the event it runs on
AGENTS = {"claude-code": "UserPromptSubmit", "codex": "UserPromptSubmit", "gemini": "BeforeAgent"}


def hook_timeout(env: Mapping[str, str]) -> float:
    """The overall deadline in seconds: ``MEMMY_KB_HOOK_TIMEOUT_SECONDS``, else the default."""
    try:
        value = float(env.get(TIMEOUT_ENV, ""))
    except ValueError:
        return DEFAULT_TIMEOUT_SECONDS
    if not 0 < value <= MAX_TIMEOUT_SECONDS:
        return DEFAULT_TIMEOUT_SECONDS
    return value


def prompt_from_event(raw: bytes | str, event_name: str = "UserPromptSubmit") -> str | None:
    """The prompt of an ``event_name`` event, trimmed to what the service accepts; None otherwise."""
    try:
        event = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(event, dict) or event.get("hook_event_name", event_name) != event_name:
        return None
    prompt = event.get("prompt")
    if not isinstance(prompt, str):
        return None
    return prompt.strip()[:MAX_QUERY_CHARS].strip() or None


# What the service's reply says of the cloud (``cloud``) -> the outcome the run record keeps.
_CLOUD_OUTCOMES = {
    "logged_out": "logged_out",
    "expired": "login_expired",
    "unauthorized": "login_refused",
    "unreachable": "cloud_unreachable",
    "timeout": "cloud_timeout",
    "cloud_error": "cloud_error",
    "bad_reply": "cloud_error",
    "skipped": "skipped",
    "rate_limited": "rate_limited",
}


def recall_outcome(
    prompt: str, agent: str, env: Mapping[str, str], deadline: float
) -> tuple[str, str, int, dict[str, int]]:
    """The block for ``prompt`` from the local service, built for ``agent`` ("" when there is none), the
    outcome to record, how many excerpts the block holds and what else the record keeps. The outcome:
    ``ok``, ``empty``, ``skipped`` (nothing to search), ``no_service``, ``not_the_service`` (the listener
    did not prove itself: nothing sent), ``refused``, ``service_error``, or what the service says of the
    cloud (``logged_out``..., ``rate_limited`` with the seconds to wait as ``retry_after``)."""
    state_dir = paths.desktop_dir(env)
    token = paths.read_token(state_dir, paths.HOOK_TOKEN_FILE)
    recorded = paths.read_service(state_dir)
    if token is None or recorded is None:
        return "", "no_service", 0, {}
    body = json.dumps({"query": prompt, "agent": agent}).encode("utf-8")
    try:
        status, payload = post_proven(int(str(recorded["port"])), token, "hook", RECALL_PATH, body, deadline)
    except NotProven:
        return "", "not_the_service", 0, {}
    if status != 200:
        return "", "refused" if status in (401, 403) else "service_error", 0, {}
    # Read warily all the same: a service of another version may answer another shape.
    reply: HookRecallReply = json.loads(payload)
    if not isinstance(reply, dict):
        return "", "service_error", 0, {}
    context, excerpts, wait = reply.get("context"), reply.get("excerpts"), reply.get("retry_after")
    if isinstance(context, str) and context.strip():
        return context, "ok", excerpts if type(excerpts) is int else 0, {}
    cloud = reply.get("cloud")
    outcome = _CLOUD_OUTCOMES.get(cloud, "empty") if isinstance(cloud, str) else "empty"
    return "", outcome, 0, {"retry_after": wait} if outcome == "rate_limited" and type(wait) is int else {}


def record_run(
    agent: str, env: Mapping[str, str], outcome: str, excerpts: int, elapsed: float, extra: Mapping[str, int] | None = None
) -> None:
    """Note this run in ``desktop/hook-last-AGENT.json`` (0600): when, the outcome, how many excerpts, how
    long and ``extra`` (``retry_after`` of a rate-limited recall); never the prompt or the excerpts. Cheap
    (no fsync) and silent: a failure is ignored."""
    try:
        state_dir = paths.desktop_dir(env)
        if not os.path.isdir(state_dir):
            os.makedirs(state_dir, mode=0o700, exist_ok=True)
        record = {
            "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "outcome": outcome,
            "excerpts": excerpts,
            "ms": round(elapsed * 1000),
            **(extra or {}),
        }
        paths.write_private(paths.hook_run_file(state_dir, agent), json.dumps(record).encode(), sync=False)
    except Exception:  # noqa: S110 - the record is a diagnosis aid; the turn must not pay for it
        pass


def render(agent: str, context: str) -> bytes:
    """What ``agent`` reads on stdout: the block as plain text, or Gemini CLI's JSON."""
    if agent == "gemini":
        # ASCII-only JSON: Gemini CLI decodes stdout chunk by chunk, which would break a split UTF-8 char.
        output = {"hookSpecificOutput": {"hookEventName": "BeforeAgent", "additionalContext": context}}
        return json.dumps(output, ensure_ascii=True).encode("ascii") + b"\n"
    return context.encode("utf-8") + b"\n"


def run(agent: str, stdin: BinaryIO, stdout: BinaryIO, env: Mapping[str, str]) -> int:
    """Read ``agent``'s event from ``stdin``, write its excerpts to ``stdout``; always returns 0.

    A hook never gets in a turn's way: on any failure (no service, a refused token, a slow cloud, an
    unreadable event) it prints nothing, within its deadline, and the run record says what happened
    (``hook status``). ``stdin`` and ``stdout`` are binary streams (``sys.stdin.buffer``...).
    """
    timeout = hook_timeout(env)
    started = time.monotonic()
    deadline = started + timeout
    found: list[tuple[str, str, int, dict[str, int]]] = []

    def work() -> None:
        # Deliberately broad: whatever goes wrong, the turn goes ahead without excerpts.
        try:
            prompt = prompt_from_event(stdin.read(MAX_STDIN_BYTES), AGENTS[agent])
            found.append(recall_outcome(prompt, agent, env, deadline) if prompt else ("", "no_prompt", 0, {}))
        except TimeoutError:
            found.append(("", "timeout", 0, {}))
        except OSError:
            found.append(("", "service_unreachable", 0, {}))
        except Exception:
            found.append(("", "service_error", 0, {}))

    # The deadline covers everything, reading stdin included; a worker still stuck in a read or a
    # connection is abandoned (a daemon thread does not hold up the exit).
    worker = threading.Thread(target=work, name="memmy-kb-hook", daemon=True)
    worker.start()
    worker.join(timeout)
    # A rate-limited recall is no failure to show the agent: like every other, it prints nothing.
    context, outcome, excerpts, extra = found[0] if found else ("", "timeout", 0, {})
    if context.strip():
        try:
            stdout.write(render(agent, context))
            stdout.flush()
        except (OSError, ValueError):
            outcome = "output_failed"
    record_run(agent, env, outcome, excerpts, time.monotonic() - started, extra)
    return 0


def main(agent: str) -> int:
    """The entry point ``memmy-kb hook AGENT`` takes without building the CLI parser."""
    import sys

    return run(agent, sys.stdin.buffer, sys.stdout.buffer, os.environ)
