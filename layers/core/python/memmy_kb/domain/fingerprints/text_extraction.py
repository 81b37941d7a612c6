"""The text an accepted file carries, as pieces for its fingerprints (``memmy_kb.domain.fingerprints.prints``).

Each format's text is read in bounded memory, never whole:

* **Text formats** (txt, md, rst, json, xml and a name without an extension): the bytes the verification
  streams anyway (``TappedSource``), decoded as they pass; JSON and XML as written, markup included
  (punctuation is no token, and a name in a tag is one word among the text's).
* **HTML**: the Markdown MemOS is sent (``memmy_kb.domain.uploads.conversion``); the ingest hands it over.
* **DOCX**: the text of ``word/document.xml``, inflated a megabyte at a time (``memmy_kb.domain.fingerprints.zipfiles``)
  through expat: the runs' text, a paragraph a line, tabs and breaks as whitespace.
* **PDF**: pypdf, page by page, at most ``MAX_PDF_PAGES`` pages, over ``RangedFile``: a seekable file
  whose reads are ranged reads of the stored object, through a small cache of ``BLOCK``-sized blocks
  (pypdf seeks to each object by the cross-reference table), so memory stays ``CACHED_BLOCKS`` blocks and
  pypdf's own objects, whatever the PDF's size. A read of more than ``MAX_PDF_READ`` at once (pypdf
  rebuilding a broken cross-reference table reads the rest of the file) fails the extraction instead.
* **DOC** (Word 97-2003): no text is read; its excerpts stay attributed to their KB only.

pypdf is imported here, by the ingest only: recall never imports this module.
"""

from __future__ import annotations

import codecs
import io
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Final
from xml.parsers import expat

from memmy_kb.domain.fingerprints.zipfiles import ByteSource, inflated_member, zip_members

# The formats whose text is the verification's streamed pass.
TAPPED: Final = frozenset({"txt", "md", "rst", "json", "xml", ""})
# The formats read after the verification, and the one whose text is not read at all.
EXTRACTED: Final = frozenset({"docx", "pdf"})
NOT_READ: Final = frozenset({"doc"})
MAX_PDF_PAGES: Final = 500  # MemOS's documented page limit: it reads no further either
BLOCK: Final = 256 * 1024
CACHED_BLOCKS: Final = 16
MAX_PDF_READ: Final = 16 * 1024 * 1024
# The text handed over in one piece: whole paragraphs up to about this many characters.
PIECE_CHARS: Final = 64 * 1024

_WORD: Final = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


class ExtractionStopped(Exception):
    """The extraction ran out of its time (or its text budget): what was read so far is kept."""


@dataclass
class TappedSource:
    """``source`` whose streamed pass also hands its text, decoded as UTF-8, to ``sink``. Bytes that are not
    UTF-8 are replaced, not raised: the verification itself refuses such a file."""

    source: ByteSource
    sink: Callable[[str], None]

    @property
    def size(self) -> int:
        return self.source.size

    def read_range(self, start: int, length: int) -> bytes:
        return self.source.read_range(start, length)

    def chunks(self) -> Iterator[bytes]:
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        for chunk in self.source.chunks():
            self.sink(decoder.decode(chunk))
            yield chunk
        self.sink(decoder.decode(b"", final=True))


def docx_text(source: ByteSource) -> Iterator[str]:
    """The text of a verified DOCX's ``word/document.xml``, in pieces of whole paragraphs.

    Raises ValueError when the document part is missing or its XML is not well-formed.
    """
    member = next((m for m in zip_members(source) if m.name == "word/document.xml"), None)
    if member is None:
        raise ValueError("no word/document.xml")
    reader = _DocxText()
    parser = expat.ParserCreate(encoding="UTF-8", namespace_separator=" ")
    # The verification refused a DOCTYPE already; never read one here either.
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.StartElementHandler = reader.start
    parser.EndElementHandler = reader.end
    parser.CharacterDataHandler = reader.characters
    try:
        for chunk in inflated_member(source, member):
            parser.Parse(chunk, False)
            yield from reader.take()
        parser.Parse(b"", True)
    except expat.ExpatError as err:
        raise ValueError(f"word/document.xml: {err}") from err
    yield from reader.take(final=True)


