"""Sample documents generated in memory for tests, one function per format, each returning bytes.

Nothing binary is committed: PDFs come from reportlab (Chinese in the built-in STSong-Light CID font,
which needs no font file), DOCX from python-docx, and legacy DOC from a small Compound File Binary
writer plus a minimal Word 97 FIB and piece table written here ([MS-CFB], [MS-DOC]).
"""

from __future__ import annotations

import io
import json
import struct
from typing import Any
from xml.sax.saxutils import escape

# --- text formats ---------------------------------------------------------------------------------


def make_txt(text: str, *, bom: bool = False) -> bytes:
    """UTF-8 text, optionally with a byte-order mark."""
    return ("\ufeff" if bom else "").encode() + text.encode("utf-8")


def make_md(blocks: list[tuple[str | None, str]], *, level: int = 1) -> bytes:
    """Markdown with an ATX heading (``#`` * level) before each block that has one."""
    parts = []
    for heading, text in blocks:
        if heading is not None:
            parts.append(f"{'#' * level} {heading}")
        parts.append(text)
    return "\n\n".join(parts).encode("utf-8")


def make_json(value: Any) -> bytes:
    """JSON with non-ASCII characters kept as they are."""
    return json.dumps(value, ensure_ascii=False, indent=2).encode("utf-8")


def make_xml(paragraphs: list[str], *, root: str = "document") -> bytes:
    """An XML document with one ``<p>`` element per paragraph."""
    body = "".join(f"<p>{escape(p)}</p>" for p in paragraphs)
    return f'<?xml version="1.0" encoding="UTF-8"?><{root}>{body}</{root}>'.encode()


# --- pdf ------------------------------------------------------------------------------------------


def make_pdf(paragraphs: list[str], *, user_password: str | None = None) -> bytes:
    """A PDF with one paragraph per entry; non-ASCII text is set in the STSong-Light CID font."""
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import ParagraphStyle
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.cidfonts import UnicodeCIDFont
    from reportlab.platypus import Paragraph, SimpleDocTemplate

    pdfmetrics.registerFont(UnicodeCIDFont("STSong-Light"))
    latin = ParagraphStyle("latin", fontName="Helvetica", fontSize=11, leading=16, spaceAfter=8)
    cjk = ParagraphStyle("cjk", parent=latin, fontName="STSong-Light", wordWrap="CJK")
    buffer = io.BytesIO()
    document = SimpleDocTemplate(buffer, pagesize=A4, invariant=1, encrypt=user_password)
    story = [Paragraph(escape(p), cjk if any(ord(c) > 127 for c in p) else latin) for p in paragraphs]
    document.build(story)
    return buffer.getvalue()


# --- docx -----------------------------------------------------------------------------------------


def make_docx(
    blocks: list[tuple[str | None, str]],
    *,
    table: list[list[str]] | None = None,
    title: str | None = None,
) -> bytes:
    """A DOCX: an optional Title paragraph, then per block a Heading 1 (if given) and a paragraph,
    then an optional table (rows of cell texts)."""
    import docx

    document = docx.Document()
    if title is not None:
        document.add_heading(title, level=0)
    for heading, text in blocks:
        if heading is not None:
            document.add_heading(heading, level=1)
        document.add_paragraph(text)
    if table:
        grid = document.add_table(rows=len(table), cols=max(len(row) for row in table))
        for row_cells, row in zip(grid.rows, table, strict=True):
            for cell, value in zip(row_cells.cells, row, strict=False):
                cell.text = value
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


# --- doc (Word 97 binary) -------------------------------------------------------------------------

_SECTOR = 512
_FREESECT = 0xFFFFFFFF
_ENDOFCHAIN = 0xFFFFFFFE
_FATSECT = 0xFFFFFFFD
_NOSTREAM = 0xFFFFFFFF
_MIN_STREAM = 4096  # streams this large live in regular sectors, so no mini stream is needed
_TEXT_OFFSET = 1024  # where the piece's text starts in the WordDocument stream, after the FIB


def make_doc(text: str, *, compressed: bool = False, table_stream: str = "1Table") -> bytes:
    """A minimal Word 97 document holding ``text`` (``\\n`` become paragraph marks) as one piece.

    ``compressed`` stores the piece as 8-bit cp1252 (fCompressed) instead of UTF-16LE.
    ``table_stream`` names the table stream ("1Table" sets fWhichTblStm, "0Table" clears it).
    """
    body = text.replace("\n", "\r")
    if not body.endswith("\r"):
        body += "\r"  # Word's main text always ends with a paragraph mark
    encoded = body.encode("cp1252") if compressed else body.encode("utf-16-le")
    fc = (_TEXT_OFFSET * 2) | 0x40000000 if compressed else _TEXT_OFFSET
    clx = _clx(len(body), fc)
    fib = _fib(ccp_text=len(body), fc_clx=0, lcb_clx=len(clx), which_table=table_stream == "1Table")
    word = fib.ljust(_TEXT_OFFSET, b"\0") + encoded
    return make_cfb({"WordDocument": word, table_stream: clx})


