"""The MemOS emulator's DOCX extractor (python-docx): headings start sections, tables are read row by row.

A DOCX whose zip entries declare more than :data:`MAX_DOCX_UNCOMPRESSED_BYTES` fails before it is parsed.
"""

from __future__ import annotations

import io
import zipfile
from typing import Any

from .extraction import ExtractionError, Section, check_size

MAX_DOCX_UNCOMPRESSED_BYTES = 500 * 1024 * 1024


def extract_docx(data: bytes) -> list[Section]:
    _check_docx_container(data)
    import docx
    from docx.table import Table

    document = docx.Document(io.BytesIO(data))
    sections: list[Section] = []
    heading: str | None = None
    lines: list[str] = []
    total = 0
    for block in document.iter_inner_content():
        if isinstance(block, Table):
            new_lines = _table_lines(block)
        elif _is_heading(block):
            sections.append(Section(heading, "\n".join(lines)))
            heading, lines = block.text.strip() or None, []
            continue
        else:
            new_lines = [block.text]
        lines.extend(new_lines)
        total += sum(len(line) + 1 for line in new_lines)
        check_size(total)
    sections.append(Section(heading, "\n".join(lines)))
    return sections


def _check_docx_container(data: bytes) -> None:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            infos = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError):
        raise ExtractionError("not a valid DOCX (not a zip archive)") from None
    # Declared sizes bound what zipfile will inflate, so summing them defeats zip bombs cheaply.
    if sum(info.file_size for info in infos) > MAX_DOCX_UNCOMPRESSED_BYTES:
        raise ExtractionError("DOCX is too large when uncompressed")
    if "word/document.xml" not in {info.filename for info in infos}:
        raise ExtractionError("not a valid DOCX (no word/document.xml)")


def _is_heading(paragraph: Any) -> bool:
    style = paragraph.style
    name = (style.name or "") if style is not None else ""
    return name.startswith("Heading") or name == "Title"


def _table_lines(table: Any) -> list[str]:
    """One tab-separated line per row; merged cells (same underlying cell) appear once."""
    lines = []
    for row in table.rows:
        cells: list[str] = []
        seen: set[int] = set()
        for cell in row.cells:
            if id(cell._tc) in seen:
                continue
            seen.add(id(cell._tc))
            cells.append(" ".join(cell.text.split()))
        lines.append("\t".join(cells))
    return lines
