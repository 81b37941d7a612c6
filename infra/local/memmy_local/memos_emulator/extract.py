"""Text extraction for the MemOS emulator: turns an uploaded document into titled sections of plain text.

Every problem with a document (bad encoding, broken container, forbidden XML, too much text, ...) is
reported as :class:`ExtractionError` with a short human reason; the emulator marks such a file "failed".

Resource guards: extracted text is capped at :data:`MAX_TEXT_CHARS` characters (over the cap the file
fails rather than being silently truncated, like MemOS's own over-limit files); a DOCX whose zip entries
declare more than :data:`MAX_DOCX_UNCOMPRESSED_BYTES` fails before it is parsed; a PDF with more than
:data:`MAX_PDF_PAGES` pages fails, and PDF extraction stops after :data:`MAX_PDF_SECONDS`.
"""

from __future__ import annotations

import codecs
import io
import json
import re
import struct
import time
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from xml.etree.ElementTree import Element

SUPPORTED_EXTENSIONS = frozenset({"pdf", "docx", "doc", "txt", "md", "json", "xml"})

MAX_TEXT_CHARS = 5_000_000
MAX_DOCX_UNCOMPRESSED_BYTES = 500 * 1024 * 1024
MAX_PDF_PAGES = 500  # MemOS's documented per-file page limit
MAX_PDF_SECONDS = 60.0


class ExtractionError(Exception):
    """A document could not be turned into text; ``str(error)`` is a short reason for people."""


@dataclass(frozen=True)
class Section:
    """A run of text under one heading (``None`` when the text has no heading)."""

    heading: str | None
    text: str


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
    return _finalize(sections)


def file_extension(filename: str) -> str:
    """The lower-cased extension of ``filename`` without the dot ("" when there is none)."""
    base = re.split(r"[\\/]", filename)[-1]
    stem, dot, extension = base.rpartition(".")
    return extension.lower() if dot and stem else ""


# --- shared helpers -------------------------------------------------------------------------------

_DROPPED_CONTROLS = re.compile(r"[\x00-\x08\x0e-\x1f\x7f\ud800-\udfff]")


def _clean(text: str) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x0b", "\n").replace("\x0c", "\n")
    return _DROPPED_CONTROLS.sub("", text).strip()


def _check_size(chars: int) -> None:
    if chars > MAX_TEXT_CHARS:
        raise ExtractionError(f"extracted text exceeds {MAX_TEXT_CHARS:,} characters")


def _finalize(sections: list[Section]) -> list[Section]:
    cleaned = [Section(_clean_heading(s.heading), _clean(s.text)) for s in sections]
    kept = [s for s in cleaned if s.text]
    if not kept:
        # A document made only of headings still has searchable words.
        headings = [s.heading for s in cleaned if s.heading]
        if not headings:
            raise ExtractionError("no text found")
        kept = [Section(None, "\n".join(headings))]
    _check_size(sum(len(s.text) for s in kept))
    return kept


def _clean_heading(heading: str | None) -> str | None:
    if heading is None:
        return None
    return " ".join(_clean(heading).split()) or None


