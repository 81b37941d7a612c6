"""Text extraction for the MemOS emulator: every format, Chinese and English, and every way to fail."""

from __future__ import annotations

import io
import os
import random
import re
import zipfile
from collections.abc import Callable
from functools import cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memmy_local.memos_emulator import extract_docx, extract_pdf, extract_text, extraction
from memmy_local.memos_emulator.extract import SUPPORTED_EXTENSIONS, extract_sections
from memmy_local.memos_emulator.extraction import ExtractionError, Section
from tests.support import docgen
from tests.support.linear_time import assert_linear_time

ZH = ["知识库让智能体记住团队的文档。", "检索时按相关度返回摘录；标题来自文件名！"]
EN = ["Knowledge bases let agents remember team documents.", "Search returns excerpts ranked by relevance."]


def squash(text: str) -> str:
    """Text without whitespace, so layout differences (PDF line breaks) do not matter."""
    return re.sub(r"\s+", "", text)


def all_text(sections: list[Section]) -> str:
    return "\n".join(section.text for section in sections)


SAMPLES: dict[str, Callable[[list[str]], bytes]] = {
    "txt": lambda paragraphs: docgen.make_txt("\n\n".join(paragraphs)),
    "md": lambda paragraphs: docgen.make_md([(None, p) for p in paragraphs]),
    "json": lambda paragraphs: docgen.make_json({"paragraphs": paragraphs}),
    "xml": docgen.make_xml,
    "pdf": docgen.make_pdf,
    "docx": lambda paragraphs: docgen.make_docx([(None, p) for p in paragraphs]),
    "doc": lambda paragraphs: docgen.make_doc("\n".join(paragraphs)),
}


def test_every_supported_extension_has_a_sample() -> None:
    assert set(SAMPLES) == SUPPORTED_EXTENSIONS


@pytest.mark.parametrize("extension", sorted(SAMPLES))
@pytest.mark.parametrize(("language", "paragraphs"), [("zh", ZH), ("en", EN)])
def test_extracts_the_text_of_every_format(extension: str, language: str, paragraphs: list[str]) -> None:
    sections = extract_sections(f"sample-{language}.{extension}", SAMPLES[extension](paragraphs))

    text = squash(all_text(sections))
    for paragraph in paragraphs:
        assert squash(paragraph) in text
    assert all(section.text and section.text == section.text.strip() for section in sections)


def test_extension_is_case_insensitive() -> None:
    assert all_text(extract_sections("NOTES.TXT", b"hello")) == "hello"


# --- txt ------------------------------------------------------------------------------------------


def test_txt_accepts_a_bom_and_normalises_line_ends() -> None:
    sections = extract_sections("a.txt", docgen.make_txt("第一行\r\n第二行\rthird", bom=True))

    assert sections == [Section(None, "第一行\n第二行\nthird")]


def test_txt_drops_control_characters() -> None:
    assert all_text(extract_sections("a.txt", b"a\x00b\x1bc\td")) == "abc\td"


# --- md -------------------------------------------------------------------------------------------


def test_md_atx_headings_start_sections() -> None:
    source = "前言文字\n\n# 第一章 简介\n\n正文一。\n\n## Usage ##\n\nRun it.\n\n###### 深层\n\n最后。\n"

    sections = extract_sections("doc.md", source.encode())

    assert sections == [
        Section(None, "前言文字"),
        Section("第一章 简介", "正文一。"),
        Section("Usage", "Run it."),
        Section("深层", "最后。"),
    ]


# The ATX heading before it was made linear: the reference for short lines.
QUADRATIC_ATX_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from([" ", "\t", "#", "a", "b c"]), max_size=30).map("".join))
def test_md_heading_lines_read_as_they_did(line: str) -> None:
    ours, before = extract_text._ATX_HEADING.match(line), QUADRATIC_ATX_HEADING.match(line)
    assert (ours is None, ours and ours.group(2)) == (before is None, before and before.group(2))


