"""The MemOS emulator's PDF extractor (pypdf): one section per page, at most :data:`MAX_PDF_PAGES` pages and
:data:`MAX_PDF_SECONDS` of extraction; an owner-password-only PDF opens, an encrypted one fails."""

from __future__ import annotations

import io
import time
from typing import Any

from .extraction import ExtractionError, Section, check_size

MAX_PDF_PAGES = 500  # MemOS's documented per-file page limit
MAX_PDF_SECONDS = 60.0


def extract_pdf(data: bytes) -> list[Section]:
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(data))
    if reader.is_encrypted and not _decrypt_with_empty_password(reader):
        raise ExtractionError("PDF is encrypted")
    pages = reader.pages
    if len(pages) > MAX_PDF_PAGES:
        raise ExtractionError(f"PDF has more than {MAX_PDF_PAGES} pages")
    deadline = time.monotonic() + MAX_PDF_SECONDS
    sections: list[Section] = []
    total = 0
    for page in pages:
        if time.monotonic() > deadline:
            raise ExtractionError("PDF text extraction took too long")
        text = page.extract_text() or ""
        total += len(text)
        check_size(total)
        sections.append(Section(None, text))
    return sections


def _decrypt_with_empty_password(reader: Any) -> bool:
    """Owner-password-only PDFs open with an empty user password."""
    try:
        return bool(reader.decrypt(""))
    except Exception:  # unsupported cipher or missing crypto backend: treat as locked
        return False
