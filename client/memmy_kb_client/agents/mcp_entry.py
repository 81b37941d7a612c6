"""Our MCP server's entry in an agent's configuration, whatever the file's format: whether an entry found
under our name is ours (``ours``), and ours written over it keeping what the person added (``updated``)
(docs/desktop.md, "Agents that search")."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memmy_kb_client.agents.settings_file import SettingsError
from memmy_kb_client.home.paths import HOME_ENV

SERVER_NAME = "memmy-kb"


def updated(existing: Any, fresh: Mapping[str, Any]) -> dict[str, Any]:
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


def ours(existing: Any, path: Path) -> Any:
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