def _fib(*, ccp_text: int, fc_clx: int, lcb_clx: int, which_table: bool) -> bytes:
    """FibBase + FibRgW97 + FibRgLw97 + FibRgFcLcb97 + cswNew=0: the 900-byte Word 97 FIB."""
    flags = 0x0200 if which_table else 0
    flags |= 0x1000  # fExtChar: text may hold Unicode
    # wIdent, nFib, unused, lid, pnNext, flags, nFibBack, lKey, envr, flags2, reserved3..6
    base = struct.pack("<7HIBBHHII", 0xA5EC, 0x00C1, 0, 0x0409, 0, flags, 0x00BF, 0, 0, 0, 0, 0, 0, 0)
    rg_w = struct.pack("<H", 14) + b"\0" * 28
    rg_lw = [0] * 22
    rg_lw[0] = _TEXT_OFFSET + 2 * ccp_text  # cbMac
    rg_lw[3] = ccp_text
    rg_lw_bytes = struct.pack("<H22I", 22, *rg_lw)
    fc_lcb = [0] * (93 * 2)
    fc_lcb[33 * 2] = fc_clx
    fc_lcb[33 * 2 + 1] = lcb_clx
    rg_fc_lcb = struct.pack(f"<H{93 * 2}I", 93, *fc_lcb)
    return base + rg_w + rg_lw_bytes + rg_fc_lcb + struct.pack("<H", 0)


def _clx(ccp: int, fc: int) -> bytes:
    """A Prc (two bytes of grpprl, skipped by readers) then a Pcdt with a single piece covering [0, ccp)."""
    prc = struct.pack("<Bh", 0x01, 2) + b"\0\0"
    plc_pcd = struct.pack("<II", 0, ccp) + struct.pack("<HIH", 0, fc, 0)
    return prc + struct.pack("<BI", 0x02, len(plc_pcd)) + plc_pcd


def make_cfb(streams: dict[str, bytes]) -> bytes:
    """A version 3 Compound File with the given top-level streams, each padded to >= 4096 bytes."""
    names = sorted(streams, key=lambda name: (len(name), name.upper()))  # CFB directory order
    sized = {name: streams[name].ljust(_MIN_STREAM, b"\0") for name in names}
    padded = {name: _pad(sized[name]) for name in names}
    entries = 1 + len(names)
    dir_sectors = -(-entries // 4)
    data_sectors = sum(len(block) // _SECTOR for block in padded.values())
    fat_sectors = 1
    while fat_sectors * 128 < fat_sectors + dir_sectors + data_sectors:
        fat_sectors += 1
    fat = [_FATSECT] * fat_sectors
    dir_start = len(fat)
    fat += _chain(dir_start, dir_sectors)
    starts = {}
    for name in names:
        starts[name] = len(fat)
        fat += _chain(len(fat), len(padded[name]) // _SECTOR)
    fat += [_FREESECT] * (fat_sectors * 128 - len(fat))

    directory = _dir_entry("Root Entry", 5, child=1 if names else _NOSTREAM, start=_ENDOFCHAIN, size=0)
    for index, name in enumerate(names, start=1):
        right = index + 1 if index < len(names) else _NOSTREAM
        # A right-leaning chain of siblings is a valid (if unbalanced) ordered tree.
        directory += _dir_entry(name, 2, right=right, start=starts[name], size=len(sized[name]))
    directory = directory.ljust(dir_sectors * _SECTOR, b"\0")
    directory = _blank_unused_entries(directory, entries)

    header = _cfb_header(fat_sectors, dir_start)
    fat_bytes = struct.pack(f"<{len(fat)}I", *fat)
    return header + fat_bytes + directory + b"".join(padded[name] for name in names)


def _pad(block: bytes) -> bytes:
    return block + b"\0" * (-len(block) % _SECTOR)


def _chain(start: int, count: int) -> list[int]:
    return [start + i + 1 for i in range(count - 1)] + [_ENDOFCHAIN]


def _cfb_header(fat_sectors: int, dir_start: int) -> bytes:
    if fat_sectors > 109:
        raise ValueError("too large for a header-only DIFAT")
    header = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 16
    header += struct.pack("<HHHHH", 0x003E, 0x0003, 0xFFFE, 9, 6) + b"\0" * 6
    header += struct.pack(
        "<IIIIIIIII", 0, fat_sectors, dir_start, 0, _MIN_STREAM, _ENDOFCHAIN, 0, _ENDOFCHAIN, 0
    )
    difat = list(range(fat_sectors)) + [_FREESECT] * (109 - fat_sectors)
    return header + struct.pack("<109I", *difat)


def _dir_entry(
    name: str,
    kind: int,
    *,
    left: int = _NOSTREAM,
    right: int = _NOSTREAM,
    child: int = _NOSTREAM,
    start: int,
    size: int,
) -> bytes:
    encoded = (name + "\0").encode("utf-16-le")
    entry = encoded.ljust(64, b"\0") + struct.pack("<HBB", len(encoded), kind, 1)
    entry += struct.pack("<III", left, right, child) + b"\0" * 16 + struct.pack("<I", 0) + b"\0" * 16
    return entry + struct.pack("<IQ", start, size)


def _blank_unused_entries(directory: bytes, used: int) -> bytes:
    """Unused directory slots are empty entries whose sibling/child ids are NOSTREAM."""
    blank = b"\0" * 68 + struct.pack("<III", _NOSTREAM, _NOSTREAM, _NOSTREAM) + b"\0" * 48
    slots = len(directory) // 128
    return directory[: used * 128] + blank * (slots - used)


def make_docx_with_document(document: bytes) -> bytes:
    """A .docx holding exactly ``document`` as its ``word/document.xml`` (deflated): bombs, broken XML."""
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", b"<Types/>")
        archive.writestr("word/document.xml", document)
    return buffer.getvalue()
