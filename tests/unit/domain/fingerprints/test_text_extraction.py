"""The text each accepted format carries, for its fingerprints (``memmy_kb.domain.fingerprints.text_extraction``), and
the ``PrintTaker`` that samples it during an ingest without ever failing it (``memmy_kb.domain.fingerprints.file_prints``).

Documents are built the way the other tests build them (``tests.support.docgen``: python-docx, reportlab).
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field

import pytest

from memmy_kb.domain.fingerprints import text_extraction
from memmy_kb.domain.fingerprints.file_prints import PrintTaker, _pieces
from memmy_kb.domain.fingerprints.prints import FileIndex, attribute, fingerprint
from memmy_kb.domain.fingerprints.text_extraction import (
    BLOCK,
    MAX_PDF_READ,
    PIECE_CHARS,
    RangedFile,
    TappedSource,
    docx_text,
    pdf_text,
)
from memmy_kb.domain.storage import ObjectChanged
from memmy_kb.domain.uploads.verification import MemorySource, verify_content
from tests.support.docgen import make_doc, make_docx, make_json, make_md, make_pdf, make_txt, make_xml

REFUNDS = "Refunds are paid within fourteen days of the return reaching our warehouse."
SHIPPING = "Parcels leave the depot each weekday at four in the afternoon with a tracking number."
CHINESE = "商业版本另外提供多租户隔离、审计日志和专属技术支持服务。"


@dataclass
class CountingSource(MemorySource):
    """A source that records each ranged read and each streamed pass."""

    reads: list[int] = field(default_factory=list)
    passes: int = 0

    def read_range(self, start: int, length: int) -> bytes:
        self.reads.append(length)
        return super().read_range(start, length)

    def chunks(self):  # type: ignore[no-untyped-def]
        self.passes += 1
        for start in range(0, len(self.data), 1000):
            yield self.data[start : start + 1000]


def _named(taker: PrintTaker, text: str) -> bool:
    """Whether the taker's fingerprints name their file for ``text`` (a search hit's)."""
    prints = taker.result()
    assert prints is not None
    return attribute(text, [FileIndex({"file": prints})]).files == ("file",)


# -- text formats: the verification's own pass -------------------------------------------------------


@pytest.mark.parametrize(
    ("extension", "data", "text"),
    [
        ("txt", make_txt(f"{REFUNDS}\n{CHINESE}\n", bom=True), f"{REFUNDS}\n{CHINESE}\n"),
        ("md", make_md([("Refunds", REFUNDS), ("发货", CHINESE)]), f"# Refunds\n\n{REFUNDS}\n\n# 发货\n\n{CHINESE}"),
        ("", make_txt(f"{REFUNDS} {CHINESE}"), f"{REFUNDS} {CHINESE}"),
        ("json", make_json({"refunds": REFUNDS, "中文": CHINESE}), None),
        ("xml", make_xml([REFUNDS, CHINESE]), None),
    ],
)
def test_a_text_format_is_sampled_in_the_verifications_one_pass(extension, data, text):
    source = CountingSource(data)
    taker = PrintTaker()
    assert verify_content(taker.tapped(source, extension), extension) is None
    assert source.passes == 1  # the bytes are read once, for both
    if text is not None:
        assert taker.result() == fingerprint([text])
    assert _named(taker, REFUNDS)
    assert _named(taker, CHINESE)


def test_a_tapped_source_hands_on_what_it_streams_decoded_across_chunks():
    data = ("前" * 999 + "后").encode()  # 3-byte characters: chunks of 1000 bytes cut them
    seen: list[str] = []
    streamed = list(TappedSource(CountingSource(data), seen.append).chunks())
    assert b"".join(streamed) == data
    assert "".join(seen) == data.decode()


def test_html_pdf_docx_and_doc_are_not_tapped():
    source = MemorySource(b"<p>x</p>")
    for extension in ("html", "htm", "pdf", "docx", "doc"):
        assert PrintTaker().tapped(source, extension) is source


# -- DOCX ---------------------------------------------------------------------------------------------


def test_docx_text_is_its_paragraphs_headings_and_table_cells_a_line_each():
    data = make_docx([("Refunds", REFUNDS), (None, CHINESE)], table=[["Depot", "Hours"]], title="Policy")
    text = "".join(docx_text(MemorySource(data)))
    lines = [line for line in text.split("\n") if line]
    assert lines[:4] == ["Policy", "Refunds", REFUNDS, CHINESE]
    assert {"Depot", "Hours"} <= set(lines)


def test_docx_is_sampled_after_verification():
    data = make_docx([("Refunds", REFUNDS), ("Shipping", SHIPPING)])
    taker = PrintTaker()
    taker.extract(MemorySource(data), "docx")
    assert taker.failed is None
    assert _named(taker, SHIPPING)


def test_a_long_docx_comes_in_pieces_of_whole_paragraphs():
    paragraphs = [f"{REFUNDS} {n}" for n in range(3000)]
    pieces = list(docx_text(MemorySource(make_docx([(None, p) for p in paragraphs]))))
    assert len(pieces) > 1
    assert all(piece.endswith("\n") for piece in pieces)
    assert "".join(pieces).split("\n")[:-1] == paragraphs


# -- PDF ----------------------------------------------------------------------------------------------


def test_pdf_text_latin_and_chinese():
    data = make_pdf([REFUNDS, CHINESE, SHIPPING])
    taker = PrintTaker()
    taker.extract(MemorySource(data), "pdf")
    assert taker.failed is None
    assert _named(taker, REFUNDS)
    assert _named(taker, CHINESE)


def test_pdf_is_read_in_ranged_blocks_never_whole():
    data = make_pdf([f"{SHIPPING} {n}" for n in range(400)])  # several pages
    source = CountingSource(data)
    pages = list(pdf_text(source, deadline=float("inf")))
    assert len(pages) > 3
    assert source.passes == 0
    assert max(source.reads) <= BLOCK


def test_pdf_stops_at_the_page_limit(monkeypatch):
    data = make_pdf([f"{SHIPPING} {n}" for n in range(400)])
    monkeypatch.setattr(text_extraction, "MAX_PDF_PAGES", 2)
    assert len(list(pdf_text(MemorySource(data), deadline=float("inf")))) == 2


def test_pdf_past_its_time_keeps_what_it_read():
    ticks = iter(range(1000))
    taker = PrintTaker(max_seconds=3, clock=lambda: float(next(ticks)))
    taker.extract(MemorySource(make_pdf([f"{SHIPPING} {n}" for n in range(400)])), "pdf")
    assert taker.truncated
    assert taker.failed is None
    assert taker.result() is not None


@pytest.mark.parametrize(
    "data",
    [
        make_pdf([REFUNDS], user_password="secret"),
        b"%PDF-1.7\n" + b"garbage " * 200 + b"\nstartxref\n9\n%%EOF\n",
    ],
    ids=["encrypted", "broken"],
)
def test_a_pdf_whose_text_cannot_be_read_leaves_no_prints_and_raises_nothing(data):
    taker = PrintTaker()
    taker.extract(MemorySource(data), "pdf")
    assert taker.failed is not None
    assert taker.result() is None


def test_an_object_changed_while_its_pdf_is_read_is_not_taken_for_a_failure():
    # The bytes were re-POSTed: the delivery must be retried, as when the verification sees it.
    class Changing(MemorySource):
        def read_range(self, start: int, length: int) -> bytes:
            raise ObjectChanged("uploads/kb_1/up_1")

    with pytest.raises(ObjectChanged):
        PrintTaker().extract(Changing(make_pdf([REFUNDS])), "pdf")


def test_legacy_doc_has_no_text_read():
    taker = PrintTaker()
    taker.extract(MemorySource(make_doc(REFUNDS)), "doc")
    assert taker.failed is None
    assert taker.result() is None


# -- the seekable file over ranged reads ---------------------------------------------------------------


def test_ranged_file_reads_and_seeks_as_a_file_does():
    data = bytes(range(256)) * (3 * BLOCK // 256 + 7)
    ours, theirs = RangedFile.reader(MemorySource(data)), io.BytesIO(data)
    for offset, whence, size in [(0, 0, 10), (BLOCK - 3, 0, 9), (-20, 2, 50), (5, 1, 2 * BLOCK), (0, 0, -1)]:
        assert ours.seek(offset, whence) == theirs.seek(offset, whence)
        assert ours.read(size) == theirs.read(size)
        assert ours.tell() == theirs.tell()


def test_ranged_file_refuses_to_read_a_large_object_whole():
    data = bytes(MAX_PDF_READ + 10)
    with pytest.raises(ValueError, match="whole PDF"):
        RangedFile.reader(MemorySource(data)).read()


# -- the taker's budget ----------------------------------------------------------------------------------


def test_the_taker_samples_only_the_beginning_of_a_text_past_its_budget():
    taker = PrintTaker(max_chars=len(REFUNDS) + 1)
    taker.add(REFUNDS + " ")
    taker.add(SHIPPING)
    assert taker.truncated
    assert taker.result() == fingerprint([REFUNDS + " "])


def test_the_taker_stops_when_its_time_is_spent():
    ticks = iter(range(1000))
    taker = PrintTaker(max_seconds=2, clock=lambda: float(next(ticks)))
    taker.add((REFUNDS + " ") * 20_000)
    assert taker.truncated


def test_an_empty_text_leaves_no_prints():
    taker = PrintTaker()
    taker.add("  \n — ")
    assert taker.result() is None


def test_pieces_cut_between_words_and_lose_nothing():
    text = (REFUNDS + "\n") * 3000
    pieces = _pieces(text)
    assert "".join(pieces) == text
    assert all(len(piece) <= PIECE_CHARS for piece in pieces)
    assert all(piece[-1] in " \n" for piece in pieces[:-1])
    assert _pieces("x" * (PIECE_CHARS * 2 + 1)) == ["x" * PIECE_CHARS, "x" * PIECE_CHARS, "x"]
