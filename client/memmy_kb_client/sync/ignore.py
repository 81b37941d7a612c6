"""``.memmyignore``'s patterns, matched in linear time: ``pathspec`` turns each gitignore line into a
regular expression, and RE2 (``google-re2``) runs them all as one set, an automaton whose time grows with
the name's length whatever the pattern. Python's ``re`` backtracks: ``*a*a*a*a*a*b`` against one name of
200 characters took it some 20 s, each further ``*`` some 40 times more (docs/sync.md)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Final

import re2
from pathspec import GitIgnoreSpec
from pathspec.patterns.gitignore import GitIgnorePatternError

IGNORE_FILE: Final = ".memmyignore"


def compile_ignore(lines: Sequence[str]) -> GitIgnoreSpec:
    """The patterns of ``lines`` (gitignore syntax: ``!`` negates, a trailing ``/`` names folders), run by
    RE2; OSError with a sentence naming the line when a line is not a pattern, or when the set is too
    large for RE2's memory (some thousands of lines): read as none, the file would upload what it names."""
    compiled = _compiled(tuple(lines))
    if isinstance(compiled, str):
        raise OSError(compiled)
    return compiled


# Each pass and each watcher reads the same lines again; a refusal is kept too (a large set takes seconds
# to be refused, and the watcher tries again every two seconds).
@functools.lru_cache(maxsize=8)
def _compiled(lines: tuple[str, ...]) -> GitIgnoreSpec | str:
    try:
        return GitIgnoreSpec.from_lines(lines, backend="re2")
    except GitIgnorePatternError as err:
        return f"{IGNORE_FILE} has a line that is no pattern ({err}): nothing is synced until it is fixed"
    except re2.error:  # a pattern RE2 cannot take, or a set over its memory
        return _refused(lines)


def _refused(lines: tuple[str, ...]) -> str:
    for number, line in enumerate(lines, start=1):
        try:
            GitIgnoreSpec.from_lines([line], backend="re2")
        except re2.error:
            return (
                f"{IGNORE_FILE} line {number} ({line[:80]!r}) cannot be matched in linear time: "
                "nothing is synced until it is changed"
            )
    return (
        f"{IGNORE_FILE} is too large to be matched in linear time ({len(lines):,} lines): "
        "nothing is synced until it is shortened"
    )
