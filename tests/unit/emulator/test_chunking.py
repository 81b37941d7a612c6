"""Chunking for the MemOS emulator: size limits, sentence splitting, titles, and no lost text."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memmy_local.memos_emulator import chunking
from memmy_local.memos_emulator.chunking import Excerpt, chunk_sections, chunk_text, short_key
from memmy_local.memos_emulator.extract import extract_sections
from memmy_local.memos_emulator.extraction import Section
from tests.support import docgen
from tests.support.linear_time import assert_linear_time

ZH_SENTENCE = "知识库让智能体在回答前检索团队文档中的相关段落。"  # 24 characters


def squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def test_a_section_without_heading_is_titled_by_a_short_key_of_its_text_not_the_file() -> None:
    excerpts = chunk_sections([Section(None, "简短的内容。\n第二行")])

    assert excerpts == [Excerpt("简短的内容。", "简短的内容。\n第二行")]


def test_heading_is_the_title() -> None:
    sections = [Section(None, "intro"), Section("第二章 部署", "正文"), Section("Usage", "run it")]

    excerpts = chunk_sections(sections)

    assert [(e.title, e.text) for e in excerpts] == [
        ("intro", "intro"),
        ("第二章 部署", "正文"),
        ("Usage", "run it"),
    ]


@pytest.mark.parametrize(
    ("text", "key"),
    [
        (
            "Copyright (c) 2010 The Pallets Projects and contributors\nAll rights reserved.",
            "Copyright (c) 2010 The Pallets Projects…",
        ),
        ("\n  \t\n  Short   first line  \nsecond", "Short first line"),
        ("知识库" * 20, "知识库" * 13 + "知…"),
        ("a" * 41, "a" * 40 + "…"),
        ("a" * 40, "a" * 40),
        ("", "untitled"),
    ],
)
def test_short_key(text: str, key: str) -> None:
    assert short_key(text) == key


@pytest.mark.parametrize("max_chars", [1, 7, 50, 120, 800])
def test_max_size_is_respected(max_chars: int) -> None:
    text = "\n".join(
        [ZH_SENTENCE * 10, "English words in a fairly long sentence. " * 12, "x" * 1000, "短。", ""]
    )

    chunks = chunk_text(text, max_chars)

    assert chunks
    assert all(0 < len(chunk) <= max_chars for chunk in chunks)
    assert squash("".join(chunks)) == squash(text)


def test_chinese_paragraph_splits_at_sentence_ends() -> None:
    text = "".join(f"第{i}句，{ZH_SENTENCE}" for i in range(10)) + "最后一句没有句号"

    chunks = chunk_text(text, 60)

    assert all(chunk.endswith("。") for chunk in chunks[:-1])
    assert chunks[-1].endswith("最后一句没有句号")
    assert all(len(chunk) <= 60 for chunk in chunks)


@pytest.mark.parametrize("terminator", ["。", "！", "？", "；"])
def test_every_chinese_terminator_ends_a_sentence(terminator: str) -> None:
    text = f"甲乙丙丁戊己庚{terminator}" * 4

    assert chunk_text(text, 10) == [f"甲乙丙丁戊己庚{terminator}"] * 4


def test_english_splits_at_sentence_ends_but_not_inside_numbers_or_domains() -> None:
    text = "Pi is 3.14 roughly. See example.com for more! Why not? Closing words here."

    chunks = chunk_text(text, 40)

    assert chunks == ["Pi is 3.14 roughly.", "See example.com for more! Why not?", "Closing words here."]


def test_closing_quotes_stay_with_their_sentence() -> None:
    chunks = chunk_text("他说：“好的。”然后离开了。", 10)

    assert chunks == ["他说：“好的。”", "然后离开了。"]


def test_paragraphs_are_packed_and_split_at_their_boundaries() -> None:
    paragraphs = [f"Paragraph {i} has some words." for i in range(10)]  # 28-29 characters each

    chunks = chunk_text("\n\n".join(paragraphs), 100)

    assert chunks[0] == "\n".join(paragraphs[:3])
    assert all(len(chunk) <= 100 for chunk in chunks)
    assert [line for chunk in chunks for line in chunk.split("\n")] == paragraphs


def test_long_sentences_are_hard_split_keeping_english_words_whole() -> None:
    words = " ".join(f"word{i:03d}" for i in range(100))

    chunks = chunk_text(words, 50)

    assert all(len(chunk) <= 50 for chunk in chunks)
    assert " ".join(chunks) == words


def test_unpunctuated_chinese_is_hard_split_at_the_limit() -> None:
    text = "汉" * 250

    assert chunk_text(text, 100) == ["汉" * 100, "汉" * 100, "汉" * 50]


def test_whitespace_is_normalised() -> None:
    chunks = chunk_text("  a \t  b\u3000c  \r\n\n\n   d  \x0c e ", 800)

    assert chunks == ["a b c\nd\ne"]


def test_no_empty_excerpts() -> None:
    sections = [Section(None, ""), Section("H", " \n\t\n "), Section(None, "text")]

    assert chunk_sections(sections) == [Excerpt("text", "text")]


def test_max_chars_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_chars"):
        chunk_sections([Section(None, "x")], max_chars=0)


def test_extracted_docx_chunks_carry_headings() -> None:
    data = docgen.make_docx([(None, "导言。"), ("部署", ZH_SENTENCE * 50)])

    excerpts = chunk_sections(extract_sections("手册.docx", data), max_chars=200)

    assert excerpts[0] == Excerpt("导言。", "导言。")
    assert {e.title for e in excerpts[1:]} == {"部署"}
    assert all(len(e.text) <= 200 for e in excerpts)
    assert "".join(e.text for e in excerpts[1:]) == ZH_SENTENCE * 50


TEXT_ALPHABET = st.sampled_from(
    list("知识库检索文档段落中英混合abcdefgXYZ0123456789")
    + list("。！？；.!?,，“”'\")")
    + [" ", "  ", "\t", "\n", "\n\n", "\r\n", "\u3000", "\xa0", "\x0c"]
)


@settings(max_examples=300, deadline=None)
@given(
    text=st.lists(TEXT_ALPHABET, max_size=400).map("".join),
    max_chars=st.integers(min_value=1, max_value=120),
    heading=st.none() | st.sampled_from(["标题", "Heading"]),
)
def test_chunking_loses_no_characters(text: str, max_chars: int, heading: str | None) -> None:
    excerpts = chunk_sections([Section(heading, text)], max_chars=max_chars)

    assert squash("".join(e.text for e in excerpts)) == squash(text)
    for excerpt in excerpts:
        assert excerpt.title == (heading or short_key(excerpt.text))
        assert 0 < len(excerpt.text) <= max_chars
        assert excerpt.text == excerpt.text.strip()
        assert "  " not in excerpt.text


# -- in linear time, and where they were --------------------------------------------------------------

# The sentence end and the hard split before they were made linear: references for short inputs.
QUADRATIC_SENTENCE_END = re.compile(r"""(?:[。！？；]+|[.!?]+(?=[\s"'”’)\]」』）]|$))[”’"')\]」』）]*\s*""")


def quadratic_hard_split(sentence: str, max_chars: int) -> list[str]:
    pieces = []
    rest = sentence
    while len(rest) > max_chars:
        cut = rest.rfind(" ", max_chars // 2, max_chars + 1)
        if cut <= 0:
            cut = max_chars
        pieces.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip()
    if rest:
        pieces.append(rest)
    return pieces


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(list('.!?。！；a ”)"\'\n\t')), max_size=60).map("".join))
def test_sentences_end_where_they_did(text: str) -> None:
    spans = [m.span() for m in chunking._SENTENCE_END.finditer(text)]
    assert spans == [m.span() for m in QUADRATIC_SENTENCE_END.finditer(text)]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(["a", "bb", "文", " "]), max_size=80).map("".join), st.integers(1, 20))
