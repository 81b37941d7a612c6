"""Content verification on generated samples: every format, the bad corpus, and files past 100 MB that are
never materialised (a ``VirtualSource`` computes any byte range on demand), with the memory it costs."""

from __future__ import annotations

import io
import json
import struct
import tracemalloc
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memmy_kb.adapters.s3 import STREAM_CHUNK_BYTES
from memmy_kb.domain.fingerprints.zipfiles import zip_members
from memmy_kb.domain.uploads import verification
from memmy_kb.domain.uploads.formats import file_extension
from memmy_kb.domain.uploads.issuing import MAX_UPLOAD_BYTES
from memmy_kb.domain.uploads.json_syntax import JsonSyntaxChecker
from memmy_kb.domain.uploads.verification import (
    NOT_UTF8,
    REASONS,
    UNSUPPORTED,
    XML_DOCTYPE,
    XML_TOO_LARGE_PART,
    verify_content,
)
from tests.support.docgen import (
    make_doc,
    make_docx,
    make_docx_with_document,
    make_json,
    make_md,
    make_pdf,
    make_txt,
    make_xml,
)
from tests.support.linear_time import assert_linear_time

MB = 1024 * 1024
CHUNK = MB


@dataclass(frozen=True)
class Repeat:
    pattern: bytes
    count: int

    @property
    def size(self) -> int:
        return len(self.pattern) * self.count


@dataclass
class VirtualSource:
    """A file made of byte strings and repeated patterns; ranges and chunks are computed, never stored whole.

    Counts what was read, so tests can tell a ranged check from a streamed one.
    """

    segments: list[bytes | Repeat]
    chunk_size: int = CHUNK
    range_bytes: int = 0
    streamed: bool = False
    _sizes: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._sizes = [s.size if isinstance(s, Repeat) else len(s) for s in self.segments]

    @property
    def size(self) -> int:
        return sum(self._sizes)

    def read_range(self, start: int, length: int) -> bytes:
        data = self._slice(start, min(self.size, start + length))
        self.range_bytes += len(data)
        return data

    def chunks(self) -> Iterator[bytes]:
        self.streamed = True
        for start in range(0, self.size, self.chunk_size):
            yield self._slice(start, min(self.size, start + self.chunk_size))

    def _slice(self, start: int, end: int) -> bytes:
        out = bytearray()
        offset = 0
        for segment, size in zip(self.segments, self._sizes, strict=True):
            lo, hi = max(start, offset), min(end, offset + size)
            if lo < hi:
                if isinstance(segment, Repeat):
                    n = len(segment.pattern)
                    first = (lo - offset) // n
                    last = (hi - offset - 1) // n
                    piece = segment.pattern * (last - first + 1)
                    skip = (lo - offset) - first * n
                    out += piece[skip : skip + (hi - lo)]
                else:
                    out += segment[lo - offset : hi - offset]
            offset += size
        return bytes(out)


def source(data: bytes) -> VirtualSource:
    return VirtualSource([data])


