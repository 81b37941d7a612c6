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
from collections.abc import Callable
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
    """At most ``limit`` of ``measure(text)`` stays inline for an agent."""

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


def fit_block(block: str, fits: Callable[[str], bool]) -> str:
    """``block`` if it fits; else its preface and the whole excerpts that fit; "" when none does."""
    if not block or fits(block):
        return block
    first = _OPENING.search(block)
    if first is None:
        return ""
    boundary = first.group(1)
    sections = re.findall(
        rf'<excerpt-{boundary} n="\d+">\n.*?\n</excerpt-{boundary}>', block[first.start() :], re.DOTALL
    )
    preface = block[: first.start()].rstrip("\n")
    kept: list[str] = []
    for section in sections:
        numbered = re.sub(r'n="\d+"', f'n="{len(kept) + 1}"', section, count=1)
        if fits(_SEPARATOR.join([preface, *kept, numbered])):
            kept.append(numbered)
    return _SEPARATOR.join([preface, *kept]) if kept else ""


def fit_for_agent(block: str, agent: str | None) -> str:
    """``block`` within ``agent``'s inline limit (unchanged for an agent we have no limit for)."""
    limit = LIMITS.get(agent or "")
    return block if limit is None else fit_block(block, limit.fits)
