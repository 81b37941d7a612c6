"""Does an uploaded object really hold what its extension says? Checked in bounded memory.

What arrives in S3 cannot be trusted, and MemOS must never see a file we have not looked at. Each check
reads only what it needs through a ``ByteSource``: a few ranges for the binary formats (magic bytes, the
ZIP's central directory) and one streamed pass for the text formats (UTF-8, JSON syntax, XML
well-formedness; no NUL byte in a file without an extension, taken as plain text). Memory stays the same for a 1 KB and a 100 MB file: nothing here keeps more than a
chunk, a bounded ZIP directory, a few characters of a JSON token cut at a chunk boundary, or one XML tag
or comment of at most ``MAX_XML_TOKEN_BYTES`` (larger ones are refused).

``verify_content`` answers None when the bytes fit, or a human reason for the user when they do not.
Each source also gives the bytes' SHA-256 (``sha256``): computed in the streamed pass the text checks
make, or, for a stored binary format whose checks read only a few ranges, in one streamed pass of its own
(still bounded memory). Uploads and replaces are compared by it without reading the bytes again.
"""

from __future__ import annotations

import codecs
import hashlib
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Final
from xml.parsers import expat

from memmy_kb.domain.fingerprints.zipfiles import ByteSource, inflated_member, zip_members
from memmy_kb.domain.ports.uploads import UploadObjects
from memmy_kb.domain.storage import ObjectInfo
from memmy_kb.domain.uploads.json_syntax import JsonSyntaxChecker

PDF_MAGIC: Final = b"%PDF-"
# How far from the end a PDF's trailer may start ("startxref", its offset, "%%EOF", some padding).
PDF_TRAILER_WINDOW: Final = 2048
# Everything a .docx may unpack to, and how much more than its compressed size one member may declare.
MAX_DOCX_UNPACKED_BYTES: Final = 512 * 1024 * 1024
MAX_DOCX_RATIO: Final = 200
OLE_MAGIC: Final = bytes.fromhex("D0CF11E0A1B11AE1")
ZIP_LOCAL_HEADER: Final = b"PK\x03\x04"
DOCX_REQUIRED_PARTS: Final = frozenset({"[Content_Types].xml", "word/document.xml"})
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
PDF_NO_TRAILER: Final = "The PDF has no end-of-file trailer; it may be cut short."
DOC_BAD_HEADER: Final = "The .doc file's header is not valid."
DOCX_BOMB: Final = "The Word document unpacks to far more than its size (a zip bomb?)."
DOCX_BAD_XML: Final = "The Word document's text (word/document.xml) is not well-formed XML."
XML_EXTERNAL: Final = "XML files that include other files or stylesheets are not accepted."


@dataclass
class MemorySource:
    """A small object already read into memory, verified without reading it again."""

    data: bytes

    @property
    def size(self) -> int:
        return len(self.data)

    def read_range(self, start: int, length: int) -> bytes:
        return self.data[start : start + length]

    def chunks(self) -> Iterable[bytes]:
        yield self.data

    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


@dataclass
class StoredSource:
    """A stored object read in ranges and one stream, every read pinned to the ETag of ``info``.

    A stream read to its end leaves the object's hash behind, so ``sha256`` after the text checks reads
    nothing more; after the binary checks it streams the object once.
    """

    storage: UploadObjects
    info: ObjectInfo
    _digest: str | None = field(default=None, init=False, repr=False)

    @property
    def size(self) -> int:
        return self.info.size

    def read_range(self, start: int, length: int) -> bytes:
        return self.storage.read_range(self.info, start, length)

    def chunks(self) -> Iterator[bytes]:
        hasher = hashlib.sha256()
        for chunk in self.storage.iter_chunks(self.info):
            hasher.update(chunk)
            yield chunk
        self._digest = hasher.hexdigest()

    def sha256(self) -> str:
        if self._digest is None:
            for _ in self.chunks():
                pass
        assert self._digest is not None
        return self._digest


def verify_content(source: ByteSource, extension: str) -> str | None:
    """None when the object's bytes fit ``extension``; otherwise the reason shown to the user."""
    check = _CHECKS.get(extension)
    if check is None:
        return UNSUPPORTED
    return check(source)


# -- binary formats ---------------------------------------------------------------------------------


