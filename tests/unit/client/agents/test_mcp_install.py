"""``memmy-kb hook install AGENT --mcp``: the ``memmy-kb`` MCP server in each agent's own MCP configuration
(Claude Code's ``.claude.json`` / ``.mcp.json``, Codex's ``config.toml``, Gemini CLI's ``settings.json``),
idempotently, everything else kept; an install and an uninstall leave the file byte-identical."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path
from typing import Any

import pytest

from memmy_kb_client.agents.hook_install import SettingsError
from memmy_kb_client.agents.mcp_install import TARGETS, apply, server_entry
from memmy_kb_client.cli import main as cli

PROGRAM = "/opt/memmy/bin/memmy-kb"


@pytest.fixture(autouse=True)
def homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "user"
    monkeypatch.setenv("HOME", str(home))
    for name in ("CODEX_HOME", "CLAUDE_CONFIG_DIR", "MEMMY_KB_HOME"):
        monkeypatch.delenv(name, raising=False)
    return home


def entry(agent: str, home: str | None = None) -> dict[str, Any]:
    found: dict[str, Any] = {"command": PROGRAM, "args": ["mcp"]}
    if agent == "claude-code":
        found = {"type": "stdio", **found, "env": {}}
    if home is not None:
        found["env"] = {"MEMMY_KB_HOME": home}
    return found


def user_file(home: Path, agent: str) -> Path:
    return (
        home
        / {"claude-code": ".claude.json", "codex": ".codex/config.toml", "gemini": ".gemini/settings.json"}[
            agent
        ]
    )


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8"))


def servers_in(path: Path, agent: str) -> dict[str, Any]:
    text = path.read_text(encoding="utf-8")
    if agent == "codex":
        return dict(tomllib.loads(text).get("mcp_servers", {}))
    return dict(json.loads(text).get("mcpServers", {}))


# What people and the agents keep: other servers, other settings, text that is not ASCII.
OTHER_JSON: dict[str, Any] = {
    "numStartups": 12,
    "mcpServers": {
        "github": {"type": "stdio", "command": "npx", "args": ["-y", "gh-mcp"], "env": {"T": "x"}}
    },
    "projects": {"/home/me/app": {"mcpServers": {}, "allowedTools": []}},
    "note": "中文设置 ✓",
}
JSON_STYLES = {
    "2-space": lambda data: json.dumps(data, indent=2, ensure_ascii=False) + "\n",
    "4-space, no final newline": lambda data: json.dumps(data, indent=4, ensure_ascii=False),
    "tabs": lambda data: json.dumps(data, indent="\t", ensure_ascii=False) + "\n",
    "ascii escapes": lambda data: json.dumps(data, indent=2) + "\n",
    "compact": lambda data: json.dumps(data, separators=(",", ":"), ensure_ascii=False),
    "no servers yet": lambda data: json.dumps({"theme": "dark"}, indent=2) + "\n",
}
TOML_STYLES = {
    "comments and other servers": (
        "# my Codex settings\n"
        'model = "o3"  # the model\n'
        "\n"
        "[mcp_servers.docs]\n"
        'command = "npx"\n'
        'args = ["-y", "docs-mcp"]  # pinned\n'
        "\n"
        "[profiles.fast]\n"
        'model = "mini"\n'
    ),
    "unusual indentation": (
        "[mcp_servers.a]\n"
        '    command   =   "x"\n'
        '    args = [ "1",\n'
        '             "2" ]\n'
        "\n"
        "[tui]\n"
        "\tnotifications = true\n"
    ),
    "dotted keys": 'mcp_servers.a.command = "x"\nmcp_servers.a.args = []\n',
    "no servers": '# just a model\nmodel = "o3"\n',
    "our table first": '[mcp_servers.z]\ncommand = "z"\n# trailing comment\n',
    "empty": "",
}


@pytest.mark.parametrize("style", list(JSON_STYLES))
@pytest.mark.parametrize("agent", ["claude-code", "gemini"])
def test_json_install_then_uninstall_leaves_the_file_byte_identical(homes, agent, style):
    path = user_file(homes, agent)
    original = JSON_STYLES[style](OTHER_JSON)
    write(path, original)
    before = json.loads(original)

    assert apply(agent, entry=entry(agent)).changed
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["mcpServers"]["memmy-kb"] == entry(agent)
    assert {k: v for k, v in data.items() if k != "mcpServers"} == {
        k: v for k, v in before.items() if k != "mcpServers"
    }
    assert {k: v for k, v in data["mcpServers"].items() if k != "memmy-kb"} == before.get("mcpServers", {})

    assert not apply(agent, entry=entry(agent)).changed
    assert apply(agent, uninstall=True).changed
    assert path.read_bytes() == original.encode("utf-8")
    assert not apply(agent, uninstall=True).changed


@pytest.mark.parametrize("style", list(TOML_STYLES))
def test_codex_install_then_uninstall_keeps_comments_and_leaves_the_file_byte_identical(homes, style):
    path = user_file(homes, "codex")
    original = TOML_STYLES[style]
    write(path, original)
    before = tomllib.loads(original)

    assert apply("codex", entry=entry("codex", "/srv/memmy")).changed
    text = path.read_text(encoding="utf-8")
    parsed = tomllib.loads(text)
    assert parsed["mcp_servers"]["memmy-kb"] == entry("codex", "/srv/memmy")
    assert {k: v for k, v in parsed.items() if k != "mcp_servers"} == {
        k: v for k, v in before.items() if k != "mcp_servers"
    }
    for line in original.splitlines():
        assert line in text.splitlines()  # every comment and every line as it was
    assert "[mcp_servers.memmy-kb]" in text
    assert 'env = {MEMMY_KB_HOME = "/srv/memmy"}' in text

    assert not apply("codex", entry=entry("codex", "/srv/memmy")).changed
    assert apply("codex", uninstall=True).changed
    assert path.read_bytes() == original.encode("utf-8")


def test_codex_reinstall_updates_our_table_in_place_keeping_what_the_person_added(homes):
    path = user_file(homes, "codex")
    write(path, '[mcp_servers.docs]\ncommand = "npx"\n\n[profiles.fast]\nmodel = "mini"\n')
    apply("codex", entry=entry("codex", "/old/home"))
    text = path.read_text().replace('args = ["mcp"]', 'args = ["mcp"]\ntool_timeout_sec = 30  # mine')
    write(path, text)

    change = apply("codex", entry={"command": "/new/bin/memmy-kb", "args": ["mcp"]})

    ours = tomllib.loads(path.read_text())["mcp_servers"]["memmy-kb"]
    assert ours == {"command": "/new/bin/memmy-kb", "args": ["mcp"], "tool_timeout_sec": 30}
    assert "tool_timeout_sec = 30  # mine" in path.read_text()
    assert change.diff().count("\n-") >= 1
    apply("codex", uninstall=True)
    assert tomllib.loads(path.read_text()) == {
        "mcp_servers": {"docs": {"command": "npx"}},
        "profiles": {"fast": {"model": "mini"}},
    }


def test_a_json_reinstall_replaces_ours_in_place_and_keeps_the_persons_keys(homes):
    path = user_file(homes, "gemini")
    mine = {
        "command": "/old/memmy-kb",
        "args": ["mcp"],
        "env": {"MEMMY_KB_HOME": "/old", "DEBUG": "1"},
        "trust": True,
    }
    write(
        path,
        json.dumps(
            {"mcpServers": {"a": {"command": "a"}, "memmy-kb": mine, "z": {"command": "z"}}}, indent=2
        ),
    )
    apply("gemini", entry=entry("gemini"))
    servers = servers_in(path, "gemini")
    assert list(servers) == ["a", "memmy-kb", "z"]
    assert servers["memmy-kb"] == {"command": PROGRAM, "args": ["mcp"], "env": {"DEBUG": "1"}, "trust": True}


@pytest.mark.parametrize(
    ("agent", "text"),
    [
        ("claude-code", '{\n  // comment\n  "mcpServers": {}\n}\n'),
        ("gemini", '{"mcpServers": {"a": {"command": "a"},},}'),
        ("gemini", '{"mcpServers": []}'),
        ("codex", "[mcp_servers\ncommand = 1\n"),
        ("codex", 'mcp_servers = "not a table"\n'),
    ],
)
def test_a_file_we_cannot_edit_safely_is_left_alone_with_a_message(homes, agent, text):
    path = user_file(homes, agent)
    write(path, text)
    with pytest.raises(SettingsError, match="left as it is"):
        apply(agent, entry=entry(agent))
    assert path.read_text() == text


def test_the_agents_files_and_project_files(homes, tmp_path, monkeypatch):
    project = tmp_path / "repo"
    expected = {"claude-code": ".mcp.json", "codex": ".codex/config.toml", "gemini": ".gemini/settings.json"}
    for agent, relative in expected.items():
        assert apply(agent, project=project, entry=entry(agent)).path == project / relative
        assert servers_in(project / relative, agent)["memmy-kb"] == entry(agent)
    for agent in TARGETS:
        assert apply(agent, entry=entry(agent)).path == user_file(homes, agent)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude-home"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    assert apply("claude-code", entry=entry("claude-code")).path == tmp_path / "claude-home" / ".claude.json"
    assert apply("codex", entry=entry("codex")).path == tmp_path / "codex-home" / "config.toml"


def test_the_entry_is_this_installation_with_the_state_directory_when_not_the_default(homes, tmp_path):
    default = server_entry("claude-code", {})
    assert os.path.isabs(default["command"])
    assert default["args"][-1] == "mcp"
    assert default["type"] == "stdio"
    assert default["env"] == {}
    assert "env" not in server_entry("gemini", {})
    assert server_entry("codex", {"MEMMY_KB_HOME": "rel/home"})["env"] == {
        "MEMMY_KB_HOME": os.path.abspath("rel/home")
    }
    assert "env" not in server_entry("codex", {"MEMMY_KB_HOME": str(homes / ".memmy-kb")})


def test_a_symlinked_file_is_edited_where_it_lives_and_its_mode_kept(homes, tmp_path):
    real = tmp_path / "dotfiles" / "settings.json"
    write(real, "{}\n")
    os.chmod(real, 0o600)
    link = user_file(homes, "gemini")
    link.parent.mkdir(parents=True)
    link.symlink_to(real)
    apply("gemini", entry=entry("gemini"))
    assert link.is_symlink()
    assert servers_in(real, "gemini")["memmy-kb"] == entry("gemini")
    assert real.stat().st_mode & 0o777 == 0o600


def test_the_cli_registers_shows_the_diff_and_says_when_nothing_changed(homes, capsys):
    assert cli.main(["hook", "install", "codex", "--mcp"]) == 0
    out = capsys.readouterr().out
    assert "+[mcp_servers.memmy-kb]" in out
    assert "registered the memmy-kb MCP server (memmy-kb mcp)" in out
    assert "`/mcp` lists memmy-kb" in out
    assert "mcp_optional_startup_grace_ms" in out  # codex exec may otherwise ask before the tools are listed
    # the hook's own file is untouched by --mcp
    assert not (homes / ".codex" / "hooks.json").exists()
    assert cli.main(["hook", "install", "codex", "--mcp"]) == 0
    assert "already registers the memmy-kb MCP server; nothing changed" in capsys.readouterr().out
    assert cli.main(["hook", "install", "codex", "--mcp", "--uninstall"]) == 0
    assert "removed the memmy-kb MCP server" in capsys.readouterr().out
    assert tomllib.loads(user_file(homes, "codex").read_text()) == {}


def test_the_cli_refuses_a_json_file_with_comments_with_exit_1(homes, capsys):
    write(user_file(homes, "claude-code"), '{ // no\n"a": 1}')
    assert cli.main(["hook", "install", "claude-code", "--mcp"]) == 1
    assert "not plain JSON" in capsys.readouterr().err


@pytest.mark.parametrize(
    "original",
    [
        'mcp_servers = { docs = { command = "d" } }\nmodel = "x"\n',
        '[mcp_servers.memmy-kb]\ncommand = "/old/bin/memmy-kb"\n\n[mcp_servers.memmy-kb.env]\nX = "1"\n\n[tui]\na = 1\n',
        'model = "x"\nmcp_servers.memmy-kb.command = "/old/bin/memmy-kb"\n',
    ],
    ids=["inline mcp_servers", "env as a sub-table", "dotted keys of ours"],
)
def test_codex_layouts_a_table_cannot_be_appended_to_are_edited_in_place(homes, original):
    path = user_file(homes, "codex")
    write(path, original)
    before = tomllib.loads(original)

    apply("codex", entry=entry("codex", "/h"))
    after = tomllib.loads(path.read_text())
    ours = after["mcp_servers"]["memmy-kb"]
    assert {key: ours[key] for key in ("command", "args")} == {"command": PROGRAM, "args": ["mcp"]}
    assert ours["env"]["MEMMY_KB_HOME"] == "/h"
    assert {k: v for k, v in after.items() if k != "mcp_servers"} == {
        k: v for k, v in before.items() if k != "mcp_servers"
    }

    apply("codex", uninstall=True)
    servers = dict(before.get("mcp_servers", {}))
    servers.pop("memmy-kb", None)
    expected = {k: v for k, v in before.items() if k != "mcp_servers"} | (
        {"mcp_servers": servers} if servers else {}
    )
    assert tomllib.loads(path.read_text()) == expected


def test_finding_our_toml_table_is_linear_in_a_hostile_config() -> None:
    # config.toml is the user's file: runs of blanks around every part of a header that never closes.
    from memmy_kb_client.agents import mcp_toml
    from tests.support.linear_time import assert_linear_time

    def make(size: int) -> str:
        blanks = " \t" * (size // 4)
        return (
            f'[mcp_servers."memmy-kb"]\nx = 1\n{blanks}[{blanks}mcp_servers{blanks}.{blanks}memmy\n'
            + "[\n" * (size // 4)
        )

    assert_linear_time(mcp_toml._cut_block, make, large=1 << 20)