def _decode_utf8(data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ExtractionError("file is not valid UTF-8") from None


# --- txt / md -------------------------------------------------------------------------------------


def _extract_txt(data: bytes) -> list[Section]:
    return [Section(None, _decode_utf8(data))]


_ATX_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT_UNDERLINE = re.compile(r"^ {0,3}(?:=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def _extract_md(data: bytes) -> list[Section]:
    sections: list[Section] = []
    heading: str | None = None
    body: list[str] = []
    fence: str | None = None
    for line in _decode_utf8(data).replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        fence_match = _FENCE.match(line)
        if fence is not None:
            if (
                fence_match
                and fence_match.group(1)[0] == fence[0]
                and len(fence_match.group(1)) >= len(fence)
            ):
                fence = None
            body.append(line)
            continue
        if fence_match:
            fence = fence_match.group(1)
            body.append(line)
            continue
        atx = _ATX_HEADING.match(line)
        if atx:
            sections.append(Section(heading, "\n".join(body)))
            heading, body = (atx.group(2) or "").strip() or None, []
        elif _is_setext_underline(line, body):
            title = body.pop().strip()
            sections.append(Section(heading, "\n".join(body)))
            heading, body = title, []
        else:
            body.append(line)
    sections.append(Section(heading, "\n".join(body)))
    return sections


def _is_setext_underline(line: str, body: list[str]) -> bool:
    """A setext underline directly below a one-line paragraph (a lone ``---`` stays a thematic break)."""
    if not _SETEXT_UNDERLINE.match(line) or not body or not body[-1].strip():
        return False
    previous = body[-1]
    if previous.startswith(("    ", "\t")) or re.match(r"^ {0,3}([-*+>]|\d+[.)])[ \t]", previous):
        return False
    return len(body) == 1 or not body[-2].strip()


# --- json -----------------------------------------------------------------------------------------


def _extract_json(data: bytes) -> list[Section]:
    text = _decode_utf8(data)
    try:
        value = json.loads(text)
    except ValueError:
        raise ExtractionError("not valid JSON") from None
    return [Section(None, "\n".join(_json_lines(value)))]


def _json_lines(root: Any) -> Iterator[str]:
    """``path.to.key: value`` lines in document order; iterative so deep nesting cannot overflow."""
    stack: list[tuple[str, Any]] = [("", root)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, dict):
            children = [(f"{path}.{key}" if path else str(key), item) for key, item in value.items()]
            stack.extend(reversed(children))
        elif isinstance(value, list):
            stack.extend(reversed([(f"{path}[{index}]", item) for index, item in enumerate(value)]))
        elif value is not None:
            rendered = _json_scalar(value)
            yield f"{path}: {rendered}" if path else rendered


def _json_scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


# --- xml ------------------------------------------------------------------------------------------


def _extract_xml(data: bytes) -> list[Section]:
    from defusedxml import DefusedXmlException
    from defusedxml.ElementTree import fromstring

    try:
        root = fromstring(_as_utf8_xml(data), forbid_dtd=True, forbid_entities=True, forbid_external=True)
    except DefusedXmlException:
        raise ExtractionError("XML with DOCTYPE/entities is not allowed") from None
    return [Section(None, "\n".join(_xml_texts(root)))]


_XML_ENCODING_DECL = re.compile(r"""^\ufeff?\s*<\?xml[^>]*?\bencoding\s*=\s*["']([A-Za-z][\w.:-]*)["']""")


def _as_utf8_xml(data: bytes) -> bytes:
    """Re-encode XML declared in a legacy encoding (GBK, Big5...) as UTF-8: expat rejects multi-byte ones."""
    head = data[:200].decode("latin-1")
    match = _XML_ENCODING_DECL.match(head)
    if not match:
        return data
    try:
        codec = codecs.lookup(match.group(1)).name
    except LookupError:
        return data  # let expat report the unknown encoding
    if codec in ("utf-8", "utf-8-sig"):
        return data
    text = data.decode(codec)  # a decode error surfaces as "not well-formed XML"
    start, end = match.span(1)
    return (text[:start] + "UTF-8" + text[end:]).encode("utf-8")


def _xml_texts(root: Element) -> Iterator[str]:
    """Element texts and tails in document order, whitespace collapsed; iterative for deep trees."""
    stack: list[Element | str] = [root]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            pieces = [item]
        else:
            pieces = [item.text or ""]
            # The tail follows the element's children, so it is pushed below them.
            stack.append(item.tail or "")
            stack.extend(reversed(list(item)))
        for piece in pieces:
            collapsed = " ".join(piece.split())
            if collapsed:
                yield collapsed


# --- pdf ------------------------------------------------------------------------------------------


def _extract_pdf(data: bytes) -> list[Section]:
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
        _check_size(total)
        sections.append(Section(None, text))
    return sections


def _decrypt_with_empty_password(reader: Any) -> bool:
    """Owner-password-only PDFs open with an empty user password."""
    try:
        return bool(reader.decrypt(""))
    except Exception:  # unsupported cipher or missing crypto backend: treat as locked
        return False


# --- docx -----------------------------------------------------------------------------------------


def _extract_docx(data: bytes) -> list[Section]:
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
        _check_size(total)
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


# --- doc (Word 97-2003 binary, [MS-DOC]) ----------------------------------------------------------

_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_WORD_IDENT = 0xA5EC
_MIN_NFIB = 0x00C0  # older FIBs (Word 6/95) have no piece table in this layout
_F_ENCRYPTED = 0x0100
_F_WHICH_TBL_STM = 0x0200
_FC_CLX_INDEX = 33  # position of the fcClx/lcbClx pair in FibRgFcLcb97
_FC_COMPRESSED = 0x40000000
_FC_MASK = 0x3FFFFFFF


@dataclass(frozen=True)
class _Piece:
    cp_start: int
    cp_end: int
    fc: int


def _extract_doc(data: bytes) -> list[Section]:
    import olefile

    if not data.startswith(_OLE_MAGIC):
        raise ExtractionError("not a Word document (not an OLE file)")
    with olefile.OleFileIO(io.BytesIO(data)) as ole:
        if not ole.exists("WordDocument"):
            raise ExtractionError("not a Word document (no WordDocument stream)")
        word = ole.openstream("WordDocument").read()
        fib = _read_fib(word)
        table_name = "1Table" if fib.which_table else "0Table"
        if not ole.exists(table_name):
            raise ExtractionError(f"Word document has no {table_name} stream")
        table = ole.openstream(table_name).read()
    texts: list[str] = []
    total = 0
    for piece in _read_piece_table(_slice(table, fib.fc_clx, fib.lcb_clx)):
        texts.append(_piece_text(word, piece, fib.ccp_text))
        total += len(texts[-1])
        _check_size(total)
    return [Section(None, _convert_word_text("".join(texts)))]


@dataclass(frozen=True)
class _Fib:
    which_table: bool
    ccp_text: int
    fc_clx: int
    lcb_clx: int


def _read_fib(word: bytes) -> _Fib:
    """Read the fields we need from the File Information Block at the start of the WordDocument stream."""
    if len(word) < 34 or _u16(word, 0) != _WORD_IDENT:
        raise ExtractionError("not a Word document (bad FIB signature)")
    if _u16(word, 2) < _MIN_NFIB:
        raise ExtractionError("Word 95 or older documents are not supported")
    flags = _u16(word, 0x0A)
    if flags & _F_ENCRYPTED:
        raise ExtractionError("Word document is encrypted")
    pos = 32
    csw = _u16(word, pos)  # FibRgW97: csw 16-bit words
    pos += 2 + 2 * csw
    cslw = _u16(word, pos)  # FibRgLw97: cslw 32-bit words; ccpText is the 4th
    fib_rg_lw = pos + 2
    if cslw < 4:
        raise ExtractionError("corrupt Word document (short FIB)")
    ccp_text = _u32(word, fib_rg_lw + 12)
    pos = fib_rg_lw + 4 * cslw
    cb_rg_fc_lcb = _u16(word, pos)
    if cb_rg_fc_lcb <= _FC_CLX_INDEX:
        raise ExtractionError("corrupt Word document (short FIB)")
    pair = pos + 2 + 8 * _FC_CLX_INDEX
    return _Fib(bool(flags & _F_WHICH_TBL_STM), ccp_text, _u32(word, pair), _u32(word, pair + 4))


def _read_piece_table(clx: bytes) -> list[_Piece]:
    """Skip the Prc entries of a Clx and decode its Pcdt's PlcPcd into pieces."""
    pos = 0
    while pos < len(clx):
        kind = clx[pos]
        if kind == 0x01:  # Prc: clxt, cbGrpprl (int16), grpprl
            size = struct.unpack_from("<h", clx, pos + 1)[0]
            if size < 0:
                raise ExtractionError("corrupt Word document (bad Prc)")
            pos += 3 + size
        elif kind == 0x02:  # Pcdt: clxt, lcb (uint32), PlcPcd
            lcb = _u32(clx, pos + 1)
            return _parse_plc_pcd(_slice(clx, pos + 5, lcb))
        else:
            break
    raise ExtractionError("corrupt Word document (no piece table)")


def _parse_plc_pcd(plc: bytes) -> list[_Piece]:
    count, remainder = divmod(len(plc) - 4, 12)  # n+1 CPs of 4 bytes and n PCDs of 8 bytes
    if count < 1 or remainder:
        raise ExtractionError("corrupt Word document (bad piece table)")
    cps = struct.unpack_from(f"<{count + 1}I", plc, 0)
    pieces = []
    for index in range(count):
        fc = _u32(plc, 4 * (count + 1) + 8 * index + 2)
        if cps[index + 1] < cps[index]:
            raise ExtractionError("corrupt Word document (bad piece table)")
        pieces.append(_Piece(cps[index], cps[index + 1], fc))
    return pieces


def _piece_text(word: bytes, piece: _Piece, ccp_text: int) -> str:
    """The piece's characters that belong to the main document (CPs below ccpText)."""
    end = min(piece.cp_end, ccp_text) if ccp_text else piece.cp_end
    length = end - piece.cp_start
    if length <= 0:
        return ""
    offset = piece.fc & _FC_MASK
    if piece.fc & _FC_COMPRESSED:
        return _slice(word, offset // 2, length).decode("cp1252", errors="replace")
    return _slice(word, offset, 2 * length).decode("utf-16-le", errors="replace")


_WORD_CHARS = str.maketrans(
    {
        "\r": "\n",  # paragraph mark
        "\x0b": "\n",  # manual line break
        "\x0c": "\n",  # page / section break
        "\x07": "\t",  # table cell mark (row ends are handled before this)
        "\x1e": "-",  # non-breaking hyphen
        "\x1f": None,  # optional hyphen
    }
)
_OTHER_CONTROLS = re.compile(r"[\x00-\x08\x0e-\x1f]")


def _convert_word_text(raw: str) -> str:
    text = _strip_field_instructions(raw).replace("\x07\x07", "\x07\n")
    return _OTHER_CONTROLS.sub("", text.translate(_WORD_CHARS))


def _strip_field_instructions(text: str) -> str:
    """Drop field codes (between 0x13 and 0x14) and keep field results (between 0x14 and 0x15)."""
    out: list[str] = []
    in_result: list[bool] = []  # one entry per open field, possibly nested
    hidden = 0  # open fields still in their instruction part
    for char in text:
        if char == "\x13":
            in_result.append(False)
            hidden += 1
        elif char == "\x14" and in_result and not in_result[-1]:
            in_result[-1] = True
            hidden -= 1
        elif char == "\x15" and in_result:
            hidden -= not in_result.pop()
        elif not hidden:
            out.append(char)
    return "".join(out)


def _slice(data: bytes, offset: int, length: int) -> bytes:
    if offset < 0 or length < 0 or offset + length > len(data):
        raise ExtractionError("corrupt Word document (data out of range)")
    return data[offset : offset + length]


def _u16(data: bytes, offset: int) -> int:
    return struct.unpack_from("<H", _slice(data, offset, 2))[0]


def _u32(data: bytes, offset: int) -> int:
    return struct.unpack_from("<I", _slice(data, offset, 4))[0]


_EXTRACTORS: dict[str, tuple[Callable[[bytes], list[Section]], str]] = {
    "txt": (_extract_txt, "not a readable text file"),
    "md": (_extract_md, "not a readable Markdown file"),
    "json": (_extract_json, "not valid JSON"),
    "xml": (_extract_xml, "not well-formed XML"),
    "pdf": (_extract_pdf, "not a valid PDF"),
    "docx": (_extract_docx, "not a valid DOCX"),
    "doc": (_extract_doc, "not a valid Word 97-2003 document"),
}
