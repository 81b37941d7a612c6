"""Text one person shows another: KB, folder and file names, display names, user ids. One rule for all.

What another user reads must be what is there. Removed: control and format characters (bidi overrides,
zero-width joiners), line and paragraph separators, private-use, unassigned and surrogate code points.
Combining marks are capped per character, so a name cannot grow into a tower of diacritics over the
next line. Input that carries such characters is refused at the edge (``hidden_characters``); text from
elsewhere (MemOS's file names, records written before a rule existed) is cleaned on the way out
(``shown``).
"""

from __future__ import annotations

import unicodedata
from typing import Final

HIDDEN_CATEGORIES: Final = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
MAX_COMBINING_MARKS: Final = 3
_COMBINING: Final = frozenset({"Mn", "Me"})


def hidden_characters(text: str) -> list[str]:
    """The characters of ``text`` that ``shown`` would remove, and combining marks past the cap."""
    found: list[str] = []
    marks = 0
    for ch in text:
        category = unicodedata.category(ch)
        if category in HIDDEN_CATEGORIES:
            found.append(ch)
        marks = marks + 1 if category in _COMBINING else 0
        if marks > MAX_COMBINING_MARKS:
            found.append(ch)
    return found


def shown(text: str, *, max_chars: int | None = None) -> str:
    """``text`` as another person may see it: on one line, hidden characters gone, marks capped, trimmed."""
    kept: list[str] = []
    marks = 0
    for ch in text:
        category = unicodedata.category(ch)
        if category in HIDDEN_CATEGORIES:
            # A hidden character between two words must not glue them together (nor hide a gap).
            kept.append(" ")
            marks = 0
            continue
        marks = marks + 1 if category in _COMBINING else 0
        if marks <= MAX_COMBINING_MARKS:
            kept.append(ch)
    value = " ".join("".join(kept).split())
    if max_chars is not None and len(value) > max_chars:
        value = value[:max_chars].rstrip()
    return value
