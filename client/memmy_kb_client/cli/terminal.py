"""What the CLI prints of other people's text (names, titles): its controls made visible as escapes, so
none can rewrite the terminal or reverse what follows; and the columns it prints, measured in terminal
columns (``wcwidth``), so a Chinese name keeps a table or a bar aligned."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence

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


def cells(text: str) -> int:
    """How many terminal columns ``text`` takes (a Chinese character two, a combining mark none)."""
    from wcwidth import width

    return int(width(text))


def fit(text: str, columns: int) -> str:
    """``text`` on one line in exactly ``columns`` terminal columns: padded, or cut with "…"."""
    from wcwidth import clip, ljust

    shown = one_line(text)
    if cells(shown) > columns:
        shown = clip(shown, 0, max(columns - 1, 0)) + "…"
    return str(ljust(shown, columns))


def table(rows: Iterable[Sequence[object]], indent: str = "", gap: str = "  ") -> list[str]:
    """``rows`` as lines whose columns line up on a terminal: each cell on one line (``one_line``),
    padded to its column's widest cell in terminal columns; the last column is not padded, and a
    row may be shorter than the others."""
    from wcwidth import ljust

    texts = [[one_line(cell) for cell in row] for row in rows]
    widths: list[int] = []
    for row in texts:
        for index, text in enumerate(row[:-1]):
            if index == len(widths):
                widths.append(0)
            widths[index] = max(widths[index], cells(text))
    lines = []
    for row in texts:
        line = indent + gap.join([str(ljust(text, widths[i])) for i, text in enumerate(row[:-1])] + row[-1:])
        lines.append(line if row and row[-1] else line.rstrip(" "))
    return lines
