"""``memmy-kb hook install AGENT --mcp [--project DIR] [--uninstall]``: ``memmy-kb mcp`` registered in
(or taken out of) the agent's own MCP configuration, JSON or Codex's ``config.toml``, everything else kept
(docs/desktop.md, "Agents that search")."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memmy_kb_client.agents.hook_install import (
    Change,
    JsonStyle,
    edited,
    installed_home,
    load_settings,
    program_argv,
)
from memmy_kb_client.agents.mcp_entry import SERVER_NAME, ours, updated
from memmy_kb_client.agents.mcp_toml import merged_toml, without_toml
from memmy_kb_client.agents.settings_file import SettingsError, followed, read_settings
from memmy_kb_client.home.paths import HOME_ENV


def _claude_json() -> Path:
    configured = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(configured) / ".claude.json" if configured else Path.home() / ".claude.json"


def _codex_home() -> Path:
    return Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex")


@dataclass(frozen=True)
class McpTarget:
    agent: str
    user_file: Callable[[], Path]
    project_file: Callable[[Path], Path]
    toml: bool
    # Claude Code writes ``"type": "stdio"`` and an ``env`` object even when it is empty (as `claude mcp
    # add` does); the others take neither.
    claude_shape: bool


TARGETS: dict[str, McpTarget] = {
    "claude-code": McpTarget(
        "claude-code", _claude_json, lambda project: project / ".mcp.json", toml=False, claude_shape=True
    ),
    "codex": McpTarget(
        "codex",
        lambda: _codex_home() / "config.toml",
        lambda project: project / ".codex" / "config.toml",
        toml=True,
        claude_shape=False,
    ),
    "gemini": McpTarget(
        "gemini",
        lambda: Path.home() / ".gemini" / "settings.json",
        lambda project: project / ".gemini" / "settings.json",
        toml=False,
        claude_shape=False,
    ),
}


def server_entry(agent: str, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Our server as ``agent`` registers it: this ``memmy-kb`` with ``mcp``, and the state directory."""
    words = program_argv()
    home = installed_home(os.environ if env is None else env)
    entry: dict[str, Any] = {"command": words[0], "args": [*words[1:], "mcp"]}
    if TARGETS[agent].claude_shape:
        entry = {"type": "stdio", **entry, "env": {}}
    if home is not None:
        entry["env"] = {HOME_ENV: home}
    return entry


# -- JSON: Claude Code and Gemini CLI (Codex's TOML: mcp_toml.py) -------------------------------------


def _servers_of(data: Any, path: Path, create: bool) -> dict[str, Any] | None:
    if not isinstance(data, dict):
        raise SettingsError(f"{path} does not hold a JSON object; it was left as it is")
    servers = data.get("mcpServers")
    if servers is None and create:
        servers = data["mcpServers"] = {}
    if servers is not None and not isinstance(servers, dict):
        raise SettingsError(f'"mcpServers" in {path} is not an object; it was left as it is')
    return servers


def merged_json(text: str | None, fresh: Mapping[str, Any], path: Path) -> str:
    data = load_settings(text, path)
    servers = _servers_of(data, path, create=True)
    assert servers is not None
    servers[SERVER_NAME] = updated(ours(servers.get(SERVER_NAME), path), fresh)
    if text is not None and load_settings(text, path) == data:
        return text
    return JsonStyle.of(text).dump(data)


def without_json(text: str | None, path: Path) -> str | None:
    if text is None:
        return None
    data = load_settings(text, path)
    servers = _servers_of(data, path, create=False)
    if servers is None or SERVER_NAME not in servers:
        return text
    ours(servers[SERVER_NAME], path)
    del servers[SERVER_NAME]
    if not servers:
        del data["mcpServers"]
    return JsonStyle.of(text).dump(data)


def config_path(agent: str, project: Path | None) -> Path:
    target = TARGETS[agent]
    path = target.project_file(project.absolute()) if project is not None else target.user_file()
    # A configuration kept elsewhere behind a symlink (dotfile managers) is edited where it lives.
    return followed(path)


def apply(
    agent: str,
    *,
    project: Path | None = None,
    uninstall: bool = False,
    entry: Mapping[str, Any] | None = None,
) -> Change:
    """Register (or unregister) our MCP server in ``agent``'s configuration; the change made."""
    target = TARGETS[agent]
    path = config_path(agent, project)
    fresh = dict(entry) if entry is not None else server_entry(agent)
    if uninstall:
        remove = without_toml if target.toml else without_json
        return edited(path, create=False, edit=lambda before: remove(before, path))
    merge = merged_toml if target.toml else merged_json
    return edited(path, create=True, edit=lambda before: merge(before, fresh, path))


def registered(agent: str, project: Path | None = None) -> tuple[Path, bool]:
    """``agent``'s MCP configuration file and whether our server is in it (``hook status``)."""
    import json
    import tomllib

    path = config_path(agent, project)
    try:
        text = read_settings(path)[1] or ""
        data = tomllib.loads(text) if TARGETS[agent].toml else json.loads(text)
        key = "mcp_servers" if TARGETS[agent].toml else "mcpServers"
        servers = data.get(key) if isinstance(data, dict) else None
        return path, isinstance(servers, dict) and ours(servers.get(SERVER_NAME), path) is not None
    except (OSError, ValueError, SettingsError):  # unreadable, or someone else's server by that name
        return path, False


def agent_steps(agent: str, project: Path | None) -> list[str]:
    """What the person does next in ``agent`` for it to start the server."""
    if agent == "claude-code":
        steps = [
            "Claude Code starts MCP servers when a session starts: start a new one; `/mcp` lists memmy-kb."
        ]
        if project is not None:
            steps.append(
                "Claude Code asks before it uses a server from a project's .mcp.json: approve memmy-kb. "
                "The file names this machine's memmy-kb path; keep it out of version control if others share it."
            )
        return steps
    if agent == "codex":
        steps = [
            "Codex starts MCP servers with each session: start a new one; `/mcp` lists memmy-kb.",
            "`codex exec` may ask the model before memmy-kb has listed its tools (a second or two): "
            "`mcp_optional_startup_grace_ms = 20000` at the top of config.toml makes it wait for them.",
        ]
        if project is not None:
            steps.append("Codex reads a project's .codex/config.toml only once you have trusted the project.")
        return steps
    return [
        "Gemini CLI starts MCP servers when it starts: restart it; `/mcp` lists memmy-kb.",
        '`gemini -p` offers the model only the tools a policy allows: answer "Allow always" once when '
        "Gemini CLI first asks to run search_knowledge.",
        *(
            [f"Gemini CLI reads {project.absolute()}/.gemini/settings.json only in a trusted folder."]
            if project is not None
            else []
        ),
    ]
