"""``--json`` on every ``memmy-kb`` command that prints a result, each printing one JSON document on stdout
(the API's object as it answered, or an object naming what was done where the API answers nothing).
The commands without it are listed with the reason."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from memmy_kb_client.cli import main as cli

# Commands that print no result of their own to take as JSON.
WITHOUT_JSON = {
    "dev": "memmy-local's own command line",
    "hook claude-code": "the agent's hook protocol on stdin and stdout",
    "hook codex": "the agent's hook protocol on stdin and stdout",
    "hook gemini": "the agent's hook protocol on stdin and stdout",
    "mcp": "the Model Context Protocol on stdin and stdout",
    "desktop serve": "runs the service until stopped",
    "desktop open": "opens the page in a browser (--no-browser prints the link alone)",
}


def _commands(
    parser: argparse.ArgumentParser, prefix: str = ""
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    groups = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not groups:
        yield prefix.strip(), parser
    for group in groups:
        for name, child in group.choices.items():
            yield from _commands(child, f"{prefix} {name}")


def test_every_command_that_prints_a_result_takes_json() -> None:
    missing = [
        name
        for name, parser in _commands(cli.build_parser())
        if name not in WITHOUT_JSON and "--json" not in parser._option_string_actions
    ]
    assert missing == []
    assert set(WITHOUT_JSON) <= {name for name, _ in _commands(cli.build_parser())}


@pytest.mark.parametrize("mcp", [[], ["--mcp"]])
def test_hook_install_json_names_the_settings_and_whether_they_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], mcp: list[str]
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("MEMMY_KB_HOME", str(tmp_path / ".memmy-kb"))
    for changed in (True, False):
        assert cli.main(["hook", "install", "gemini", "--project", str(tmp_path), "--json", *mcp]) == 0
        answer = json.loads(capsys.readouterr().out)
        assert answer == {
            "agent": "gemini",
            "what": "mcp" if mcp else "hook",
            "settings": str(tmp_path / ".gemini" / "settings.json"),
            "changed": changed,
            "installed": True,
        }
