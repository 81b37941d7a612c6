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


# -- What a person sets once for each agent, pointed at the fake model ------------------------------------


def claude_env(home: Path, models_url: str, **extra: str) -> dict[str, str]:
    """Claude Code's environment: the fake model, an API key, no updater, telemetry or other traffic."""
    return agent_env(
        home,
        ANTHROPIC_BASE_URL=models_url,
        ANTHROPIC_API_KEY="sk-ant-fake",
        DISABLE_AUTOUPDATER="1",
        DISABLE_TELEMETRY="1",
        DISABLE_ERROR_REPORTING="1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        **extra,
    )


def codex_config(models_url: str) -> str:
    """The person's own Codex ``config.toml``: the fake model as the provider, no update check, no analytics."""
    return (
        'model = "gpt-5-codex"\n'
        'model_provider = "fake"\n'
        "check_for_update_on_startup = false\n"
        # `codex exec` starts the first turn after a short wait for MCP servers; ours (Python and the MCP
        # SDK) needs longer to list its tools on this machine.
        "mcp_optional_startup_grace_ms = 20000\n\n"
        "[analytics]\nenabled = false\n\n"
        "[model_providers.fake]\n"
        'name = "fake"\n'
        f'base_url = "{models_url}/v1"\n'
        'wire_api = "responses"\n'
        f'env_key = "{MODEL_KEY_ENV}"\n'
    )


def gemini_settings(home: Path, work: Path, server: str, tool: str, **settings: Any) -> None:
    """Gemini CLI's settings: the API key login, no usage statistics or updates, ``settings`` besides;
    ``work`` trusted; and the rule "Allow always" saves for our MCP ``server``'s ``tool`` (without a prompt
    to answer, -p runs only tools a policy allows)."""
    write_json(
        home / ".gemini" / "settings.json",
        {
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "privacy": {"usageStatisticsEnabled": False},
            "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
            **settings,
        },
    )
    write_json(home / ".gemini" / "trustedFolders.json", {str(work): "TRUST_FOLDER"})
    policies = home / ".gemini" / "policies"
    policies.mkdir(parents=True)
    (policies / f"{server}.toml").write_text(
        f'[[rule]]\nmcpName = "{server}"\ntoolName = "{tool}"\ndecision = "allow"\npriority = 100\n'
    )


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
