"""What every extractor of the MemOS emulator shares: ``Section``, ``ExtractionError``, the text cap and
the cleaning every section gets (``\n`` line ends, no control characters, no empty sections).

Extracted text is capped at :data:`MAX_TEXT_CHARS` characters: over the cap the file fails rather than
being silently truncated, like MemOS's own over-limit files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_TEXT_CHARS = 5_000_000


class ExtractionError(Exception):
    """A document could not be turned into text; ``str(error)`` is a short reason for people."""


@dataclass(frozen=True)
class Section:
    """A run of text under one heading (``None`` when the text has no heading)."""

    heading: str | None
    text: str


_DROPPED_CONTROLS = re.compile(r"[\x00-\x08\x0e-\x1f\x7f\ud800-\udfff]")


def clean(text: str) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x0b", "\n").replace("\x0c", "\n")
    return _DROPPED_CONTROLS.sub("", text).strip()


def check_size(chars: int) -> None:
    if chars > MAX_TEXT_CHARS:
        raise ExtractionError(f"extracted text exceeds {MAX_TEXT_CHARS:,} characters")


def finalize(sections: list[Section]) -> list[Section]:
    cleaned = [Section(clean_heading(s.heading), clean(s.text)) for s in sections]
    kept = [s for s in cleaned if s.text]
    if not kept:
        # A document made only of headings still has searchable words.
        headings = [s.heading for s in cleaned if s.heading]
        if not headings:
            raise ExtractionError("no text found")
        kept = [Section(None, "\n".join(headings))]
    check_size(sum(len(s.text) for s in kept))
    return kept


def clean_heading(heading: str | None) -> str | None:
    if heading is None:
        return None
    return " ".join(clean(heading).split()) or None


def decode_utf8(data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ExtractionError("file is not valid UTF-8") from None
