"""The context block cut to each agent's inline limit: whole excerpts only, best first, renumbered.

Blocks are built by the cloud's own builder (``memmy_kb.domain.context_block``), so the cut is tested on the
shape the service really sends.
"""

from __future__ import annotations

import re

import pytest

from memmy_kb.domain.context_block import Excerpt, build_context
from memmy_kb_client.desktop.block import (
    LIMITS,
    InlineLimit,
    fit_block,
    fit_for_agent,
    utf8_bytes,
    utf16_units,
)
from memmy_kb_client.desktop.cloud import MAX_REPLY_BYTES
from tests.support.linear_time import assert_linear_time

SECTION = re.compile(
    r'<excerpt-([0-9a-f]{16}) n="(\d+)">\n来源 Source: 《(.*?)》\n(.*?)\n</excerpt-\1>', re.DOTALL
)


def chinese_block(count: int = 12, size: int = 600) -> str:
    hits = [
        Excerpt(f"文档{i}", f"第{i}条：" + "报销制度说明" * (size // 6), 1.0 - i / 100) for i in range(count)
    ]
    return build_context(hits, max_chars=8000).text


def sections(block: str) -> list[tuple[str, str, str, str]]:
    return SECTION.findall(block)


def test_a_block_within_the_limit_is_unchanged():
    block = chinese_block(count=2, size=60)
    for agent in LIMITS:
        assert fit_for_agent(block, agent) == block


def test_the_cloud_block_is_over_the_codex_limit_and_is_cut_by_whole_excerpts():
    block = chinese_block()
    assert len(block) <= 8000
    assert utf8_bytes(block) > LIMITS["codex"].limit

    cut = fit_for_agent(block, "codex")

    assert 0 < utf8_bytes(cut) <= LIMITS["codex"].limit
    kept, original = sections(cut), sections(block)
    assert 0 < len(kept) < len(original)
    # The preface is kept whole, the boundary is the block's, the excerpts are the best ones, in order,
    # numbered 1..n again, each one whole.
    assert cut.split("\n\n<excerpt-")[0] == block.split("\n\n<excerpt-")[0]
    assert {boundary for boundary, *_ in kept} == {original[0][0]}
    assert [title for _, _, title, _ in kept] == [title for _, _, title, _ in original[: len(kept)]]
    assert [int(n) for _, n, _, _ in kept] == list(range(1, len(kept) + 1))
    assert [text for *_, text in kept] == [text for *_, text in original[: len(kept)]]


def test_claude_code_counts_utf16_units():
    # Astral characters count twice for JavaScript: a block of them is cut earlier than len() suggests.
    hits = [Excerpt(f"doc{i}", "𠀀" * 900, None) for i in range(8)]
    block = build_context(hits, max_chars=20000).text
    cut = fit_for_agent(block, "claude-code")
    assert utf16_units(cut) <= LIMITS["claude-code"].limit < utf16_units(block)
    assert len(sections(cut)) < len(sections(block))


def test_a_long_excerpt_that_does_not_fit_is_skipped_for_a_shorter_one():
    hits = [Excerpt("short-1", "a" * 100), Excerpt("long", "b" * 5000), Excerpt("short-2", "c" * 100)]
    block = build_context(hits, max_chars=20000).text
    cut = fit_block(block, InlineLimit(3000, len, "characters"))
    assert [title for _, _, title, _ in sections(cut)] == ["short-1", "short-2"]


def test_nothing_fits_means_an_empty_block():
    block = chinese_block(count=1, size=3000)
    assert fit_block(block, InlineLimit(1500, len, "characters")) == ""


@pytest.mark.parametrize("text", ["not a block at all " * 100, "<excerpt-XYZ n=1>" + "x" * 100])
def test_a_block_of_another_shape_that_does_not_fit_is_dropped_not_cut(text):
    assert fit_block(text, InlineLimit(50, len, "characters")) == ""


def test_an_unknown_agent_gets_the_block_as_is():
    block = chinese_block()
    assert fit_for_agent(block, None) == block
    assert fit_for_agent(block, "other") == block


BOUNDARY = "0123456789abcdef"
OPENING = f'<excerpt-{BOUNDARY} n="1">\n'
CLOSING = f"\n</excerpt-{BOUNDARY}>"
# Blocks no cloud of ours sends, shaped against the cut; each of exactly ``size`` characters.
HOSTILE_BLOCKS = {
    "openings without closings": lambda size: _fill("preface\n\n", OPENING, size),
    "many tiny excerpts": lambda size: _fill("preface\n\n", f"{OPENING}x{CLOSING}\n\n", size),
    "a preface over the limit": lambda size: _fill("p" * (size // 2) + "\n\n", f"{OPENING}x{CLOSING}\n\n", size),
    "an opening with a long number": lambda size: _fill(f'preface\n\n<excerpt-{BOUNDARY} n="', "1", size),
    "closings without openings": lambda size: _fill(f"preface\n\n{OPENING}x{CLOSING}\n\n", CLOSING, size),
}


def _fill(prefix: str, unit: str, size: int) -> str:
    body = prefix + unit * ((size - len(prefix)) // len(unit))
    return body + " " * (size - len(body))


@pytest.mark.parametrize("shape", list(HOSTILE_BLOCKS))
def test_a_hostile_block_of_the_largest_reply_is_cut_in_linear_time(shape):
    make, limit = HOSTILE_BLOCKS[shape], InlineLimit(500, utf16_units, "UTF-16 code units")
    assert_linear_time(lambda block: fit_block(block, limit), make, large=MAX_REPLY_BYTES)
    assert utf16_units(fit_block(make(MAX_REPLY_BYTES), limit)) <= limit.limit