class _DocxText:
    """Collects the text of ``w:t`` runs; a paragraph ends a line, ``w:tab`` and ``w:br`` are whitespace."""

    def __init__(self) -> None:
        self._in_text = 0
        self._parts: list[str] = []
        self._size = 0
        self._ready: list[str] = []

    def start(self, name: str, _attributes: dict[str, str]) -> None:
        if name == f"{_WORD} t":
            self._in_text += 1
        elif name in (f"{_WORD} tab", f"{_WORD} br", f"{_WORD} cr"):
            self._add(" " if name.endswith("tab") else "\n")

    def end(self, name: str) -> None:
        if name == f"{_WORD} t":
            self._in_text -= 1
        elif name == f"{_WORD} p":
            self._add("\n")
            if self._size >= PIECE_CHARS:
                self._flush()

    def characters(self, data: str) -> None:
        if self._in_text:
            self._add(data)
            if self._size >= 4 * PIECE_CHARS:  # one huge paragraph: cut it (a word may be read as two)
                self._flush()

    def _add(self, text: str) -> None:
        self._parts.append(text)
        self._size += len(text)

    def _flush(self) -> None:
        self._ready.append("".join(self._parts))
        self._parts, self._size = [], 0

    def take(self, *, final: bool = False) -> list[str]:
        if final and self._parts:
            self._flush()
        ready, self._ready = self._ready, []
        return ready


def pdf_text(source: ByteSource, *, deadline: float, clock: Callable[[], float] = time.monotonic) -> Iterator[str]:
    """The text of a verified PDF, a page at a time, at most ``MAX_PDF_PAGES`` pages; ExtractionStopped at
    ``deadline`` (on ``clock``). pypdf's errors are raised as they are: the caller counts any failure."""
    from pypdf import PdfReader

    reader = PdfReader(RangedFile.reader(source))
    if reader.is_encrypted and not reader.decrypt(""):  # an owner password only opens with an empty one
        raise ValueError("the PDF is encrypted")
    for number, page in enumerate(reader.pages):
        if number >= MAX_PDF_PAGES:
            return
        if clock() > deadline:
            raise ExtractionStopped(f"PDF text stopped at page {number + 1}")
        yield (page.extract_text() or "") + "\n"


class RangedFile(io.RawIOBase):
    """A read-only, seekable file over a ``ByteSource``: reads are ranged reads of whole ``BLOCK``s, the
    last ``CACHED_BLOCKS`` of them kept."""

    def __init__(self, source: ByteSource) -> None:
        super().__init__()
        self._source = source
        self._position = 0
        self._blocks: OrderedDict[int, bytes] = OrderedDict()

    @classmethod
    def reader(cls, source: ByteSource) -> io.BufferedReader:
        return io.BufferedReader(cls(source), buffer_size=64 * 1024)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: self._source.size}[whence]
        self._position = max(0, base + offset)
        return self._position

    def readall(self) -> bytes:
        if self._source.size - self._position > MAX_PDF_READ:
            raise ValueError("a read of the whole PDF at once")
        return super().readall() or b""

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        view = memoryview(buffer).cast("B")
        if len(view) > MAX_PDF_READ:
            raise ValueError("a read of the whole PDF at once")
        done = 0
        while done < len(view) and self._position < self._source.size:
            block = self._block(self._position // BLOCK)
            offset = self._position % BLOCK
            piece = block[offset : offset + len(view) - done]
            if not piece:
                break
            view[done : done + len(piece)] = piece
            done += len(piece)
            self._position += len(piece)
        return done

    def _block(self, index: int) -> bytes:
        block = self._blocks.pop(index, None)
        if block is None:
            block = self._source.read_range(index * BLOCK, min(BLOCK, self._source.size - index * BLOCK))
        self._blocks[index] = block
        while len(self._blocks) > CACHED_BLOCKS:
            self._blocks.popitem(last=False)
        return block


def extracted_text(
    source: ByteSource, extension: str, *, deadline: float, clock: Callable[[], float] = time.monotonic
) -> Iterable[str]:
    """The text of a format read after its verification (``EXTRACTED``); nothing for any other."""
    if extension == "docx":
        return docx_text(source)
    if extension == "pdf":
        return pdf_text(source, deadline=deadline, clock=clock)
    return ()
