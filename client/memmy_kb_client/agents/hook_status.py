"""What ``memmy-kb hook install`` says once it has written (the service's state, what is left to do in
the agent), and ``memmy-kb hook status``: each agent's install, its hook's last run and its MCP server
(docs/desktop.md, "The hooks")."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memmy_kb_client.agents.hook_install import AGENTS, home_in, installed_command
from memmy_kb_client.agents.mcp_install import registered
from memmy_kb_client.home import paths
from memmy_kb_client.home.advice import command, how_to_start


def check_sentence() -> str:
    """The last line of the install message, naming ``hook status`` as the person can run it."""
    return f"After your next prompt, `{command('hook', 'status')}` shows whether the hook ran and what it found."


def agent_steps(agent: str, project: Path | None) -> list[str]:
    """What the person must still do in ``agent`` before it runs the hook."""
    if agent == "claude-code":
        return ["Claude Code reads its hooks when a session starts: start a new one (`/hooks` lists them)."]
    if agent == "codex":
        return [
            "Codex runs a hook only once you have trusted it: open `/hooks` in an interactive `codex` "
            "session and trust this one. Trust holds for this exact command: trust it again after the "
            "command changes (a reinstall from a moved or new virtualenv, another MEMMY_KB_HOME).",
            "Until then `codex exec` skips the hook without a word. Older Codex releases also need "
            "`[features] codex_hooks = true` in config.toml.",
        ]
    folder = f"trust {project.absolute()}" if project is not None else "trust each folder you use it in"
    return [
        f"Gemini CLI runs no hooks in an untrusted folder (it asks when it starts there): {folder}. "
        "Its hooks system must be on (`/hooks panel`; on the stable channel `hooksConfig.enabled: true` "
        "in settings.json).",
        "Gemini CLI wraps the block in <hook_context>, escapes its < and >, and also sends the prompt "
        "with the block to its routing model.",
    ]


def install_message(agent: str, project: Path | None, env: Mapping[str, str]) -> list[str]:
    """The lines printed after the hook was installed for ``agent``."""
    from memmy_kb_client.home.service_state import service_state

    _, sentence = service_state(paths.desktop_dir(env))
    return [sentence, *agent_steps(agent, project), check_sentence()]


_OUTCOMES = {
    "ok": "ok",
    "empty": "empty (nothing in your knowledge bases matched)",
    "skipped": "skipped (a slash command or an acknowledgement: nothing to search)",
    "no_prompt": "no prompt in the agent's event",
    "timeout": "timed out",
    "refused": "the service refused the hook token",
    "service_error": "the desktop service answered with an error",
    "output_failed": "could not write to the agent",
    "cloud_unreachable": "the cloud was unreachable",
    "cloud_timeout": "the cloud did not answer in time",
    "cloud_error": "the cloud failed",
    "rate_limited": "rate limited: your account asked the cloud for more recalls than its limit allows just "
    "now (your agents' turns and searches together), so this turn got no excerpts",
}


def _advised_outcome(outcome: str, state_dir: str) -> str | None:
    """The outcomes whose sentence names a command, worded for the home of ``state_dir`` as the person
    can run it (``advice``); None for any other outcome."""
    login = f"`{command('desktop', 'login', home=os.path.dirname(state_dir))}`"
    start = how_to_start(state_dir, with_home=True)
    sentences = {
        "no_service": f"no desktop service found ({start})",
        "service_unreachable": f"the desktop service was unreachable (is it running? {start})",
        "not_the_service": "the program on the port in service.json did not prove it is the desktop service; "
        f"nothing was sent ({start} again)",
        "logged_out": f"logged out (run {login})",
        "login_expired": f"the login has expired (run {login})",
        "login_refused": f"the cloud refused the login (run {login} again)",
    }
    return sentences.get(outcome)


def _resumes(record: dict[str, Any]) -> str:
    """When a rate-limited hook gets excerpts again: the cloud's wait after the run's time."""
    wait = record.get("retry_after")
    if type(wait) is not int:
        return "; excerpts come back within seconds"
    try:
        at = datetime.strptime(str(record.get("at")), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return f"; the cloud asked to wait {wait} s"
    again = (at + timedelta(seconds=wait)).strftime("%H:%M:%SZ")
    return f"; the cloud asked to wait {wait} s (excerpts again from {again})"


def read_run(state_dir: str, agent: str) -> dict[str, Any] | None:
    """The hook's last-run record for ``agent`` in ``state_dir``, or None."""
    try:
        with open(paths.hook_run_file(state_dir, agent), encoding="utf-8") as handle:
            record = json.loads(handle.read(4096))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def describe_run(record: dict[str, Any] | None, state_dir: str) -> str:
    """One agent's last run, as ``hook status`` prints it; the advice fits the service of ``state_dir``."""
    if record is None:
        return "never ran (or skipped: Codex skips an untrusted hook, Gemini CLI an untrusted folder)"
    outcome = str(record.get("outcome"))
    text = _advised_outcome(outcome, state_dir) or _OUTCOMES.get(outcome, outcome)
    if outcome == "ok":
        count = record.get("excerpts")
        text += f" with {count} excerpt{'' if count == 1 else 's'}" if isinstance(count, int) else ""
    if outcome == "rate_limited":
        text += _resumes(record)
    took = f", {record['ms']} ms" if isinstance(record.get("ms"), int) else ""
    return f"last ran {record.get('at')}: {text}{took}"


def status(env: Mapping[str, str], project: Path | None = None) -> list[dict[str, Any]]:
    """Each agent's install and last run; the record is read from the home its installed command uses."""
    rows = []
    for agent in AGENTS:
        settings, command = installed_command(agent, project)
        home = home_in(command) if command else None
        state_dir = os.path.join(home, "desktop") if home else paths.desktop_dir(env)
        mcp_config, mcp_registered = registered(agent, project)
        rows.append(
            {
                "agent": agent,
                "settings": str(settings),
                "installed": command is not None,
                "state_dir": state_dir,
                "last_run": read_run(state_dir, agent),
                "mcp": {"config": str(mcp_config), "registered": mcp_registered},
            }
        )
    return rows


def render_status(rows: list[dict[str, Any]]) -> str:
    lines = []
    for row in rows:
        if not row["installed"]:
            lines.append(f"{row['agent']}: not installed in {row['settings']}")
        else:
            lines.append(f"{row['agent']}: installed in {row['settings']} (state: {row['state_dir']})")
            lines.append(f"  {describe_run(row['last_run'], row['state_dir'])}")
        mcp = row["mcp"]
        if mcp["registered"]:
            lines.append(f"  MCP server memmy-kb: registered in {mcp['config']}")
        else:
            mcp_install = command("hook", "install", row["agent"], "--mcp")
            lines.append(f"  MCP server memmy-kb: not registered (`{mcp_install}`)")
    return "\n".join(lines)
