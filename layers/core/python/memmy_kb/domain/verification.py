"""Does an uploaded object really hold what its extension says? Checked in bounded memory.

What arrives in S3 cannot be trusted, and MemOS must never see a file we have not looked at. Each check
reads only what it needs through a ``ByteSource``: a few ranges for the binary formats (magic bytes, the
ZIP's central directory) and one streamed pass for the text formats (UTF-8, JSON syntax, XML
well-formedness). Memory stays the same for a 1 KB and a 100 MB file: nothing here keeps more than a
chunk, a bounded ZIP directory, a few characters of a JSON token cut at a chunk boundary, or one XML tag
or comment of at most ``MAX_XML_TOKEN_BYTES`` (larger ones are refused).

``verify_content`` answers None when the bytes fit, or a human reason for the user when they do not.
"""

from __future__ import annotations

import codecs
import struct
from collections.abc import Iterable, Iterator
from typing import Final, Protocol
from xml.parsers import expat

from memmy_kb.domain.json_syntax import JsonSyntaxChecker

PDF_MAGIC: Final = b"%PDF-"
OLE_MAGIC: Final = bytes.fromhex("D0CF11E0A1B11AE1")
ZIP_LOCAL_HEADER: Final = b"PK\x03\x04"
DOCX_REQUIRED_PARTS: Final = frozenset({"[Content_Types].xml", "word/document.xml"})
# A real .docx directory is a few KB; this bound keeps a hostile one from costing memory.
MAX_ZIP_DIRECTORY_BYTES: Final = 4 * 1024 * 1024
MAX_XML_TOKEN_BYTES: Final = 4 * 1024 * 1024

NOT_UTF8: Final = "The file is not valid UTF-8 text."
REASONS: Final[dict[str, str]] = {
    "pdf": "The file is not a valid PDF.",
    "doc": "The file is not a valid Word 97-2003 document (.doc).",
    "docx": "The file is not a valid Word document (.docx).",
    "json": "The file is not valid JSON.",
    "xml": "The file is not well-formed XML.",
}
XML_DOCTYPE: Final = "XML files with a DOCTYPE or entity declarations are not accepted."
XML_TOO_LARGE_PART: Final = "The XML file has a tag or comment too large to process."
XML_TOO_DEEP: Final = "The XML file nests elements too deeply."
XML_TOO_MANY_NAMES: Final = "The XML file uses too many different attribute names."
XML_ENCODING: Final = "XML files must be encoded as UTF-8."
UNSUPPORTED: Final = "This file type is not supported."


class ByteSource(Protocol):
    """One stored object: its size, ranged reads, and a single streamed pass over its bytes."""

    @property
    def size(self) -> int: ...

    def read_range(self, start: int, length: int) -> bytes: ...

    def chunks(self) -> Iterable[bytes]: ...


def verify_content(source: ByteSource, extension: str) -> str | None:
    """None when the object's bytes fit ``extension``; otherwise the reason shown to the user."""
    check = _CHECKS.get(extension)
    if check is None:
        return UNSUPPORTED
    return check(source)


# -- binary formats ---------------------------------------------------------------------------------


def _check_pdf(source: ByteSource) -> str | None:
    return None if source.read_range(0, len(PDF_MAGIC)) == PDF_MAGIC else REASONS["pdf"]


def _check_doc(source: ByteSource) -> str | None:
    # An OLE2 compound file always has a whole 512-byte header sector.
    if source.size < 512 or source.read_range(0, len(OLE_MAGIC)) != OLE_MAGIC:
        return REASONS["doc"]
    return None


def _check_docx(source: ByteSource) -> str | None:
    if source.read_range(0, 4) != ZIP_LOCAL_HEADER:
        return REASONS["docx"]
    try:
        names = set(zip_member_names(source))
    except ValueError:
        return REASONS["docx"]
    return None if names >= DOCX_REQUIRED_PARTS else REASONS["docx"]


_EOCD = struct.Struct("<4sHHHHIIH")
_ZIP64_LOCATOR = struct.Struct("<4sIQI")
_ZIP64_EOCD = struct.Struct("<4sQHHIIQQQQ")
_CENTRAL_ENTRY = struct.Struct("<4s24xHHH12x")
_MAX_EOCD_SEARCH = _EOCD.size + 0xFFFF  # the record plus the longest possible archive comment


def zip_member_names(source: ByteSource) -> Iterator[str]:
    """The member names listed in a ZIP's central directory, read with two ranged reads.

    Raises ValueError when the archive's end records or directory are missing, inconsistent or larger
    than ``MAX_ZIP_DIRECTORY_BYTES``.
    """
    tail_start = max(0, source.size - _MAX_EOCD_SEARCH)
    tail = source.read_range(tail_start, source.size - tail_start)
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or at + _EOCD.size > len(tail):
        raise ValueError("no end of central directory record")
    _, _, _, _, entries, dir_size, dir_offset, _ = _EOCD.unpack_from(tail, at)
    if 0xFFFF in (entries,) or 0xFFFFFFFF in (dir_size, dir_offset):
        entries, dir_size, dir_offset = _zip64_directory(source, tail, at, tail_start)
    if dir_size > MAX_ZIP_DIRECTORY_BYTES or dir_offset + dir_size > source.size:
        raise ValueError("central directory out of bounds")
    directory = source.read_range(dir_offset, dir_size)
    position = 0
    for _ in range(entries):
        if position + _CENTRAL_ENTRY.size > len(directory):
            raise ValueError("truncated central directory")
        signature, name_len, extra_len, comment_len = _CENTRAL_ENTRY.unpack_from(directory, position)
        if signature != b"PK\x01\x02":
            raise ValueError("bad central directory entry")
        start = position + _CENTRAL_ENTRY.size
        yield directory[start : start + name_len].decode("utf-8", errors="replace")
        position = start + name_len + extra_len + comment_len


