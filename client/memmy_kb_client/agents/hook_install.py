"""``memmy-kb hook install AGENT [--project DIR] [--uninstall]``: our one hook entry merged into (or taken
out of) the agent's settings file, every other hook and setting kept, the file written back in its own
style (docs/desktop.md, "memmy-kb hook install")."""

from __future__ import annotations

import difflib
import json
import os
import re
import shlex
import shutil
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memmy_kb_client.agents.settings_file import SettingsError as SettingsError
from memmy_kb_client.agents.settings_file import editing, followed, read_settings, write_settings
from memmy_kb_client.home.paths import HOME_ENV, memmy_home

# The hook's own deadline is 4 s; the agent's is an outer guard only.
AGENT_TIMEOUT_SECONDS = 10


@dataclass(frozen=True)
class Agent:
    name: str
    event: str
    user_file: Callable[[], Path]
    project_file: Callable[[Path], Path]
    entry: Callable[[str], dict[str, Any]]


def _claude_home() -> Path:
    return Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude")


def _codex_home() -> Path:
    return Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex")


AGENTS: dict[str, Agent] = {
    "claude-code": Agent(
        "claude-code",
        "UserPromptSubmit",
        lambda: _claude_home() / "settings.json",
        lambda project: project / ".claude" / "settings.json",
        lambda command: {"type": "command", "command": command, "timeout": AGENT_TIMEOUT_SECONDS},
    ),
    "codex": Agent(
        "codex",
        "UserPromptSubmit",
        lambda: _codex_home() / "hooks.json",
        lambda project: project / ".codex" / "hooks.json",
        lambda command: {
            "type": "command",
            "command": command,
            "timeout": AGENT_TIMEOUT_SECONDS,
            "statusMessage": "Searching your Memmy knowledge bases",
        },
    ),
    "gemini": Agent(
        "gemini",
        "BeforeAgent",
        lambda: Path.home() / ".gemini" / "settings.json",
        lambda project: project / ".gemini" / "settings.json",
        lambda command: {
            "name": "memmy-kb-recall",
            "type": "command",
            "command": command,
            "timeout": AGENT_TIMEOUT_SECONDS * 1000,
            "description": "Excerpts from your Memmy knowledge bases for this turn",
        },
    ),
}


def hook_command(agent: str, env: Mapping[str, str] | None = None) -> str:
    """The absolute command the agent runs: this installation's ``memmy-kb hook AGENT``.

    A state directory other than the default (``$MEMMY_KB_HOME`` in ``env``, the environment by default)
    goes into the command as ``env MEMMY_KB_HOME=/abs/path ...``: the agent does not inherit the variable
    from the shell the install ran in. All three agents run the command through a shell, and ``env``
    works without one too. The default home writes no variable.
    """
    program = " ".join(shlex.quote(word) for word in program_argv())
    home = installed_home(os.environ if env is None else env)
    prefix = f"env {HOME_ENV}={shlex.quote(home)} " if home is not None else ""
    return f"{prefix}{program} hook {agent}"


def program_argv() -> list[str]:
    """This installation's ``memmy-kb`` as absolute words: the console script beside this Python, else
    the one on PATH, else ``python -m memmy_kb_client.cli``. The hooks quote it into a shell command;
    the MCP registrations (``mcp_install``) take it as a command and its arguments."""
    script = Path(sys.executable).with_name("memmy-kb.exe" if os.name == "nt" else "memmy-kb")
    if script.exists():
        return [str(script.absolute())]
    if found := shutil.which("memmy-kb"):
        return [os.path.abspath(found)]
    return [sys.executable, "-m", "memmy_kb_client.cli"]


def installed_home(env: Mapping[str, str]) -> str | None:
    """``$MEMMY_KB_HOME`` as an absolute path when it is not the default home; None otherwise."""
    value = env.get(HOME_ENV)
    if not value:
        return None
    home = os.path.abspath(os.path.expanduser(value))
    default = os.path.abspath(memmy_home({}))
    return None if home == default else home


