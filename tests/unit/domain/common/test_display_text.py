"""One rule for text shown to another person (``memmy_kb.domain.display``), and the CLI's own escaping."""

from __future__ import annotations

import json

import pytest

from memmy_kb.domain.display import MAX_COMBINING_MARKS, hidden_characters, shown
from memmy_kb_client.cli.terminal import printable


@pytest.mark.parametrize(
    ("raw", "seen"),
    [
        ("产品资料", "产品资料"),
        ("exe\u202efdp.pdf", "exe fdp.pdf"),  # bidi override
        ("Al\u200dice", "Al ice"),  # zero-width joiner
        ("line\u2028two\u2029three", "line two three"),
        ("tab\tand\nnewline\x1b[2J", "tab and newline [2J"),
        ("priv\ue000ate", "priv ate"),
        ("lone\udcffsurrogate", "lone surrogate"),
        ("unassigned\U000e0080", "unassigned"),
        ("  spaced   out  ", "spaced out"),
    ],
)
def test_hidden_characters_are_gone_from_what_is_shown(raw: str, seen: str) -> None:
    assert shown(raw) == seen
    assert hidden_characters(seen) == []


def test_combining_marks_are_capped_per_character() -> None:
    zalgo = "Z" + "\u0301" * 50 + "a"
    assert shown(zalgo) == "Z" + "\u0301" * MAX_COMBINING_MARKS + "a"
    assert len(hidden_characters(zalgo)) == 50 - MAX_COMBINING_MARKS
    assert shown("é") == "é"  # a real accent stays


def test_shown_caps_the_length() -> None:
    assert shown("x" * 500, max_chars=100) == "x" * 100


@pytest.mark.parametrize("name", ["exe\u202efdp.pdf", "a\x1b[31mred", "x\u2028y", "\x85next", "p\U000f0000"])
def test_the_cli_escapes_what_it_prints_and_json_stays_json(name: str) -> None:
    text = printable(name)
    assert text.isprintable()
    assert json.loads(printable(json.dumps({"name": name}, ensure_ascii=False)))["name"] == name


def test_the_cli_keeps_newlines_and_tabs() -> None:
    assert printable("a\tb\nc") == "a\tb\nc"
