"""Chunking for the MemOS emulator: splits extracted sections into titled excerpts of bounded size.

An excerpt's title (MemOS's ``memory_key``) is its section's heading, or for text without one a short key
from the excerpt's own first words, never the file's name: a MemOS hit does not name its file.

Each non-blank line of a section is a paragraph. Paragraphs are packed greedily into excerpts (joined
with ``\\n``); a paragraph longer than the limit is split at sentence ends (Chinese 。！？； and English
.!?), and a sentence longer than the limit at a space near the end of the window, else anywhere.
Within a line, whitespace runs become one space; excerpts never start or end with whitespace.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memmy_local.memos_emulator.extraction import Section

# A sentence ends after Chinese terminators, or after English ones followed by space or the end,
# so "3.14" and "example.com" stay whole; closing quotes/brackets stay with their sentence. A run of
# English terminators is tried once, from its first character, whole: tried from each of them it cost
# the run's length each time (47 s for a line of 64 KB of "!" then a letter).
_SENTENCE_END = re.compile(r"""(?:[。！？；]+|(?<![.!?])[.!?]++(?=[\s"'”’)\]」』）]|$))[”’"')\]」』）]*\s*""")


@dataclass(frozen=True)
class Excerpt:
    """A searchable piece of a document: ``title`` is shown as the source, ``text`` is the content."""

    title: str
    text: str


# A short key is at most this many characters, as MemOS's keys are a few words.
KEY_CHARS = 40


def chunk_sections(sections: list[Section], *, max_chars: int = 800) -> list[Excerpt]:
    """Split every section into excerpts of at most ``max_chars`` characters, in document order.

    The title is the section heading, or the excerpt's ``short_key``. Empty sections produce no excerpt.
    """
    if max_chars < 1:
        raise ValueError("max_chars must be at least 1")
    return [
        Excerpt(section.heading or short_key(chunk), chunk)
        for section in sections
        for chunk in chunk_text(section.text, max_chars)
    ]


def short_key(text: str, max_chars: int = KEY_CHARS) -> str:
    """A short key for text with no heading: its first line, cut to ``max_chars`` (at a space when there
    is one in the second half of the window, else anywhere) and marked ``…`` when cut."""
    line = next((" ".join(line.split()) for line in text.splitlines() if line.strip()), "")
    if len(line) <= max_chars:
        return line or "untitled"
    cut = line.rfind(" ", max_chars // 2, max_chars + 1)
    return line[: cut if cut > 0 else max_chars].rstrip() + "…"


def chunk_text(text: str, max_chars: int) -> list[str]:
    """Split ``text`` into non-empty, whitespace-normalised chunks of at most ``max_chars`` characters."""
    chunks: list[str] = []
    current = ""
    for paragraph in _paragraphs(text):
        pieces = _split_paragraph(paragraph, max_chars) if len(paragraph) > max_chars else [paragraph]
        for index, piece in enumerate(pieces):
            # Only a paragraph's first piece may join the chunk before it: the others are already full.
            candidate = f"{current}\n{piece}" if current and index == 0 else None
            if candidate is not None and len(candidate) <= max_chars:
                current = candidate
                continue
            if current:
                chunks.append(current)
            current = piece
    if current:
        chunks.append(current)
    return chunks


def _paragraphs(text: str) -> list[str]:
    paragraphs = (" ".join(line.split()) for line in text.splitlines())
    return [paragraph for paragraph in paragraphs if paragraph]


def _split_paragraph(paragraph: str, max_chars: int) -> list[str]:
    """Pack sentences into pieces of at most ``max_chars``; hard-split sentences that are too long."""
    pieces: list[str] = []
    buffer = ""
    for sentence in sentences(paragraph):
        if len((buffer + sentence).rstrip()) <= max_chars:
            buffer += sentence
            continue
        if buffer.strip():
            pieces.append(buffer.strip())
        buffer = ""
        if len(sentence.rstrip()) <= max_chars:
            buffer = sentence
        else:
            *heads, buffer = _hard_split(sentence.strip(), max_chars)
            pieces.extend(heads)
    if buffer.strip():
        pieces.append(buffer.strip())
    return pieces


def sentences(paragraph: str) -> list[str]:
    """Sentences with their terminator and trailing space, so that joining them restores the paragraph."""
    sentences = []
    start = 0
    for match in _SENTENCE_END.finditer(paragraph):
        if match.end() > start:
            sentences.append(paragraph[start : match.end()])
            start = match.end()
    if start < len(paragraph):
        sentences.append(paragraph[start:])
    return sentences


def _hard_split(sentence: str, max_chars: int) -> list[str]:
    """Cut at the last space in the second half of the window (English words stay whole), else anywhere."""
    # Cut by index: slicing off the rest after each piece copied the sentence's length every time.
    pieces = []
    start, end = 0, len(sentence)
    while end - start > max_chars:
        cut = sentence.rfind(" ", start + max_chars // 2, start + max_chars + 1)
        if cut <= start:
            cut = start + max_chars
        pieces.append(sentence[start:cut].rstrip())
        start = cut
        while start < end and sentence[start].isspace():
            start += 1
    if start < end:
        pieces.append(sentence[start:])
    return pieces
