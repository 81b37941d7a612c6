"""``memmy-kb hook install AGENT --mcp [--project DIR] [--uninstall]``: ``memmy-kb mcp`` registered in
(or taken out of) the agent's own MCP configuration, JSON or Codex's ``config.toml``, everything else kept
(docs/desktop.md, "Agents that search")."""

from __future__ import annotations

import os
import re
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
from memmy_kb_client.agents.settings_file import SettingsError, followed, read_settings
from memmy_kb_client.home.paths import HOME_ENV

SERVER_NAME = "memmy-kb"


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


def _updated(existing: Any, fresh: Mapping[str, Any]) -> dict[str, Any]:
    """``existing`` (our entry as found) with ``fresh``'s values: keys the person added are kept, and so
    are their own ``env`` variables; only ``MEMMY_KB_HOME`` in it is ours."""
    entry = dict(existing) if isinstance(existing, Mapping) else {}
    theirs = entry.get("env")
    kept = (
        {key: value for key, value in theirs.items() if key != HOME_ENV}
        if isinstance(theirs, Mapping)
        else {}
    )
    env = kept | dict(fresh.get("env", {}))
    entry.update({key: value for key, value in fresh.items() if key != "env"})
    if env or "env" in fresh:
        entry["env"] = env
    else:
        entry.pop("env", None)
    return entry


def _ours(existing: Any, path: Path) -> Any:
    """``existing``, refused when it does not run this client (``npx ...``, a URL, a container): an entry
    named ``memmy-kb`` that is someone else's server, neither to overwrite nor to remove. Ours, from any
    installation, runs a ``memmy-kb`` executable or Python with ``-m memmy_kb_client.cli``."""
    command = existing.get("command") if isinstance(existing, Mapping) else None
    args = existing.get("args") if isinstance(existing, Mapping) else None
    program = re.split(r"[\\/]", command)[-1].lower() if isinstance(command, str) else None
    if existing is None or program in ("memmy-kb", "memmy-kb.exe"):
        return existing
    if program is not None and isinstance(args, list) and "memmy_kb_client.cli" in args:
        return existing
    what = f"runs {command!r}" if isinstance(command, str) else "runs no command"
    raise SettingsError(
        f'the MCP server named "{SERVER_NAME}" in {path} {what}, not this client\'s memmy-kb mcp; it was '
        "left as it is: rename or remove it, then run this again"
    )


# -- JSON: Claude Code and Gemini CLI -------------------------------------------------------------------


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
    servers[SERVER_NAME] = _updated(_ours(servers.get(SERVER_NAME), path), fresh)
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
    _ours(servers[SERVER_NAME], path)
    del servers[SERVER_NAME]
    if not servers:
        del data["mcpServers"]
    return JsonStyle.of(text).dump(data)


# -- TOML: Codex CLI -------------------------------------------------------------------------------------

_OUR_HEADER = re.compile(
    r'^[ \t]*\[[ \t]*mcp_servers[ \t]*\.[ \t]*(?:memmy-kb|"memmy-kb"|\'memmy-kb\')[ \t]*\]'
)
_ANY_HEADER = re.compile(r"^[ \t]*\[")


def _parse_toml(text: str, path: Path) -> Any:
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    try:
        return tomlkit.parse(text)
    except TOMLKitError as err:
        raise SettingsError(f"{path} is not valid TOML ({err}); it was left as it is") from err


def _plain(text: str, path: Path) -> dict[str, Any]:
    value: dict[str, Any] = _parse_toml(text, path).unwrap()
    return value


def _toml_servers(doc: Any, path: Path) -> Any:
    servers = doc.get("mcp_servers")
    if servers is not None and not isinstance(servers, dict):
        raise SettingsError(f"mcp_servers in {path} is not a table; it was left as it is")
    return servers


def _expected(before: dict[str, Any], entry: dict[str, Any] | None) -> dict[str, Any]:
    """``before`` with our server set to ``entry`` (or taken out, and an emptied ``mcp_servers`` too)."""
    after = dict(before)
    servers = dict(after.get("mcp_servers") or {})
    if entry is None:
        servers.pop(SERVER_NAME, None)
    else:
        servers[SERVER_NAME] = entry
    if servers:
        after["mcp_servers"] = servers
    else:
        after.pop("mcp_servers", None)
    return after


