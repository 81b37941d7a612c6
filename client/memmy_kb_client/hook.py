"""Agent hooks: the turn's excerpts from the user's knowledge bases, printed for the agent to read.

``memmy-kb hook claude-code`` is a Claude Code ``UserPromptSubmit`` hook. Claude Code passes the event as
JSON on stdin (``prompt``, ``session_id``, ``cwd``, ``hook_event_name``, ...) and adds what a hook prints
on stdout, when it exits 0, to that turn's context. The hook prints the service's context block, which
already tells the agent that the excerpts are reference material and not instructions.

A hook must never get in the way of a turn: on any failure (no login, network, 401, 503, unreadable
stdin, timeout) it prints nothing and exits 0, within an overall deadline. It runs before every turn, so
only the standard library is imported until there is a prompt to search for.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any, BinaryIO, Final

TIMEOUT_ENV: Final = "MEMMY_KB_HOOK_TIMEOUT_SECONDS"
# Longer than the service's MemOS budget (2.5 s) plus a request's overhead, so that a slow but
# successful search still reaches the turn, and short enough that a dead network costs a turn little.
DEFAULT_TIMEOUT_SECONDS: Final = 4.0
MAX_TIMEOUT_SECONDS: Final = 30.0
# The service takes queries of up to 4000 characters; a longer prompt is searched by its beginning.
MAX_QUERY_CHARS: Final = 4000
EVENT_NAME: Final = "UserPromptSubmit"


def hook_timeout(env: Mapping[str, str]) -> float:
    """The overall deadline in seconds: ``MEMMY_KB_HOOK_TIMEOUT_SECONDS``, else the default."""
    try:
        value = float(env.get(TIMEOUT_ENV, ""))
    except ValueError:
        return DEFAULT_TIMEOUT_SECONDS
    if not 0 < value <= MAX_TIMEOUT_SECONDS:
        return DEFAULT_TIMEOUT_SECONDS
    return value


def prompt_from_event(raw: bytes | str) -> str | None:
    """The prompt of a ``UserPromptSubmit`` event, trimmed to what the service accepts; None otherwise."""
    try:
        event: Any = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(event, dict) or event.get("hook_event_name", EVENT_NAME) != EVENT_NAME:
        return None
    prompt = event.get("prompt")
    if not isinstance(prompt, str):
        return None
    return prompt.strip()[:MAX_QUERY_CHARS].strip() or None


def recall_context(prompt: str, timeout: float) -> str:
    """The context block for ``prompt`` from the saved login or MEMMY_KB_ENDPOINT / MEMMY_KB_TOKEN."""
    from memmy_kb_client.sdk import ClientConfig, MemmyClient

    config = ClientConfig.load()
    if not config.token:
        return ""
    with MemmyClient(config, timeout=timeout) as client:
        result = client.recall(prompt)
    context = result.get("context") if isinstance(result, dict) else None
    return context if isinstance(context, str) else ""


def run_claude_code(stdin: BinaryIO, stdout: BinaryIO, env: Mapping[str, str]) -> int:
    """Read the hook event from ``stdin``, write the context block to ``stdout``; always returns 0."""
    timeout = hook_timeout(env)
    found: list[str] = []

    def work() -> None:
        # Deliberately broad: whatever goes wrong, the turn goes ahead without excerpts.
        try:
            prompt = prompt_from_event(stdin.read())
            if prompt:
                found.append(recall_context(prompt, timeout))
        except Exception:  # noqa: S110 - printing nothing is this hook's whole error handling
            pass

    # The deadline covers everything, reading stdin included; a worker still stuck in a read or a
    # connection is abandoned (a daemon thread does not hold up the exit).
    worker = threading.Thread(target=work, name="memmy-kb-hook", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive() or not found or not found[0].strip():
        return 0
    try:
        stdout.write(found[0].encode("utf-8") + b"\n")
        stdout.flush()
    except (OSError, ValueError):
        pass
    return 0