# Lines of exactly ``size`` characters shaped against the heading's pattern; 8 MB as for chunking.
LARGEST_LINE = 8 * 1024 * 1024
HOSTILE_HEADINGS = {
    "a long run of blanks inside": lambda size: "# a" + " \t" * ((size - 4) // 2) + " " * (size % 2) + "b",
    "blanks then a long closing sequence then a letter": lambda size: "# a " + "#" * (size - 5) + "x",
    "short words": lambda size: "# " + "a " * ((size - 2) // 2),
    "only hashes": lambda size: "#" * size,
    "only blanks after the hash": lambda size: "#" + " " * (size - 1),
}


@pytest.mark.parametrize("shape", list(HOSTILE_HEADINGS))
def test_a_hostile_md_line_is_read_in_linear_time(shape: str) -> None:
    make = HOSTILE_HEADINGS[shape]
    assert_linear_time(extract_text.extract_md, lambda size: make(size).encode(), large=LARGEST_LINE)


def test_md_setext_headings_start_sections() -> None:
    source = "Title One\n=========\nbody one\n\n标题二\n---\nbody two\n\nplain\n\n---\n\nafter rule\n"

    sections = extract_sections("doc.md", source.encode())

    assert sections == [
        Section("Title One", "body one"),
        Section("标题二", "body two\n\nplain\n\n---\n\nafter rule"),
    ]


def test_md_hashes_inside_code_fences_are_not_headings() -> None:
    source = "# Setup\n\n```bash\n# install it\npip install x\n```\n\n#hashtag is not a heading\n"

    sections = extract_sections("doc.md", source.encode())

    assert [s.heading for s in sections] == ["Setup"]
    assert "# install it" in sections[0].text
    assert "#hashtag is not a heading" in sections[0].text


def test_md_made_only_of_headings_keeps_the_heading_words() -> None:
    assert extract_sections("doc.md", "# 只有标题\n## Only headings\n".encode()) == [
        Section(None, "只有标题\nOnly headings")
    ]


def test_md_from_docgen_has_headings() -> None:
    data = docgen.make_md([(None, "intro"), ("安装", "pip install memmy"), ("Usage", "memmy-kb dev up")])

    sections = extract_sections("guide.md", data)

    assert [(s.heading, s.text) for s in sections] == [
        (None, "intro"),
        ("安装", "pip install memmy"),
        ("Usage", "memmy-kb dev up"),
    ]


# --- json -----------------------------------------------------------------------------------------


def test_json_becomes_path_value_lines() -> None:
    data = docgen.make_json(
        {
            "产品": {"名称": "MemOS", "开源": True, "版本": 2.5, "备注": None},
            "tags": ["知识库", "search"],
            "items": [{"id": 1}, {"id": 2}],
            "empty": {},
        }
    )

    sections = extract_sections("data.json", data)

    assert sections == [
        Section(
            None,
            "产品.名称: MemOS\n产品.开源: true\n产品.版本: 2.5\n"
            "tags[0]: 知识库\ntags[1]: search\nitems[0].id: 1\nitems[1].id: 2",
        )
    ]


def test_json_top_level_scalars_and_arrays() -> None:
    assert all_text(extract_sections("a.json", '"你好"'.encode())) == "你好"
    assert all_text(extract_sections("a.json", b'[1, "two"]')) == "[0]: 1\n[1]: two"


def test_json_unicode_escapes_come_out_as_characters() -> None:
    assert all_text(extract_sections("a.json", b'{"k": "\\u4e2d\\u6587"}')) == "k: 中文"


def test_json_deep_nesting_fails_cleanly() -> None:
    data = b"[" * 100_000 + b"]" * 100_000

    with pytest.raises(ExtractionError):
        extract_sections("deep.json", data)


# --- xml ------------------------------------------------------------------------------------------


def test_xml_texts_and_tails_in_document_order() -> None:
    data = "<doc><title>标题</title>前文<p>一段  文字\n 继续</p>尾巴<p><b>bold</b> tail</p></doc>".encode()

    sections = extract_sections("a.xml", data)

    assert sections == [Section(None, "标题\n前文\n一段 文字 继续\n尾巴\nbold\ntail")]


def test_xml_ignores_comments_and_processing_instructions() -> None:
    data = b"<?xml version='1.0'?><a><!-- secret --><?pi stuff?>visible</a>"

    assert all_text(extract_sections("a.xml", data)) == "visible"


def test_xml_declared_encoding_is_honoured() -> None:
    data = '<?xml version="1.0" encoding="GBK"?><a>中文内容</a>'.encode("gbk")

    assert all_text(extract_sections("a.xml", data)) == "中文内容"


BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<lolz>&lol9;</lolz>"""

EXTERNAL_ENTITY = b"""<?xml version="1.0"?>
<!DOCTYPE foo [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
<foo>&xxe;</foo>"""

DOCTYPE_ONLY = b"""<?xml version="1.0"?><!DOCTYPE note SYSTEM "note.dtd"><note>hi</note>"""


@pytest.mark.parametrize("data", [BILLION_LAUGHS, EXTERNAL_ENTITY, DOCTYPE_ONLY], ids=["bomb", "xxe", "dtd"])
def test_xml_with_doctype_or_entities_is_refused(data: bytes) -> None:
    with pytest.raises(ExtractionError, match="DOCTYPE/entities is not allowed"):
        extract_sections("evil.xml", data)


def test_malformed_xml_fails() -> None:
    with pytest.raises(ExtractionError, match="not well-formed XML"):
        extract_sections("a.xml", b"<a><b></a>")


# --- pdf ------------------------------------------------------------------------------------------


def test_pdf_with_chinese_cid_font_and_several_pages() -> None:
    paragraphs = [f"第{i}段：知识库检索的中文内容，用于验证多页提取。" for i in range(60)]

    sections = extract_sections("long.pdf", docgen.make_pdf(paragraphs))

    assert len(sections) > 1  # one section per page with text
    assert all(section.heading is None for section in sections)
    text = squash(all_text(sections))
    assert all(squash(paragraph) in text for paragraph in paragraphs)


def test_encrypted_pdf_fails() -> None:
    data = docgen.make_pdf(EN, user_password="secret")

    with pytest.raises(ExtractionError, match="encrypted"):
        extract_sections("locked.pdf", data)


def test_pdf_over_the_page_cap_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(extract_pdf, "MAX_PDF_PAGES", 0)

    with pytest.raises(ExtractionError, match="pages"):
        extract_sections("a.pdf", docgen.make_pdf(EN))


# --- docx -----------------------------------------------------------------------------------------


def test_docx_headings_start_sections_and_tables_are_read() -> None:
    data = docgen.make_docx(
        [(None, "导言段落"), ("第一章", "第一章的内容。"), ("Chapter 2", "Second chapter body.")],
        table=[["名称", "说明"], ["MemOS", "知识库服务"]],
        title="产品手册",
    )

    sections = extract_sections("manual.docx", data)

    assert sections == [
        Section("产品手册", "导言段落"),
        Section("第一章", "第一章的内容。"),
        Section("Chapter 2", "Second chapter body.\n名称\t说明\nMemOS\t知识库服务"),
    ]


def test_docx_text_before_any_heading_has_no_heading() -> None:
    sections = extract_sections("a.docx", docgen.make_docx([(None, "plain"), ("H", "body")]))

    assert sections == [Section(None, "plain"), Section("H", "body")]


def test_docx_zip_without_document_xml_fails() -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("word/other.xml", "<x/>")

    with pytest.raises(ExtractionError, match=r"no word/document\.xml"):
        extract_sections("fake.docx", buffer.getvalue())


def test_docx_over_the_uncompressed_cap_fails_before_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(extract_docx, "MAX_DOCX_UNCOMPRESSED_BYTES", 10_000)
    data = docgen.make_docx([(None, "small text")])

    with pytest.raises(ExtractionError, match="too large when uncompressed"):
        extract_sections("bomb.docx", data)


def test_docx_with_broken_document_xml_fails() -> None:
    source = zipfile.ZipFile(io.BytesIO(docgen.make_docx([(None, "x")])))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for info in source.infolist():
            content = b"<w:document" if info.filename == "word/document.xml" else source.read(info)
            archive.writestr(info, content)

    with pytest.raises(ExtractionError, match="not a valid DOCX"):
        extract_sections("broken.docx", buffer.getvalue())


# --- doc ------------------------------------------------------------------------------------------


def test_doc_utf16_piece_with_chinese() -> None:
    sections = extract_sections("旧文档.doc", docgen.make_doc("第一段中文。\n第二段：知识库"))

    assert sections == [Section(None, "第一段中文。\n第二段：知识库")]


def test_doc_compressed_cp1252_piece() -> None:
    sections = extract_sections("old.doc", docgen.make_doc("Café “quoted” – dash\nSecond", compressed=True))

    assert sections == [Section(None, "Café “quoted” – dash\nSecond")]


def test_doc_with_0table_stream() -> None:
    data = docgen.make_doc("zero table", table_stream="0Table")

    assert all_text(extract_sections("a.doc", data)) == "zero table"


def test_doc_control_characters_fields_and_cells() -> None:
    raw = (
        'See \x13 HYPERLINK "http://example.com" \x14the site\x15 now.\n'
        "Name\x07Age\x07\x07Bob\x0742\x07\x07\n"
        "line\x0bbreak non\x1ebreaking opt\x1fional pic\x01ture \x13PAGE\x15end"
    )

    text = all_text(extract_sections("a.doc", docgen.make_doc(raw)))

    assert "HYPERLINK" not in text
    assert "See the site now." in text
    assert "Name\tAge\t\nBob\t42\t\n" in text
    assert "line\nbreak non-breaking optional picture end" in text


def test_doc_nested_fields_keep_only_results() -> None:
    raw = "a\x13 IF \x13 MERGEFIELD x \x14inner\x15 \x14outer\x15b"

    assert all_text(extract_sections("a.doc", docgen.make_doc(raw))) == "aouterb"


def test_ole_file_without_word_document_fails() -> None:
    data = docgen.make_cfb({"Workbook": b"not a word file"})

    with pytest.raises(ExtractionError, match="no WordDocument"):
        extract_sections("sheet.doc", data)


def test_doc_without_its_table_stream_fails() -> None:
    word = docgen.make_doc("x")
    data = docgen.make_cfb({"WordDocument": _stream(word, "WordDocument")})

    with pytest.raises(ExtractionError, match="1Table"):
        extract_sections("a.doc", data)


def test_truncated_doc_fails() -> None:
    data = docgen.make_doc("some text")

    with pytest.raises(ExtractionError):
        extract_sections("cut.doc", data[:3000])


def _stream(cfb: bytes, name: str) -> bytes:
    import olefile

    with olefile.OleFileIO(io.BytesIO(cfb)) as ole:
        return ole.openstream(name).read()


# --- failures common to all formats ---------------------------------------------------------------


def test_invalid_utf8_fails_for_text_formats() -> None:
    for extension in ("txt", "md", "json"):
        with pytest.raises(ExtractionError, match="not valid UTF-8"):
            extract_sections(f"a.{extension}", b"ok \xff\xfe broken")


def test_broken_json_fails() -> None:
    with pytest.raises(ExtractionError, match="not valid JSON"):
        extract_sections("a.json", b'{"a": 1,')


@pytest.mark.parametrize(
    ("filename", "reason"),
    [("random.pdf", "not a valid PDF"), ("random.docx", "not a valid DOCX"), ("random.doc", "not a Word")],
)
def test_random_bytes_fail(filename: str, reason: str) -> None:
    with pytest.raises(ExtractionError, match=reason):
        extract_sections(filename, random.Random(7).randbytes(5000))


@pytest.mark.parametrize("extension", sorted(SUPPORTED_EXTENSIONS))
def test_empty_file_fails(extension: str) -> None:
    with pytest.raises(ExtractionError, match="empty file"):
        extract_sections(f"empty.{extension}", b"")


@pytest.mark.parametrize(
    ("filename", "data"),
    [("blank.txt", b" \n\t\n"), ("blank.md", b"\n\n"), ("null.json", b"null"), ("empty.xml", b"<a> </a>")],
)
def test_no_text_fails(filename: str, data: bytes) -> None:
    with pytest.raises(ExtractionError, match="no text found"):
        extract_sections(filename, data)


@pytest.mark.parametrize("filename", ["photo.png", "archive.tar.gz", "README", ".txt", "notes.txt.exe"])
def test_unsupported_extension_fails(filename: str) -> None:
    with pytest.raises(ExtractionError, match="unsupported file type"):
        extract_sections(filename, b"hello")


def test_text_over_the_cap_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(extraction, "MAX_TEXT_CHARS", 100)

    for extension, sample in SAMPLES.items():
        with pytest.raises(ExtractionError, match="exceeds 100 characters"):
            extract_sections(f"big.{extension}", sample(["长文本" * 40, "more text " * 10]))


# --- robustness: only ExtractionError ever escapes ------------------------------------------------


@cache
def valid_sample(extension: str) -> bytes:
    return SAMPLES[extension](EN + ZH)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=2000), extension=st.sampled_from(sorted(SUPPORTED_EXTENSIONS)))
def test_arbitrary_bytes_never_raise_anything_but_extraction_error(data: bytes, extension: str) -> None:
    _extract_or_fail(f"fuzz.{extension}", data)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    extension=st.sampled_from(["pdf", "docx", "doc", "xml", "json"]),
    flips=st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.integers(0, 255)), min_size=1, max_size=8),
)
def test_corrupted_documents_never_raise_anything_but_extraction_error(
    extension: str, flips: list[tuple[float, int]]
) -> None:
    data = bytearray(valid_sample(extension))
    for position, value in flips:
        data[int(position * len(data))] = value
    _extract_or_fail(f"fuzz.{extension}", bytes(data))


@cache
def doc_streams() -> tuple[bytes, bytes]:
    data = docgen.make_doc("Word 97 text\n中文段落")
    return _stream(data, "WordDocument"), _stream(data, "1Table")


@settings(max_examples=150, deadline=None)
@given(
    in_fib=st.booleans(),
    flips=st.lists(st.tuples(st.integers(0, 1099), st.integers(0, 255)), min_size=1, max_size=6),
)
def test_corrupted_fib_or_piece_table_never_raise_anything_but_extraction_error(
    in_fib: bool, flips: list[tuple[int, int]]
) -> None:
    word, table = (bytearray(stream) for stream in doc_streams())
    target = word if in_fib else table
    for position, value in flips:
        target[position % (1100 if in_fib else 40)] = value
    _extract_or_fail("fuzz.doc", docgen.make_cfb({"WordDocument": bytes(word), "1Table": bytes(table)}))


def _extract_or_fail(filename: str, data: bytes) -> None:
    """Either sections with text come out, or an ExtractionError with a reason: nothing else."""
    try:
        sections = extract_sections(filename, data)
    except ExtractionError as error:
        sections, reason = [], str(error)
    else:
        reason = ""
    assert sections or reason
    assert all(isinstance(s, Section) and s.text.strip() for s in sections)


@pytest.mark.parametrize("extension", ["pdf", "docx", "doc"])
def test_truncated_containers_fail_cleanly(extension: str) -> None:
    data = valid_sample(extension)
    for size in (10, len(data) // 3, len(data) // 2, len(data) - 10):
        _extract_or_fail(f"cut.{extension}", data[:size])


def test_error_reason_is_short_and_human() -> None:
    with pytest.raises(ExtractionError) as caught:
        extract_sections("x.pdf", os.urandom(100))

    assert len(str(caught.value)) < 80
    assert "Traceback" not in str(caught.value)