def _checked(candidate: str, expected: dict[str, Any], path: Path) -> str | None:
    try:
        return candidate if _plain(candidate, path) == expected else None
    except SettingsError:
        return None


def merged_toml(text: str | None, fresh: Mapping[str, Any], path: Path) -> str:
    import tomlkit
    from tomlkit.exceptions import TOMLKitError
    from tomlkit.items import Table

    source = text or ""
    doc = _parse_toml(source, path)
    servers = _toml_servers(doc, path)
    current = servers.get(SERVER_NAME) if servers is not None else None
    entry = _updated(_ours(current.unwrap() if current is not None else None, path), fresh)
    expected = _expected(doc.unwrap(), entry)
    if doc.unwrap() == expected:
        return source if text is not None else tomlkit.dumps(doc)
    if current is None:
        # A new table at the end of the file (a blank line before it), so an uninstall can cut it out.
        block = tomlkit.dumps({"mcp_servers": {SERVER_NAME: _toml_entry(entry)}})
        lead = "" if not source.strip() else ("\n" if source.endswith("\n") else "\n\n")
        appended = _checked(source + lead + block, expected, path)
        if appended is not None:
            return appended
    try:
        if servers is None:
            servers = tomlkit.table(is_super_table=True)
            doc.append("mcp_servers", servers)
        if current is None:
            servers.append(SERVER_NAME, _toml_entry(entry, inline=not isinstance(servers, Table)))
        else:
            for key, value in entry.items():
                if key not in current or current[key].unwrap() != value:
                    current[key] = _toml_entry(value, inline=True) if key == "env" else value
            for key in [key for key in current if key not in entry]:
                del current[key]
        edited: str | None = _checked(tomlkit.dumps(doc), expected, path)
    except (ValueError, TypeError, KeyError, TOMLKitError):
        edited = None
    if edited is None:
        raise SettingsError(
            f"could not add [mcp_servers.{SERVER_NAME}] to {path} safely; it was left as it is"
        )
    return edited


def _toml_entry(value: Mapping[str, Any], *, inline: bool = False) -> Any:
    """Our entry as a table (or an inline one, inside an inline ``mcp_servers``), its ``env`` always an
    inline table (``env = {MEMMY_KB_HOME = "..."}``)."""
    import tomlkit

    table = tomlkit.inline_table() if inline else tomlkit.table()
    for key, item in value.items():
        table[key] = _toml_entry(item, inline=True) if isinstance(item, Mapping) else item
    return table


def without_toml(text: str | None, path: Path) -> str | None:
    if text is None:
        return None
    doc = _parse_toml(text, path)
    servers = _toml_servers(doc, path)
    if servers is None or SERVER_NAME not in servers:
        return text
    _ours(servers[SERVER_NAME].unwrap(), path)
    expected = _expected(doc.unwrap(), None)
    cut = _checked(_cut_block(text), expected, path)
    if cut is not None:
        return cut
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    try:
        del servers[SERVER_NAME]
        if not servers:
            del doc["mcp_servers"]
        edited: str | None = _checked(tomlkit.dumps(doc), expected, path)
    except (ValueError, TypeError, KeyError, TOMLKitError):
        edited = None
    if edited is None:
        raise SettingsError(
            f"could not remove [mcp_servers.{SERVER_NAME}] from {path} safely; it was left as it is"
        )
    return edited


def _cut_block(text: str) -> str:
    """``text`` without the lines from our table's header to the next header (or the end), and the blank
    line an install put before it."""
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if _OUR_HEADER.match(line)), None)
    if start is None:
        return text
    end = next((i for i in range(start + 1, len(lines)) if _ANY_HEADER.match(lines[i])), len(lines))
    block_end = end
    while block_end > start + 1 and not lines[block_end - 1].strip():
        block_end -= 1  # blank lines after our table belong to what follows
    if start > 0 and not lines[start - 1].strip():
        start -= 1
    elif start == 0:
        while block_end < len(lines) and not lines[block_end].strip():
            block_end += 1  # nothing before it: neither a blank line after it
    return "".join(lines[:start] + lines[block_end:])


# -- Both -----------------------------------------------------------------------------------------------


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
        return path, isinstance(servers, dict) and _ours(servers.get(SERVER_NAME), path) is not None
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
