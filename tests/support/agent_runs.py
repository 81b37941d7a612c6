"""Running a pinned agent CLI offline against the fake model server, for the real agents' tier
(``tests/agents``): its environment, its run, and where each model API's requests keep the prompt and the
tool results."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support import fake_models

AGENT_TIMEOUT_SECONDS = 180
MODEL_KEY_ENV = "MEMMY_FAKE_MODEL_KEY"


@dataclass(frozen=True)
class Run:
    """One agent's run: where it lives, what it printed."""

    home: Path
    work: Path
    done: subprocess.CompletedProcess[str]

    def output(self) -> str:
        return f"exit {self.done.returncode}\nstdout:\n{self.done.stdout[-4000:]}\nstderr:\n{self.done.stderr[-4000:]}"


def agent_env(home: Path, **extra: str) -> dict[str, str]:
    """What the agent starts with: a HOME of its own, no Memmy setting (the hook's command carries its
    ``MEMMY_KB_HOME``), no credential of this machine."""
    return {"PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8", "TERM": "dumb", **extra}


def run_agent(argv: list[str], home: Path, work: Path, env: dict[str, str]) -> Run:
    done = subprocess.run(  # noqa: S603 - the pinned agent, offline
        argv,
        cwd=work,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=AGENT_TIMEOUT_SECONDS,
        check=False,
    )
    return Run(home, work, done)


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n")


@dataclass(frozen=True)
class Api:
    name: str
    prompt_text: Callable[[dict[str, Any]], str]
    tool_results: Callable[[dict[str, Any]], list[str]]


APIS = {
    "anthropic": Api("anthropic", fake_models.anthropic_user_text, fake_models.anthropic_tool_results),
    "openai": Api("openai", fake_models.openai_text, fake_models.openai_tool_results),
    "gemini": Api("gemini", fake_models.gemini_user_text, fake_models.gemini_tool_results),
}
