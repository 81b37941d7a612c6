"""``memmy-kb hook install``: our entry merged into each agent's settings, idempotently, every other hook
and setting kept; an install and an uninstall leave the file byte-identical."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from memmy_kb_client.agents.hook_install import AGENTS, SettingsError, apply, hook_command
from memmy_kb_client.cli import main as cli

COMMAND = "/opt/memmy/bin/memmy-kb hook {agent}"
EVENT = {"claude-code": "UserPromptSubmit", "codex": "UserPromptSubmit", "gemini": "BeforeAgent"}

# Settings as the agents and people keep them: other events, another hook on our event, other keys.
OTHERS: dict[str, Any] = {
    "model": "opus",
    "permissions": {"allow": ["Bash(git status)"], "deny": []},
    "hooks": {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "audit.sh", "timeout": 5}]}
        ],
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "~/bin/branch-context.sh"}]}],
        "BeforeAgent": [
            {"hooks": [{"name": "git", "type": "command", "command": "git-ctx", "timeout": 3000}]}
        ],
    },
    "note": "中文设置 ✓",
}


@pytest.fixture(autouse=True)
def homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "user"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("MEMMY_KB_HOME", raising=False)
    return home


def user_file(home: Path, agent: str) -> Path:
    return (
        home
        / {
            "claude-code": ".claude/settings.json",
            "codex": ".codex/hooks.json",
            "gemini": ".gemini/settings.json",
        }[agent]
    )


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8"))


def ours(data: dict[str, Any], agent: str) -> list[dict[str, Any]]:
    return [
        handler
        for group in data.get("hooks", {}).get(EVENT[agent], [])
        for handler in group.get("hooks", [])
        if handler.get("command", "").endswith(f"memmy-kb hook {agent}")
    ]


STYLES = {
    "2-space": lambda data: json.dumps(data, indent=2, ensure_ascii=False) + "\n",
    "4-space, no final newline": lambda data: json.dumps(data, indent=4, ensure_ascii=False),
    "tabs": lambda data: json.dumps(data, indent="\t", ensure_ascii=False) + "\n",
    "ascii escapes": lambda data: json.dumps(data, indent=2) + "\n",
    "compact": lambda data: json.dumps(data, separators=(",", ":"), ensure_ascii=False),
    "one line": lambda data: json.dumps(data, ensure_ascii=False) + "\n",
}


@pytest.mark.parametrize("style", list(STYLES))
@pytest.mark.parametrize("agent", list(AGENTS))
def test_install_then_uninstall_leaves_the_file_byte_identical(homes, agent, style):
    path = user_file(homes, agent)
    original = STYLES[style](OTHERS)
    write(path, original)

    installed = apply(agent, command=COMMAND.format(agent=agent))
    data = json.loads(path.read_text(encoding="utf-8"))
    assert installed.changed
    assert len(ours(data, agent)) == 1
    # Every other setting and hook is still there, as it was.
    without_ours = json.loads(original)
    assert {k: v for k, v in data.items() if k != "hooks"} == {
        k: v for k, v in without_ours.items() if k != "hooks"
    }
    for event, groups in without_ours["hooks"].items():
        assert data["hooks"][event][: len(groups)] == groups

    again = apply(agent, command=COMMAND.format(agent=agent))
    assert not again.changed

    removed = apply(agent, uninstall=True)
    assert removed.changed
    assert path.read_bytes() == original.encode("utf-8")


@pytest.mark.parametrize("agent", list(AGENTS))
def test_each_agent_gets_its_own_entry_shape(homes, agent):
    apply(agent, command=COMMAND.format(agent=agent))
    data = json.loads(user_file(homes, agent).read_text())
    (group,) = data["hooks"][EVENT[agent]]
    (entry,) = group["hooks"]
    assert "matcher" not in group
    assert entry["type"] == "command"
    assert entry["command"] == COMMAND.format(agent=agent)
    # Claude Code and Codex take seconds, Gemini CLI milliseconds.
    assert entry["timeout"] == (10_000 if agent == "gemini" else 10)
    if agent == "gemini":
        assert entry["name"] == "memmy-kb-recall"
    if agent == "codex":
        assert entry["statusMessage"]


def test_a_moved_installation_is_replaced_in_place_and_duplicates_dropped(homes):
    path = user_file(homes, "claude-code")
    old = {"type": "command", "command": "'/old place/bin/memmy-kb' hook claude-code", "timeout": 30}
    other = {"type": "command", "command": "other.sh"}
    data = {"hooks": {"UserPromptSubmit": [{"hooks": [other, old]}, {"hooks": [dict(old)]}]}}
    write(path, json.dumps(data, indent=2) + "\n")

    apply("claude-code", command="/new/bin/memmy-kb hook claude-code")

    (group,) = json.loads(path.read_text())["hooks"]["UserPromptSubmit"]
    assert group["hooks"] == [
        other,
        {"type": "command", "command": "/new/bin/memmy-kb hook claude-code", "timeout": 10},
    ]


def test_other_agents_hooks_are_not_ours(homes):
    path = user_file(homes, "codex")
    foreign = {"type": "command", "command": "/x/memmy-kb hook claude-code"}
    write(path, json.dumps({"hooks": {"UserPromptSubmit": [{"hooks": [foreign]}]}}, indent=2) + "\n")
    assert not apply("codex", uninstall=True).changed
    apply("codex", command=COMMAND.format(agent="codex"))
    assert json.loads(path.read_text())["hooks"]["UserPromptSubmit"][0]["hooks"] == [foreign]


def test_project_settings_and_the_agents_home_variables(homes, tmp_path, monkeypatch):
    project = tmp_path / "repo"
    for agent, relative in {
        "claude-code": ".claude/settings.json",
        "codex": ".codex/hooks.json",
        "gemini": ".gemini/settings.json",
    }.items():
        assert apply(agent, project=project, command="c").path == project / relative
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude-home"))
    assert apply("codex", command="c").path == tmp_path / "codex-home" / "hooks.json"
    assert apply("claude-code", command="c").path == tmp_path / "claude-home" / "settings.json"


def test_a_new_file_is_created_and_uninstall_of_nothing_writes_nothing(homes):
    path = user_file(homes, "gemini")
    assert not apply("gemini", uninstall=True).changed
    assert not path.exists()
    change = apply("gemini", command=COMMAND.format(agent="gemini"))
    assert change.before is None
    assert path.exists()
    assert change.diff().startswith("--- /dev/null\n")
    apply("gemini", uninstall=True)
    assert json.loads(path.read_text()) == {}


def test_a_symlinked_settings_file_is_edited_where_it_lives(homes, tmp_path):
    real = tmp_path / "dotfiles" / "settings.json"
    write(real, json.dumps(OTHERS, indent=2) + "\n")
    link = user_file(homes, "claude-code")
    link.parent.mkdir(parents=True)
    link.symlink_to(real)
    apply("claude-code", command=COMMAND.format(agent="claude-code"))
    assert link.is_symlink()
    assert len(ours(json.loads(real.read_text()), "claude-code")) == 1


@pytest.mark.parametrize(
    "text",
    ['{\n  // my settings\n  "model": "x"\n}\n', '{"hooks": []}', '{"hooks": {"BeforeAgent": {}}}', "[1, 2]"],
)
def test_a_file_we_cannot_edit_safely_is_left_alone(homes, text):
    path = user_file(homes, "gemini")
    write(path, text)
    with pytest.raises(SettingsError):
        apply("gemini", command="c")
    assert path.read_text() == text


def test_the_mode_of_an_existing_file_is_kept(homes):
    path = user_file(homes, "codex")
    write(path, "{}\n")
    os.chmod(path, 0o600)
    apply("codex", command="c")
    assert path.stat().st_mode & 0o777 == 0o600


def test_the_command_is_this_installation_absolute():
    command = hook_command("codex")
    program = command.removesuffix(" hook codex")
    assert command.endswith(" hook codex")
    assert os.path.isabs(program.split()[0].strip("'"))


def test_the_cli_shows_the_diff_it_wrote_and_says_when_nothing_changed(homes, capsys):
    assert cli.main(["hook", "install", "codex"]) == 0
    out = capsys.readouterr().out
    assert "+++ " + str(user_file(homes, "codex")) in out
    assert '+            "command": ' in out
    assert "installed the Memmy hook" in out
    assert cli.main(["hook", "install", "codex"]) == 0
    assert "already has the Memmy hook; nothing changed" in capsys.readouterr().out
    assert cli.main(["hook", "install", "codex", "--uninstall"]) == 0
    assert "removed the Memmy hook" in capsys.readouterr().out


def test_the_cli_refuses_a_file_with_comments_with_exit_1(homes, capsys):
    write(user_file(homes, "gemini"), "{ // no\n}")
    assert cli.main(["hook", "install", "gemini"]) == 1
    assert "not plain JSON" in capsys.readouterr().err
