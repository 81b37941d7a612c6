"""Every ``--help`` of ``memmy-kb`` and ``memmy-local``, subcommands included, shows each option's default
(memmy_kb_client.cli.parser), and never a ``(default: None)`` or ``(default: False)``."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

import pytest

from memmy_kb_client.cli import main as client_cli
from memmy_local import cli as local_cli


def _parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _parsers(sub)


def _with_defaults(parser: argparse.ArgumentParser) -> Iterator[argparse.Action]:
    for action in parser._actions:
        shown = action.help is not argparse.SUPPRESS and not isinstance(action, argparse._SubParsersAction)
        real = (
            action.default is not None
            and action.default is not False
            and action.default is not argparse.SUPPRESS
        )
        if shown and action.option_strings and real:
            yield action


def _option_help(text: str, option: str) -> str:
    """The help of ``option`` in a parser's help text, its wrapped lines joined."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith(option))
    block = [lines[start]]
    for line in lines[start + 1 :]:
        if not line.startswith("    ") or line.lstrip().startswith("-"):
            break
        block.append(line)
    return " ".join(part.strip() for part in block)


@pytest.fixture(autouse=True)
def _wide(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "250")  # no help wrapped in the middle of a default


@pytest.mark.parametrize(
    "build", [client_cli.build_parser, local_cli.build_parser], ids=["memmy-kb", "memmy-local"]
)
def test_every_option_with_a_default_says_it_in_the_help(build: object) -> None:
    checked = 0
    for parser in _parsers(build()):  # type: ignore[operator]
        text = parser.format_help()
        assert "(default: None)" not in text
        assert "(default: False)" not in text
        for action in _with_defaults(parser):
            shown = _option_help(text, action.option_strings[0])
            assert "default" in shown, f"{parser.prog}: {shown}"
            checked += 1
    assert checked >= 2  # the walk reached the subcommands


@pytest.mark.parametrize(
    ("argv", "option", "shown"),
    [
        (["up"], "--port PORT", "(default: 8080)"),
        (["up"], "--moto-port MOTO_PORT", "(default: 5000)"),
        (["up"], "--processing-delay PROCESSING_DELAY", "(default: 1.0)"),
        (["memos"], "--host HOST", "(default: 127.0.0.1)"),
        (["memos"], "--prefix PREFIX", "(default: /api/openmem/v1)"),
    ],
)
def test_memmy_local_help_shows_the_defaults(
    capsys: pytest.CaptureFixture[str], argv: list[str], option: str, shown: str
) -> None:
    with pytest.raises(SystemExit):
        local_cli.main([*argv, "--help"])
    assert _option_help(capsys.readouterr().out, option).endswith(shown)


def test_memmy_kb_help_shows_the_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        client_cli.main(["files", "upload", "--help"])
    assert _option_help(capsys.readouterr().out, "--timeout").endswith("(default: 600)")