def _zip64_directory(source: ByteSource, tail: bytes, at: int, tail_start: int) -> tuple[int, int, int]:
    locator_at = at - _ZIP64_LOCATOR.size
    if locator_at < 0:
        raise ValueError("no ZIP64 locator")
    signature, _, record_offset, _ = _ZIP64_LOCATOR.unpack_from(tail, locator_at)
    if signature != b"PK\x06\x07" or record_offset + _ZIP64_EOCD.size > tail_start + locator_at:
        raise ValueError("bad ZIP64 locator")
    record = source.read_range(record_offset, _ZIP64_EOCD.size)
    if len(record) != _ZIP64_EOCD.size:
        raise ValueError("truncated ZIP64 record")
    fields = _ZIP64_EOCD.unpack(record)
    if fields[0] != b"PK\x06\x06":
        raise ValueError("bad ZIP64 record")
    return fields[7], fields[8], fields[9]


# -- text formats -----------------------------------------------------------------------------------


def _decoded(source: ByteSource) -> Iterator[str]:
    """The text in pieces, decoded incrementally; raises UnicodeDecodeError at the first bad byte."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="strict")
    for chunk in source.chunks():
        text = decoder.decode(chunk)
        if text:
            yield text
    tail = decoder.decode(b"", final=True)
    if tail:
        yield tail


def _check_text(source: ByteSource) -> str | None:
    try:
        for _ in _decoded(source):
            pass
    except UnicodeDecodeError:
        return NOT_UTF8
    return None


def _check_json(source: ByteSource) -> str | None:
    checker = JsonSyntaxChecker()
    try:
        for text in _decoded(source):
            checker.feed(text)
        checker.close()
    except UnicodeDecodeError:
        return NOT_UTF8
    except ValueError:
        return REASONS["json"]
    return None


class _Doctype(Exception):
    pass


class _Refused(Exception):
    """The document is well-formed so far but outside what we accept; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _refuse(*_: object) -> int:
    raise _Doctype


# Expat keeps one stack entry per open element and one table entry per distinct attribute name: bound
# both, or a small file of deep nesting or invented attribute names makes memory grow with the file.
MAX_XML_DEPTH = 1000
MAX_XML_ATTRIBUTE_NAMES = 10_000
_UTF8_NAMES = frozenset({"utf-8", "utf8", "us-ascii", "ascii"})


class _XmlLimits:
    def __init__(self) -> None:
        self.depth = 0
        self.attribute_names: set[str] = set()

    def start(self, _name: str, attributes: dict[str, str]) -> None:
        self.depth += 1
        if self.depth > MAX_XML_DEPTH:
            raise _Refused(XML_TOO_DEEP)
        if attributes:
            self.attribute_names.update(attributes)
            if len(self.attribute_names) > MAX_XML_ATTRIBUTE_NAMES:
                raise _Refused(XML_TOO_MANY_NAMES)

    def end(self, _name: str) -> None:
        self.depth -= 1

    @staticmethod
    def declaration(_version: str | None, encoding: str | None, _standalone: int) -> None:
        # We parse as UTF-8 whatever the file says; a reader that honours another declared encoding
        # (UTF-7 can spell "<!DOCTYPE" without a "<") would see a different document than we checked.
        if encoding is not None and encoding.lower() not in _UTF8_NAMES:
            raise _Refused(XML_ENCODING)


def _check_xml(source: ByteSource) -> str | None:
    # Two layers: a plain scan refuses any DOCTYPE/ENTITY text (entity bombs, external entities) before
    # the parser could act on it, and expat, with DTD handling switched off, checks well-formedness.
    parser = expat.ParserCreate(encoding="UTF-8")
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.StartDoctypeDeclHandler = _refuse
    parser.EntityDeclHandler = _refuse
    parser.ExternalEntityRefHandler = _refuse
    limits = _XmlLimits()
    parser.StartElementHandler = limits.start
    parser.EndElementHandler = limits.end
    parser.XmlDeclHandler = limits.declaration
    if hasattr(parser, "SetReparseDeferralEnabled"):
        # Expat >= 2.6 may hold input back to re-parse later; the size guard below needs it parsed now.
        parser.SetReparseDeferralEnabled(False)
    decoder = codecs.getincrementaldecoder("utf-8")(errors="strict")
    carry = b""
    fed = 0
    try:
        for chunk in source.chunks():
            decoder.decode(chunk)
            window = carry + chunk
            if b"<!DOCTYPE" in window or b"<!ENTITY" in window:
                return XML_DOCTYPE
            carry = window[-8:]
            parser.Parse(chunk, False)
            fed += len(chunk)
            # Text streams through expat, but one tag, attribute value or comment is buffered whole
            # (and its buffer doubles): refuse one that would make memory follow the file's size.
            if fed - max(parser.CurrentByteIndex, 0) > MAX_XML_TOKEN_BYTES:
                return XML_TOO_LARGE_PART
        decoder.decode(b"", final=True)
        parser.Parse(b"", True)
    except UnicodeDecodeError:
        return NOT_UTF8
    except _Doctype:
        return XML_DOCTYPE
    except _Refused as refused:
        return refused.reason
    except expat.ExpatError:
        return REASONS["xml"]
    return None


_CHECKS = {
    "pdf": _check_pdf,
    "doc": _check_doc,
    "docx": _check_docx,
    "txt": _check_text,
    "md": _check_text,
    "json": _check_json,
    "xml": _check_xml,
}


