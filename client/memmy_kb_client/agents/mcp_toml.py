"""Codex CLI's ``config.toml``: our ``[mcp_servers.memmy-kb]`` table added, updated or taken out through
``tomlkit``, the rest of the file kept as written; every edit read back and compared with what it should
hold before it is written (docs/desktop.md, "Agents that search")."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memmy_kb_client.agents.mcp_entry import SERVER_NAME, ours, updated
from memmy_kb_client.agents.settings_file import SettingsError

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
    entry = updated(ours(current.unwrap() if current is not None else None, path), fresh)
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
    ours(servers[SERVER_NAME].unwrap(), path)
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