def home_in(command: str) -> str | None:
    """The ``MEMMY_KB_HOME`` an installed command sets (``env MEMMY_KB_HOME=...``), or None."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if len(words) > 1 and words[0] == "env" and words[1].startswith(f"{HOME_ENV}="):
        return words[1].split("=", 1)[1] or None
    return None


def _is_ours(handler: Any, agent: str) -> bool:
    if not isinstance(handler, dict) or not isinstance(handler.get("command"), str):
        return False
    pattern = rf"(?:memmy-kb(?:\.exe)?|memmy_kb_client\.cli)['\"]?\s+hook\s+{re.escape(agent)}(?:\s|$)"
    return re.search(pattern, handler["command"]) is not None


@dataclass(frozen=True)
class JsonStyle:
    indent: int | str | None
    separators: tuple[str, str]
    final_newline: bool
    ensure_ascii: bool

    @classmethod
    def of(cls, text: str | None) -> JsonStyle:
        if not text or not text.strip():
            return cls(2, (",", ": "), True, False)
        body = text.strip()
        ensure_ascii = text.isascii() and "\\u" in text
        if "\n" not in body:
            compact = re.search(r'":\S', body) is not None or re.search(r",\S", body) is not None
            return cls(None, (",", ":") if compact else (", ", ": "), text.endswith("\n"), ensure_ascii)
        match = re.search(r"\n([ \t]+)\S", body)
        indent: int | str = 2
        if match:
            whitespace = match.group(1)
            indent = whitespace if "\t" in whitespace else len(whitespace)
        return cls(indent, (",", ": "), text.endswith("\n"), ensure_ascii)

    def dump(self, data: Any) -> str:
        text = json.dumps(
            data, indent=self.indent, separators=self.separators, ensure_ascii=self.ensure_ascii
        )
        # A lone surrogate (read from a "\ud83d" escape: a string cut inside an emoji) has no UTF-8: it
        # goes back as the escape it was read from. A pair was read as one character.
        text = _LONE_SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)
        return text + ("\n" if self.final_newline else "")


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _hooks_of(data: Any, path: Path, create: bool) -> dict[str, Any] | None:
    if not isinstance(data, dict):
        raise SettingsError(f"{path} does not hold a JSON object")
    hooks = data.get("hooks")
    if hooks is None and create:
        hooks = data["hooks"] = {}
    if hooks is not None and not isinstance(hooks, dict):
        raise SettingsError(f'"hooks" in {path} is not an object')
    return hooks


def merged(text: str | None, agent: Agent, command: str, path: Path) -> str:
    """``text`` (the settings file, None when absent) with our entry in it."""
    data = load_settings(text, path)
    hooks = _hooks_of(data, path, create=True)
    assert hooks is not None
    groups = hooks.setdefault(agent.event, [])
    if not isinstance(groups, list):
        raise SettingsError(f'"hooks.{agent.event}" in {path} is not a list')
    entry = agent.entry(command)
    placed = False
    kept_groups = []
    for group in groups:
        if isinstance(group, dict) and isinstance(group.get("hooks"), list):
            handlers = []
            for handler in group["hooks"]:
                if _is_ours(handler, agent.name):
                    if placed:
                        continue  # a second copy of ours: one entry is enough
                    handler, placed = entry, True
                handlers.append(handler)
            if group["hooks"] and not handlers:
                continue  # a group that held only a duplicate of ours
            group["hooks"] = handlers
        kept_groups.append(group)
    groups[:] = kept_groups
    if not placed:
        groups.append({"hooks": [entry]})
    return JsonStyle.of(text).dump(data) if _changed(text, data) else str(text)


def without(text: str | None, agent: Agent, path: Path) -> str | None:
    """``text`` without our entry (and without the containers only it kept); None when the file is absent."""
    if text is None:
        return None
    data = load_settings(text, path)
    hooks = _hooks_of(data, path, create=False)
    if hooks is None or not isinstance(hooks.get(agent.event), list):
        return text
    removed = False
    groups = []
    for group in hooks[agent.event]:
        if isinstance(group, dict) and isinstance(group.get("hooks"), list):
            kept = [handler for handler in group["hooks"] if not _is_ours(handler, agent.name)]
            if len(kept) != len(group["hooks"]):
                removed = True
                if not kept:
                    continue
                group["hooks"] = kept
        groups.append(group)
    if not removed:
        return text
    if groups:
        hooks[agent.event] = groups
    else:
        del hooks[agent.event]
        if not hooks:
            del data["hooks"]
    return JsonStyle.of(text).dump(data)


def installed_command(agent_name: str, project: Path | None = None) -> tuple[Path, str | None]:
    """The settings file of ``agent_name`` and the command of our entry in it (None when there is none)."""
    agent = AGENTS[agent_name]
    path = settings_path(agent, project)
    try:
        data = json.loads(read_settings(path)[1] or "")
        hooks = _hooks_of(data, path, create=False) or {}
    except (OSError, ValueError, SettingsError):
        return path, None
    groups = hooks.get(agent.event)
    for group in groups if isinstance(groups, list) else []:
        handlers = group.get("hooks") if isinstance(group, dict) else None
        for handler in handlers if isinstance(handlers, list) else []:
            if _is_ours(handler, agent_name):
                return path, str(handler["command"])
    return path, None


def load_settings(text: str | None, path: Path) -> Any:
    if text is None or not text.strip():
        return {}
    try:
        return json.loads(text)
    except ValueError as err:
        raise SettingsError(f"{path} is not plain JSON ({err}); it was left as it is") from err


def _changed(text: str | None, data: Any) -> bool:
    return text is None or load_settings(text, Path()) != data


@dataclass(frozen=True)
class Change:
    path: Path
    before: str | None
    after: str | None

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        lines = difflib.unified_diff(
            (self.before or "").splitlines(keepends=True),
            (self.after or "").splitlines(keepends=True),
            fromfile=f"{self.path} (before)" if self.before is not None else "/dev/null",
            tofile=str(self.path),
        )
        return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def settings_path(agent: Agent, project: Path | None) -> Path:
    path = agent.project_file(project.absolute()) if project is not None else agent.user_file()
    # A settings file kept elsewhere behind a symlink (dotfile managers) is edited where it lives.
    return followed(path)


def apply(
    agent_name: str, *, project: Path | None = None, uninstall: bool = False, command: str | None = None
) -> Change:
    """Install (or uninstall) our entry in ``agent_name``'s settings file; the change made."""
    agent = AGENTS[agent_name]
    path = settings_path(agent, project)
    if uninstall:
        return edited(path, create=False, edit=lambda before: without(before, agent, path))
    hook = command or hook_command(agent.name)
    return edited(path, create=True, edit=lambda before: merged(before, agent, hook, path))


def edited(path: Path, *, create: bool, edit: Callable[[str | None], str | None]) -> Change:
    """``edit`` applied to the settings file's text (None: no file) under its lock, written when it changed."""
    with editing(path, create=create):
        form, before = read_settings(path)
        after = edit(before)
        change = Change(path, before, after)
        if change.changed and after is not None:
            write_settings(path, after, form)
    return change
