"""What the CLI prints of other people's text (names, titles): its controls made visible as escapes, so
none can rewrite the terminal or reverse what follows."""

from __future__ import annotations

import unicodedata

_KEPT = frozenset("\n\t")
_ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


def printable(text: str) -> str:
    """``text`` with every control, format, separator, private-use or unassigned character escaped."""
    if text.isprintable():
        return text
    return "".join(
        ch if ch in _KEPT or unicodedata.category(ch) not in _ESCAPED_CATEGORIES else _escape(ch)
        for ch in text
    )


def one_line(text: object) -> str:
    """``text`` to print within a line (a title, a KB, file or person's name): as ``printable``, with its
    line breaks and tabs escaped too, so a name cannot start a line of its own that reads as the CLI's
    (a forged ``from:`` line under an excerpt, a forged KB in ``kb ls``)."""
    return printable(str(text)).replace("\n", _escape("\n")).replace("\t", _escape("\t"))


def _escape(ch: str) -> str:
    """A ``\\uXXXX`` escape (a surrogate pair above U+FFFF): readable, and still valid inside JSON."""
    code = ord(ch)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
