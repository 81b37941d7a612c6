"""The MemOS emulator's extractor for legacy Word 97-2003 ``.doc`` files ([MS-DOC]), in pure Python: the
FIB, then the piece table in the table stream, then each piece's text (cp1252 or UTF-16), field
instructions dropped. Encrypted and pre-97 files fail."""

from __future__ import annotations

import io
import re
import struct
from dataclasses import dataclass

from .extraction import ExtractionError, Section, check_size

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


def extract_doc(data: bytes) -> list[Section]:
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
        check_size(total)
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
    return int(struct.unpack_from("<H", _slice(data, offset, 2))[0])


def _u32(data: bytes, offset: int) -> int:
    return int(struct.unpack_from("<I", _slice(data, offset, 4))[0])
