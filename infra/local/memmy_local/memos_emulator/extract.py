"""Text extraction for the MemOS emulator: an uploaded document becomes titled sections of plain text, by
the extractor of its format; any problem is an ``ExtractionError`` with a short reason (the file is marked
failed). Guards: the text is capped (``extraction.MAX_TEXT_CHARS``: over it the file fails, as MemOS's do),
a DOCX's declared size and a PDF's pages and extraction time are bounded."""

from __future__ import annotations

import re
from collections.abc import Callable

from .extract_doc import extract_doc
from .extract_docx import extract_docx
from .extract_pdf import extract_pdf
from .extract_text import extract_json, extract_md, extract_txt, extract_xml
from .extraction import ExtractionError, Section, finalize

SUPPORTED_EXTENSIONS = frozenset({"pdf", "docx", "doc", "txt", "md", "json", "xml"})


def extract_sections(filename: str, data: bytes) -> list[Section]:
    """Extract the text of ``data`` as sections, choosing the parser from ``filename``'s extension.

    Sections have non-empty, cleaned text (``\\n`` line ends, no control characters) and appear in
    document order. Raises :class:`ExtractionError` for any problem, never another exception type.
    """
    extension = file_extension(filename)
    if extension not in SUPPORTED_EXTENSIONS:
        raise ExtractionError(f"unsupported file type: {extension or 'no extension'}")
    if not data:
        raise ExtractionError("empty file")
    extractor, reason = _EXTRACTORS[extension]
    try:
        sections = extractor(data)
    except ExtractionError:
        raise
    except Exception as exc:  # any parser failure, including RecursionError/MemoryError on hostile input
        raise ExtractionError(reason) from exc
    return finalize(sections)


def file_extension(filename: str) -> str:
    """The lower-cased extension of ``filename`` without the dot ("" when there is none)."""
    base = re.split(r"[\\/]", filename)[-1]
    stem, dot, extension = base.rpartition(".")
    return extension.lower() if dot and stem else ""


_EXTRACTORS: dict[str, tuple[Callable[[bytes], list[Section]], str]] = {
    "txt": (extract_txt, "not a readable text file"),
    "md": (extract_md, "not a readable Markdown file"),
    "json": (extract_json, "not valid JSON"),
    "xml": (extract_xml, "not well-formed XML"),
    "pdf": (extract_pdf, "not a valid PDF"),
    "docx": (extract_docx, "not a valid DOCX"),
    "doc": (extract_doc, "not a valid Word 97-2003 document"),
}