def _check_pdf(source: ByteSource) -> str | None:
    if source.read_range(0, len(PDF_MAGIC)) != PDF_MAGIC:
        return REASONS["pdf"]
    # A PDF ends with its trailer: "startxref", the offset, "%%EOF" (some writers add a little after it).
    tail = source.read_range(max(0, source.size - PDF_TRAILER_WINDOW), PDF_TRAILER_WINDOW)
    at = tail.rfind(b"%%EOF")
    return None if at >= 0 and b"startxref" in tail[:at] else PDF_NO_TRAILER


def _check_doc(source: ByteSource) -> str | None:
    # An OLE2 compound file always has a whole 512-byte header sector.
    if source.size < 512 or source.read_range(0, len(OLE_MAGIC)) != OLE_MAGIC:
        return REASONS["doc"]
    header = source.read_range(0, 512)
    minor, major, byte_order, sector_shift, mini_shift = struct.unpack_from("<HHHHH", header, 24)
    # Version 3 uses 512-byte sectors, version 4 4096-byte ones; mini sectors are always 64 bytes.
    valid = byte_order == 0xFFFE and mini_shift == 6 and (major, sector_shift) in ((3, 9), (4, 12))
    return None if valid and minor < 0x1000 else DOC_BAD_HEADER


def _check_docx(source: ByteSource) -> str | None:
    if source.read_range(0, 4) != ZIP_LOCAL_HEADER:
        return REASONS["docx"]
    try:
        members = {member.name: member for member in zip_members(source)}
    except ValueError:
        return REASONS["docx"]
    if not members.keys() >= DOCX_REQUIRED_PARTS:
        return REASONS["docx"]
    # A zip bomb declares what it will become: refuse it before inflating anything.
    if sum(m.uncompressed_size for m in members.values()) > MAX_DOCX_UNPACKED_BYTES or any(
        m.uncompressed_size > MAX_DOCX_RATIO * max(m.compressed_size, 1) + 1024 * 1024 for m in members.values()
    ):
        return DOCX_BOMB
    try:
        reason = _check_xml_stream(inflated_member(source, members["word/document.xml"]))
    except ValueError:
        return REASONS["docx"]
    return None if reason is None else DOCX_BAD_XML


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


def _check_plain_text(source: ByteSource) -> str | None:
    """A file without an extension is taken only as plain text: a NUL byte says it is something else (a
    program, an image), a type the service does not take."""
    try:
        for text in _decoded(source):
            if "\0" in text:
                return UNSUPPORTED
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
XINCLUDE_NAMESPACE = "http://www.w3.org/2001/XInclude"
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
            # XInclude pulls other files in at a reader's request; declaring its namespace is enough to refuse.
            if any(value == XINCLUDE_NAMESPACE for name, value in attributes.items() if name.startswith("xmlns")):
                raise _Refused(XML_EXTERNAL)
            self.attribute_names.update(attributes)
            if len(self.attribute_names) > MAX_XML_ATTRIBUTE_NAMES:
                raise _Refused(XML_TOO_MANY_NAMES)

    def end(self, _name: str) -> None:
        self.depth -= 1

    @staticmethod
    def instruction(target: str, _data: str) -> None:
        # A stylesheet instruction makes a reader fetch and run another document.
        if target.strip().lower() == "xml-stylesheet":
            raise _Refused(XML_EXTERNAL)

    @staticmethod
    def declaration(_version: str | None, encoding: str | None, _standalone: int) -> None:
        # We parse as UTF-8 whatever the file says; a reader that honours another declared encoding
        # (UTF-7 can spell "<!DOCTYPE" without a "<") would see a different document than we checked.
        if encoding is not None and encoding.lower() not in _UTF8_NAMES:
            raise _Refused(XML_ENCODING)


def _check_xml(source: ByteSource) -> str | None:
    return _check_xml_stream(source.chunks())


def _check_xml_stream(chunks: Iterable[bytes]) -> str | None:
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
    parser.ProcessingInstructionHandler = limits.instruction
    if hasattr(parser, "SetReparseDeferralEnabled"):
        # Expat >= 2.6 may hold input back to re-parse later; the size guard below needs it parsed now.
        parser.SetReparseDeferralEnabled(False)
    decoder = codecs.getincrementaldecoder("utf-8")(errors="strict")
    carry = b""
    fed = 0
    try:
        for chunk in chunks:
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
    "rst": _check_text,
    "html": _check_text,
    "htm": _check_text,
    "": _check_plain_text,
    "json": _check_json,
    "xml": _check_xml,
}


