"""The agents' settings files as ``hook install`` and ``hook install --mcp`` find them and leave them: line
endings, a byte-order mark, escapes, text that is not UTF-8, a new file's mode, two installs at once, and an
MCP server named ``memmy-kb`` that is someone else's."""

from __future__ import annotations

import json
import os
import threading
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest

from memmy_kb_client.agents import hook_install, mcp_install
from memmy_kb_client.agents.hook_install import SettingsError
from memmy_kb_client.cli import main as cli

PROGRAM = "/opt/memmy/bin/memmy-kb"
ENTRY = {"command": PROGRAM, "args": ["mcp"]}
GEMINI_HOOK = f"{PROGRAM} hook gemini"


@pytest.fixture(autouse=True)
def homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "user"
    monkeypatch.setenv("HOME", str(home))
    for name in ("CODEX_HOME", "CLAUDE_CONFIG_DIR", "MEMMY_KB_HOME"):
        monkeypatch.delenv(name, raising=False)
    return home


def user_file(home: Path, agent: str) -> Path:
    relative = {
        "claude-code": ".claude.json",
        "codex": ".codex/config.toml",
        "gemini": ".gemini/settings.json",
    }
    return home / relative[agent]


def write(path: Path, raw: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(raw)


def round_trip(agent: str, path: Path, original: bytes) -> bytes:
    """Install our MCP server and the hook (where it shares the file), then uninstall both: the text
    in between."""
    write(path, original)
    assert mcp_install.apply(agent, entry=ENTRY).changed
    if agent == "gemini":
        assert hook_install.apply("gemini", command=GEMINI_HOOK).changed
    installed = path.read_bytes()
    assert not mcp_install.apply(agent, entry=ENTRY).changed
    if agent == "gemini":
        assert hook_install.apply("gemini", uninstall=True).changed
    assert mcp_install.apply(agent, uninstall=True).changed
    assert path.read_bytes() == original
    return installed


JSON_CRLF = b'{\r\n  "theme": "dark",\r\n  "mcpServers": {\r\n    "a": {\r\n      "command": "a"\r\n    }\r\n  }\r\n}\r\n'
TOML_CRLF = b'# mine\r\nmodel = "o3"\r\n\r\n[mcp_servers.docs]\r\ncommand = "npx"\r\n'


@pytest.mark.parametrize("agent", ["claude-code", "gemini"])
def test_a_json_file_with_crlf_line_endings_keeps_them(homes, agent):
    installed = round_trip(agent, user_file(homes, agent), JSON_CRLF)
    assert installed.count(b"\n") == installed.count(b"\r\n") > 8


def test_a_toml_file_with_crlf_line_endings_keeps_them(homes):
    installed = round_trip("codex", user_file(homes, "codex"), TOML_CRLF)
    assert installed.count(b"\n") == installed.count(b"\r\n")
    assert tomllib.loads(installed.decode())["mcp_servers"]["memmy-kb"] == ENTRY


@pytest.mark.parametrize(
    ("agent", "original"),
    [
        ("gemini", b'\xef\xbb\xbf{\n  "theme": "dark"\n}\n'),
        ("claude-code", b'\xef\xbb\xbf{"numStartups": 3}'),
        ("codex", b'\xef\xbb\xbfmodel = "o3"\n'),
    ],
)
def test_a_byte_order_mark_is_kept(homes, agent, original):
    installed = round_trip(agent, user_file(homes, agent), original)
    assert installed.startswith(b"\xef\xbb\xbf")
    assert not installed.startswith(b"\xef\xbb\xbf" * 2)


def test_json_with_an_escaped_lone_surrogate_is_written_back_escaped(homes):
    # As JSON.stringify writes a string cut in the middle of an emoji; the rest is raw UTF-8.
    original = '{\n  "history": [\n    "cut \\ud83d",\n    "中文 ✓"\n  ],\n  "u": "tab\\there"\n}\n'.encode()
    installed = round_trip("claude-code", user_file(homes, "claude-code"), original)
    assert json.loads(installed)["history"][0] == "cut \ud83d"


@pytest.mark.parametrize("agent", ["claude-code", "codex", "gemini"])
def test_a_file_that_is_not_utf8_is_refused_and_left_alone(homes, agent, capsys):
    path = user_file(homes, agent)
    original = (
        '{"note": "café"}\n'.encode("latin-1") if agent != "codex" else 'x = "café"\n'.encode("latin-1")
    )
    write(path, original)
    with pytest.raises(SettingsError, match="not UTF-8"):
        mcp_install.apply(agent, entry=ENTRY)
    assert cli.main(["hook", "install", agent, "--mcp"]) == 1
    assert "not UTF-8" in capsys.readouterr().err
    if agent == "gemini":  # the hook goes into the same file
        assert cli.main(["hook", "install", "gemini"]) == 1
        assert "not UTF-8" in capsys.readouterr().err
    assert path.read_bytes() == original


@pytest.mark.parametrize(("umask", "mode"), [(0o077, 0o600), (0o022, 0o644), (0o002, 0o664)])
def test_a_new_file_gets_the_mode_the_umask_allows(homes, umask, mode):
    previous = os.umask(umask)
    try:
        mcp_install.apply("gemini", entry=ENTRY)
        hook_install.apply("codex", command="c")
    finally:
        os.umask(previous)
    assert user_file(homes, "gemini").stat().st_mode & 0o777 == mode
    assert (homes / ".codex" / "hooks.json").stat().st_mode & 0o777 == mode


def test_two_installs_into_one_file_at_once_both_land(homes):
    # Gemini CLI keeps the hook and the MCP server in one settings.json: installing both at once (two
    # terminals, a setup script) must not lose either.
    path = user_file(homes, "gemini")
    errors: list[BaseException] = []

    def run(start: threading.Barrier, install: Callable[[], object]) -> None:
        start.wait()
        try:
            install()
        except BaseException as err:  # pragma: no cover - reported below
            errors.append(err)

    for _ in range(40):
        write(path, b'{"theme": "dark"}\n')
        start = threading.Barrier(2)
        threads = [
            threading.Thread(target=run, args=(start, lambda: mcp_install.apply("gemini", entry=ENTRY))),
            threading.Thread(
                target=run, args=(start, lambda: hook_install.apply("gemini", command=GEMINI_HOOK))
            ),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors
        data = json.loads(path.read_text())
        assert data["theme"] == "dark"
        assert data["mcpServers"]["memmy-kb"] == ENTRY
        assert data["hooks"]["BeforeAgent"][0]["hooks"][0]["command"] == GEMINI_HOOK


FOREIGN = {
    "claude-code": json.dumps(
        {"mcpServers": {"memmy-kb": {"type": "http", "url": "https://kb.example/mcp"}}}
    ),
    "gemini": json.dumps({"mcpServers": {"memmy-kb": {"command": "npx", "args": ["-y", "memmy-kb-mcp"]}}}),
    "codex": '[mcp_servers.memmy-kb]\ncommand = "docker"\nargs = ["run", "-i", "memmy/kb"]\n',
}


@pytest.mark.parametrize("agent", list(FOREIGN))
def test_a_server_named_memmy_kb_that_runs_something_else_is_not_overwritten_nor_removed(
    homes, agent, capsys
):
    path = user_file(homes, agent)
    write(path, FOREIGN[agent].encode())
    for uninstall in (False, True):
        with pytest.raises(SettingsError, match=r'named "memmy-kb".*left as it is'):
            mcp_install.apply(agent, entry=ENTRY, uninstall=uninstall)
    assert cli.main(["hook", "install", agent, "--mcp"]) == 1
    assert mcp_install.registered(agent) == (path, False)  # hook status does not call it ours
    err = capsys.readouterr().err
    assert 'named "memmy-kb"' in err
    assert "rename or remove it" in err
    assert path.read_bytes() == FOREIGN[agent].encode()


@pytest.mark.parametrize(
    "existing",
    [
        {"command": "/old place/bin/memmy-kb", "args": ["mcp"]},
        {"command": "memmy-kb", "args": ["mcp"]},
        {"command": "C:\\Tools\\memmy-kb.exe", "args": ["mcp"]},
        {"command": "/usr/bin/python3", "args": ["-m", "memmy_kb_client.cli", "mcp"]},
    ],
)
def test_our_own_entry_from_another_installation_is_still_updated(homes, existing):
    path = user_file(homes, "gemini")
    write(path, json.dumps({"mcpServers": {"memmy-kb": existing}}).encode())
    mcp_install.apply("gemini", entry=ENTRY)
    assert json.loads(path.read_text())["mcpServers"]["memmy-kb"] == ENTRY
    mcp_install.apply("gemini", uninstall=True)
    assert json.loads(path.read_text()) == {}


def test_hook_status_reads_a_file_with_a_byte_order_mark(homes):
    for agent in ("codex", "gemini"):
        write(user_file(homes, agent), b"\xef\xbb\xbf{}\n" if agent == "gemini" else b"\xef\xbb\xbf")
        mcp_install.apply(agent, entry=ENTRY)
        assert mcp_install.registered(agent) == (user_file(homes, agent), True)
    hook_install.apply("gemini", command=GEMINI_HOOK)
    assert hook_install.installed_command("gemini")[1] == GEMINI_HOOK


def test_a_symlink_loop_is_refused_with_a_message(homes, capsys):
    path = user_file(homes, "gemini")
    path.parent.mkdir(parents=True)
    path.symlink_to(path.parent / "elsewhere.json")
    (path.parent / "elsewhere.json").symlink_to(path)
    for argv in (["hook", "install", "gemini", "--mcp"], ["hook", "install", "gemini"]):
        assert cli.main(argv) == 1
        assert "symbolic links" in capsys.readouterr().err
    assert mcp_install.registered("gemini") == (path, False)
    assert hook_install.installed_command("gemini") == (path, None)
    assert path.is_symlink()
