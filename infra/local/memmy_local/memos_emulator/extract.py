"""Text extraction for the MemOS emulator: turns an uploaded document into titled sections of plain text.

Every problem with a document (bad encoding, broken container, forbidden XML, too much text, ...) is
reported as :class:`ExtractionError` with a short human reason; the emulator marks such a file "failed".

Resource guards: extracted text is capped at ``extraction.MAX_TEXT_CHARS`` characters (over the cap the
file fails rather than being silently truncated, like MemOS's own over-limit files); a DOCX whose zip
entries declare more than ``extract_docx.MAX_DOCX_UNCOMPRESSED_BYTES`` fails before it is parsed; a PDF
with more than ``extract_pdf.MAX_PDF_PAGES`` pages fails, and PDF extraction stops after
``extract_pdf.MAX_PDF_SECONDS``.

The extractors, one module per format: ``extract_text`` (txt, md, json, xml), ``extract_pdf``,
``extract_docx`` and ``extract_doc`` (Word 97-2003); what they share is in ``extraction``.
"""

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