def peak_memory(run) -> tuple[object, int]:
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        result = run()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def zip_of(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


# -- every format, good and bad --------------------------------------------------------------------

GOOD = [
    ("pdf", make_pdf(["Memmy", "知识库"])),
    ("docx", make_docx([("标题", "正文")], table=[["a", "b"]])),
    ("doc", make_doc("Legacy Word text")),
    ("txt", make_txt("纯文本\n", bom=True)),
    ("md", make_md([("标题", "正文")])),
    ("json", make_json({"名字": "Memmy", "n": [1, -2.5e3, True, None, {"x": ""}]})),
    ("json", b"\xef\xbb\xbf[1]"),
    ("json", b'"just a string"'),
    ("xml", make_xml(["段落一", "a < b"])),
    ("xml", b"<?xml version='1.0'?><!-- comment --><a x='1'><![CDATA[<b>]]></a>"),
]


@pytest.mark.parametrize(("extension", "data"), GOOD, ids=[f"{e}-{i}" for i, (e, _) in enumerate(GOOD)])
def test_real_documents_pass(extension: str, data: bytes) -> None:
    assert verify_content(source(data), extension) is None


BAD = [
    ("pdf", b"MZ\x90\x00" + bytes(100), REASONS["pdf"]),
    ("pdf", b" %PDF-1.7", REASONS["pdf"]),
    ("pdf", b"", REASONS["pdf"]),
    ("doc", b"\xd0\xcf\x11\xe0", REASONS["doc"]),
    ("doc", make_docx([(None, "x")]), REASONS["doc"]),
    ("docx", zip_of({"readme.txt": b"hi"}), REASONS["docx"]),
    ("docx", zip_of({"[Content_Types].xml": b"<Types/>"}), REASONS["docx"]),
    ("docx", make_doc("ole, not zip"), REASONS["docx"]),
    ("docx", b"PK\x03\x04" + bytes(100), REASONS["docx"]),
    ("docx", make_docx([(None, "x")])[:-30], REASONS["docx"]),
    ("txt", b"abc\xff", NOT_UTF8),
    ("txt", "中".encode()[:2], NOT_UTF8),
    ("md", b"\xed\xa0\x80", NOT_UTF8),  # an encoded surrogate is not UTF-8
    ("json", b"", REASONS["json"]),
    ("json", b"{", REASONS["json"]),
    ("json", b'{"a": 1,}', REASONS["json"]),
    ("json", b"[1 2]", REASONS["json"]),
    ("json", b"NaN", REASONS["json"]),
    ("json", b"[01]", REASONS["json"]),
    ("json", b'"tab\there"', REASONS["json"]),
    ("json", b'{"a" 1}', REASONS["json"]),
    ("json", b"{} {}", REASONS["json"]),
    ("json", b"[" * 600 + b"]" * 600, REASONS["json"]),
    ("json", b'{"a": "\xff"}', NOT_UTF8),
    ("xml", b'<!DOCTYPE a SYSTEM "file:///etc/passwd"><a/>', XML_DOCTYPE),
    ("xml", b'<?xml version="1.0"?><!DOCTYPE a [<!ENTITY e "x">]><a>&e;</a>', XML_DOCTYPE),
    ("xml", b"<a>&undefined;</a>", REASONS["xml"]),
    ("xml", b"<a><b></a>", REASONS["xml"]),
    ("xml", b"", REASONS["xml"]),
    ("xml", b"<a>\xff</a>", NOT_UTF8),
    ("exe", b"MZ", UNSUPPORTED),
]


@pytest.mark.parametrize(
    ("extension", "data", "reason"), BAD, ids=[f"{e}-{i}" for i, (e, _, _) in enumerate(BAD)]
)
def test_bad_content_is_refused_with_a_human_reason(extension: str, data: bytes, reason: str) -> None:
    assert verify_content(source(data), extension) == reason


def test_extensions_are_read_case_insensitively() -> None:
    assert [file_extension(n) for n in ("a.PDF", "a.tar.gz", "noext", ".md", "a.")] == [
        "pdf",
        "gz",
        "",
        "",
        "",
    ]


def test_a_doctype_cut_across_two_chunks_is_still_found() -> None:
    data = b"<?xml version='1.0'?>" + b"<!DOCTYPE a [<!ENTITY e 'x'>]><a>&e;</a>"
    cut = data.index(b"DOCTYPE") + 3
    assert verify_content(VirtualSource([data[:cut], data[cut:]], chunk_size=cut), "xml") == XML_DOCTYPE


# -- binary formats read only what they need ------------------------------------------------------


def padded_zip(archive: bytes, padding: int) -> VirtualSource:
    """``archive`` with ``padding`` zero bytes inserted before its central directory (offsets fixed up)."""
    eocd_at = archive.rindex(b"PK\x05\x06")
    directory_at = struct.unpack_from("<I", archive, eocd_at + 16)[0]
    eocd = bytearray(archive[eocd_at:])
    struct.pack_into("<I", eocd, 16, directory_at + padding)
    return VirtualSource(
        [archive[:directory_at], Repeat(b"\0", padding), archive[directory_at:eocd_at], bytes(eocd)]
    )


def test_a_150_mb_docx_is_checked_from_its_central_directory_alone() -> None:
    big = padded_zip(make_docx([("标题", "正文")]), 150 * MB)

    assert big.size > 150 * MB
    assert verify_content(big, "docx") is None
    assert not big.streamed
    assert big.range_bytes < 100 * 1024


def test_zip64_end_records_are_followed() -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", allowZip64=True) as archive:
        for name in ("[Content_Types].xml", "word/document.xml"):
            with archive.open(name, "w", force_zip64=True) as member:
                member.write(b"<x/>")
    data = buffer.getvalue()
    assert {m.name for m in zip_members(source(data))} == {"[Content_Types].xml", "word/document.xml"}


def test_a_pdf_and_a_doc_are_checked_by_their_first_and_last_bytes() -> None:
    pdf = VirtualSource([b"%PDF-1.7\n", Repeat(b"x", 200 * MB), b"\nstartxref\n123\n%%EOF\n"])
    doc = VirtualSource([make_doc("x"), Repeat(b"\0", 200 * MB)])
    assert verify_content(pdf, "pdf") is None
    assert verify_content(doc, "doc") is None
    assert pdf.range_bytes + doc.range_bytes < 4096
    assert not (pdf.streamed)
    assert not (doc.streamed)


# -- text formats stream in bounded memory --------------------------------------------------------


def test_a_110_mb_text_file_streams_in_bounded_memory() -> None:
    line = "MemOS 是一个记忆操作系统。Memory for agents.\n".encode()
    big = VirtualSource([Repeat(line, 110 * MB // len(line))])

    reason, peak = peak_memory(lambda: verify_content(big, "txt"))

    assert reason is None
    assert big.size > 100 * MB
    assert peak < 8 * MB, f"peak {peak / MB:.1f} MB"


def test_a_bad_byte_at_the_end_of_a_110_mb_file_is_found() -> None:
    big = VirtualSource([Repeat(b"plain ascii text\n", 110 * MB // 17), b"\xc3"])
    assert verify_content(big, "md") == NOT_UTF8


def test_a_105_mb_json_string_streams_in_bounded_memory() -> None:
    big = VirtualSource([b'{"text": "', Repeat("数据\\n".encode(), 105 * MB // 8), b'", "n": 1}'])

    reason, peak = peak_memory(lambda: verify_content(big, "json"))

    assert reason is None
    assert peak < 12 * MB, f"peak {peak / MB:.1f} MB"


def test_a_large_xml_file_streams_in_bounded_memory() -> None:
    big = VirtualSource(
        [b"<?xml version='1.0'?><doc>", Repeat("<p>段落 text &amp; more</p>".encode(), MB), b"</doc>"]
    )

    reason, peak = peak_memory(lambda: verify_content(big, "xml"))

    assert reason is None
    assert big.size > 25 * MB
    assert peak < 12 * MB, f"peak {peak / MB:.1f} MB"


# -- the streaming JSON checker agrees with json.loads ---------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=20,
)


def check(text: str, cuts: list[int]) -> bool:
    checker = JsonSyntaxChecker()
    points = sorted({min(c, len(text)) for c in cuts})
    try:
        start = 0
        for point in [*points, len(text)]:
            checker.feed(text[start:point])
            start = point
        checker.close()
    except ValueError:
        return False
    return True


def loads_strictly(text: str) -> bool:
    def refuse(_: str) -> None:
        raise ValueError

    try:
        json.loads(text, parse_constant=refuse)
    except ValueError:
        return False
    return True


@settings(max_examples=300, deadline=None)
@given(json_values, st.booleans(), st.lists(st.integers(min_value=0, max_value=400), max_size=6))
def test_any_serialised_value_passes_however_it_is_cut(value, indent, cuts) -> None:
    text = json.dumps(value, ensure_ascii=False, indent=2 if indent else None)
    assert check(text, cuts)


@settings(max_examples=500, deadline=None)
@given(
    json_values, st.integers(min_value=0, max_value=200), st.text(min_size=1, max_size=3), st.integers(0, 400)
)
def test_a_mutated_document_is_judged_like_json_loads(value, at, insert, cut) -> None:
    text = json.dumps(value, ensure_ascii=False)
    at = min(at, len(text))
    mutated = text[:at] + insert + text[at:]
    assert check(mutated, [cut]) == loads_strictly(mutated), mutated


@pytest.mark.parametrize(
    ("opening", "closing"), [(b'<a x="', b'"/>'), (b"<a><!--", b"--></a>"), (b"<a><?pi ", b"?></a>")]
)
def test_one_xml_token_too_large_to_stream_is_refused_before_it_costs_memory(opening, closing) -> None:
    big = VirtualSource([opening, Repeat(b"y", 40 * MB), closing])

    reason, peak = peak_memory(lambda: verify_content(big, "xml"))

    assert reason == XML_TOO_LARGE_PART
    assert peak < 20 * MB, f"peak {peak / MB:.1f} MB"


def test_a_number_cut_by_a_chunk_after_a_long_whitespace_run_is_read_whole() -> None:
    # "2" is the last byte of the second chunk, "5" the first of the third: one number, 2.5
    spaces = VirtualSource([b"[1,", Repeat(b" ", 2 * MB - 4), b"2", b".5", Repeat(b"\n", MB), b"]"])
    broken = VirtualSource([b"[1,", Repeat(b" ", 2 * MB - 4), b"2", b".", Repeat(b"\n", MB), b"]"])
    assert verify_content(spaces, "json") is None
    assert verify_content(broken, "json") == REASONS["json"]


# -- limits that keep memory independent of the document (review findings) -------------------------


def _xml_verdict(data: bytes) -> str | None:
    from memmy_kb.domain.uploads.verification import _check_xml

    class Source:
        def chunks(self):
            for start in range(0, len(data), 64 * 1024):
                yield data[start : start + 64 * 1024]

    return _check_xml(Source())


def test_xml_nesting_is_bounded():
    from memmy_kb.domain.uploads.verification import MAX_XML_DEPTH, XML_TOO_DEEP

    deep = b"<a>" * (MAX_XML_DEPTH + 1) + b"x" + b"</a>" * (MAX_XML_DEPTH + 1)
    fine = b"<a>" * MAX_XML_DEPTH + b"x" + b"</a>" * MAX_XML_DEPTH
    assert _xml_verdict(deep) == XML_TOO_DEEP
    assert _xml_verdict(fine) is None


def test_xml_attribute_names_are_bounded():
    from memmy_kb.domain.uploads.verification import MAX_XML_ATTRIBUTE_NAMES, XML_TOO_MANY_NAMES

    items = b"".join(b'<i a%d="1"/>' % n for n in range(MAX_XML_ATTRIBUTE_NAMES + 1))
    assert _xml_verdict(b"<r>" + items + b"</r>") == XML_TOO_MANY_NAMES


@pytest.mark.parametrize("encoding", [b"UTF-7", b"utf-16", b"ISO-8859-1", b"GBK"])
def test_xml_declaring_another_encoding_is_refused(encoding):
    from memmy_kb.domain.uploads.verification import XML_ENCODING

    hidden = (
        b"<!-- +ADw-!DOCTYPE r +AFs-+ADw-!ENTITY x SYSTEM +ACI-file:///etc/passwd+ACI-+AD4-+AF0-+AD4- -->"
    )
    doc = b'<?xml version="1.0" encoding="' + encoding + b'"?>' + hidden + b"<r>ok</r>"
    assert _xml_verdict(doc) == XML_ENCODING


@pytest.mark.parametrize("encoding", [b"UTF-8", b"utf-8", b"US-ASCII"])
def test_xml_declaring_utf8_is_fine(encoding):
    assert _xml_verdict(b'<?xml version="1.0" encoding="' + encoding + b'"?><r>ok</r>') is None


# -- deeper checks: trailers, headers, zip bombs, the document's own XML, external references ------


def _with_declared_size(archive: bytes, name: bytes, size: int) -> bytes:
    """``archive`` whose central directory declares ``size`` uncompressed bytes for member ``name``."""
    data = bytearray(archive)
    at = 0
    while True:
        at = data.index(b"PK\x01\x02", at)
        name_len = struct.unpack_from("<H", data, at + 28)[0]
        if bytes(data[at + 46 : at + 46 + name_len]) == name:
            struct.pack_into("<I", data, at + 24, size)
            return bytes(data)
        at += 46


PDF_CUT = make_pdf(["段落一", "段落二"])
DEEPER_BAD = [
    ("pdf", b"%PDF-1.7\n1 0 obj\n<< >>\nendobj\n", verification.PDF_NO_TRAILER),
    ("pdf", PDF_CUT[: len(PDF_CUT) // 2], verification.PDF_NO_TRAILER),
    ("pdf", b"%PDF-1.7\n%%EOF\n", verification.PDF_NO_TRAILER),  # no startxref before it
    ("doc", bytes.fromhex("D0CF11E0A1B11AE1") + bytes(504), verification.DOC_BAD_HEADER),
    ("doc", make_doc("x")[:28] + b"\xff\xff" + make_doc("x")[30:], verification.DOC_BAD_HEADER),
    ("docx", make_docx_with_document(b"\0" * (20 * MB)), verification.DOCX_BOMB),
    ("docx", _with_declared_size(make_docx_with_document(b"<w/>"), b"word/document.xml", 600 * MB), verification.DOCX_BOMB),
    ("docx", make_docx_with_document(b"this is not xml <<<"), verification.DOCX_BAD_XML),
    ("docx", make_docx_with_document(b"<w:document><w:body></w:document>"), verification.DOCX_BAD_XML),
    ("docx", make_docx_with_document(b'<!DOCTYPE x [<!ENTITY a "b">]><x>&a;</x>'), verification.DOCX_BAD_XML),
    ("docx", _with_declared_size(make_docx_with_document(b"<w>" + b"x" * 5000 + b"</w>"), b"word/document.xml", 10), REASONS["docx"]),
    ("xml", b'<a xmlns:xi="http://www.w3.org/2001/XInclude"><xi:include href="/etc/passwd"/></a>', verification.XML_EXTERNAL),
    ("xml", b'<?xml-stylesheet type="text/xsl" href="http://evil/x.xsl"?><a/>', verification.XML_EXTERNAL),
]


@pytest.mark.parametrize(
    ("extension", "data", "reason"), DEEPER_BAD, ids=[f"{e}-{i}" for i, (e, _, _) in enumerate(DEEPER_BAD)]
)
def test_deeper_checks_refuse_with_a_specific_reason(extension: str, data: bytes, reason: str) -> None:
    assert verify_content(source(data), extension) == reason


def test_a_real_docx_and_a_processing_instruction_that_fetches_nothing_pass() -> None:
    assert verify_content(source(make_docx([("标题", "正文" * 1000)])), "docx") is None
    assert verify_content(source(b'<?mso-application progid="Word.Document"?><a/>'), "xml") is None


def test_a_docx_bomb_is_refused_without_inflating_it() -> None:
    bomb = source(make_docx_with_document(b"\0" * (20 * MB)))
    reason, peak = peak_memory(lambda: verify_content(bomb, "docx"))
    assert reason == verification.DOCX_BOMB
    assert peak < 1 * MB


# -- the streaming JSON checker in linear time ------------------------------------------------------

# Streams as the ingest reads them, in 1 MB pieces (the S3 adapter's chunks), each piece the same object.
# The units of strings divide a piece, so that every piece goes on where the one before it stopped.
LINEAR_STREAMS = {
    "whitespace then a stray character": ("", " \t\n\r", "x"),
    "long whitespace between tokens": ("[", " " * 4093 + "0,", "0]"),
    "numbers as long as allowed, cut across pieces": ("[", "1" * (MB - 9) + ",", "1]"),
    "escapes, unterminated": ('"', '\\\\\\"\\u0041\\\\\\"ab', ""),
    "brackets inside a string": ('"', "[{", '"'),
}


def _stream(first: str, unit: str, last: str, size: int) -> list[str]:
    piece = (unit * (STREAM_CHUNK_BYTES // len(unit) + 1))[: min(size, STREAM_CHUNK_BYTES)]
    return [first + piece] + [piece] * (size // len(piece) - 1) + [last]


def _checked(pieces: list[str]) -> bool:
    checker = JsonSyntaxChecker()
    try:
        for piece in pieces:
            checker.feed(piece)
        checker.close()
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("shape", list(LINEAR_STREAMS))
def test_a_hostile_json_stream_up_to_the_largest_upload_is_checked_in_linear_time(shape: str) -> None:
    first, unit, last = LINEAR_STREAMS[shape]
    assert _checked(_stream(first, unit, last, 1024)) is (last not in ("x", ""))
    assert_linear_time(_checked, lambda size: _stream(first, unit, last, size), large=MAX_UPLOAD_BYTES)