def test_long_sentences_are_cut_where_they_were(text: str, max_chars: int) -> None:
    sentence = " ".join(text.split())
    assert chunking._hard_split(sentence, max_chars) == quadratic_hard_split(sentence, max_chars)


# Paragraphs of exactly ``size`` characters, shaped against the sentence end and the hard split. 8 MB
# lines: the emulator takes files of up to 100 MB, but 8,192 times the 1 KB case shows linear time
# without a unit test holding hundreds of MB (a quadratic split takes hours there).
LARGEST_LINE = 8 * 1024 * 1024
HOSTILE_PARAGRAPHS = {
    "a run of terminators, then a letter": lambda size: "!" * (size - 1) + "x",
    "mixed terminators, then a letter": lambda size: ("?!." * size)[: size - 1] + "x",
    "dots between digits": lambda size: ("1." * size)[:size],
    "one long word": lambda size: "a" * size,
    "short words": lambda size: ("ab " * size)[:size],
}


@pytest.mark.parametrize("shape", list(HOSTILE_PARAGRAPHS))
def test_a_hostile_paragraph_is_chunked_in_linear_time(shape: str) -> None:
    assert_linear_time(lambda text: chunk_text(text, 800), HOSTILE_PARAGRAPHS[shape], large=LARGEST_LINE)
