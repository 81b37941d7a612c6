"""The context block cut to fit one agent's inline limit, by dropping whole excerpts.

The cloud caps the block at 8,000 characters. The agents measure differently, and past their limit
they move hook output out of the turn (to a file, behind a preview), so each agent gets its own cap:

* Claude Code keeps up to 10,000 characters of hook output inline (JavaScript string length, that is
  UTF-16 code units); we stay under 9,500.
* Codex estimates tokens as UTF-8 bytes / 4 and spills hook output over 2,500 of them to a file; we
  stay under 9,000 bytes (about 2,250 of its tokens). A Chinese excerpt costs three bytes a character,
  so this cap bites first: Codex gets fewer excerpts than Claude Code for the same question.
* Gemini CLI documents no inline limit for ``additionalContext``; it gets the cloud's block as is
  (at most 8,000 characters).

The block's shape is the cloud's (``memmy_kb.domain.context_block``): a preface, then sections
``<excerpt-BOUNDARY n="k">`` ... ``</excerpt-BOUNDARY>`` separated by a blank line, the boundary being
absent from every excerpt. Trimming keeps the preface and as many whole sections as fit, best first
(a section that does not fit is skipped and the next, maybe shorter, tried), renumbered 1..n. A block
that is not of that shape and does not fit is dropped whole: it is never cut mid-excerpt.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Final

_OPENING: Final = re.compile(r'<excerpt-([0-9a-f]{16}) n="\d+">\n')
_SEPARATOR: Final = "\n\n"


def utf16_units(text: str) -> int:
    """The length JavaScript sees: code units of UTF-16."""
    return len(text.encode("utf-16-le")) // 2


def utf8_bytes(text: str) -> int:
    return len(text.encode("utf-8"))


@dataclass(frozen=True)
class InlineLimit:
    """At most ``limit`` of ``measure(text)`` stays inline for an agent. Every measure adds up over
    concatenation (the measure of ``a + b`` is that of ``a`` plus that of ``b``)."""

    limit: int
    measure: Callable[[str], int]
    unit: str

    def fits(self, text: str) -> bool:
        return self.measure(text) <= self.limit


LIMITS: Final = {
    "claude-code": InlineLimit(9_500, utf16_units, "UTF-16 code units"),
    "codex": InlineLimit(9_000, utf8_bytes, "UTF-8 bytes"),
    "gemini": InlineLimit(8_000, len, "characters"),
}


def fit_block(block: str, limit: InlineLimit) -> str:
    """``block`` if it fits; else its preface and the whole excerpts that fit; "" when none does.

    Each excerpt is measured once and the measures added up (they add up over concatenation), so the
    time is linear in the block's length, whatever its preface or its excerpts' number and sizes.
    """
    if not block or limit.fits(block):
        return block
    first = _OPENING.search(block)
    if first is None:
        return ""
    preface = block[: first.start()].rstrip("\n")
    used, separator = limit.measure(preface), limit.measure(_SEPARATOR)
    kept: list[str] = []
    for section in _sections(block, first):
        numbered = re.sub(r'n="\d+"', f'n="{len(kept) + 1}"', section, count=1)
        size = separator + limit.measure(numbered)
        if used + size <= limit.limit:
            kept.append(numbered)
            used += size
    return _SEPARATOR.join([preface, *kept]) if kept else ""


def _sections(block: str, first: re.Match[str]) -> Iterator[str]:
    """Each whole excerpt from ``first`` on: an opening with ``first``'s boundary, up to its closing.

    Found one after the other, each closing by ``str.find``: a lazy regex from every opening to its
    closing read the rest of the block again for each opening without one (quadratic).
    """
    opening = re.compile(rf'<excerpt-{first.group(1)} n="\d+">\n')
    closing = f"\n</excerpt-{first.group(1)}>"
    at = first.start()
    while (start := opening.search(block, at)) is not None:
        end = block.find(closing, start.end())
        if end < 0:
            return  # no opening after this one has a closing either
        at = end + len(closing)
        yield block[start.start() : at]


def fit_for_agent(block: str, agent: str | None) -> str:
    """``block`` within ``agent``'s inline limit (unchanged for an agent we have no limit for)."""
    limit = LIMITS.get(agent or "")
    return block if limit is None else fit_block(block, limit)
