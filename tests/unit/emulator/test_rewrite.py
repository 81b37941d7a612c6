"""The emulator's rewrite mode: deterministic per memory, a quarter of the words changed, sentences
reordered, width and whitespace normalised."""

from __future__ import annotations

import re
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memmy_local.memos_emulator.rewrite import rewrite

ENGLISH = (
    "Flask is a lightweight WSGI web application framework. It is designed to make getting started quick"
    " and easy, with the ability to scale up to complex applications.\n"
    "It began as a simple wrapper around Werkzeug and Jinja, and has become one of the most popular Python"
    " web application frameworks. Flask offers suggestions, but does not enforce any dependencies or"
    " project layout!\n"
    "It is up to the developer to choose the tools and libraries they want to use. There are many"
    " extensions provided by the community that make adding new functionality easy?"
)
CHINESE = "知识库让智能体在回答前检索团队文档中的相关段落。开源版可以免费下载并私有化自部署。商业版是托管的云服务，按调用量计费。"


def english_words(text: str) -> list[str]:
    return [w.casefold() for w in re.findall(r"[^\W_]+", text)]


def sentences_of(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?。])\s*", text) if s.strip()]


def changed_share(before: list[str], after: list[str]) -> float:
    """The share of ``before``'s words that are not in ``after`` any more (dropped or replaced)."""
    return sum((Counter(before) - Counter(after)).values()) / len(before)


def test_the_same_memory_reads_the_same_and_another_memory_otherwise() -> None:
    assert rewrite(ENGLISH, "memory-1") == rewrite(ENGLISH, "memory-1")
    assert rewrite(ENGLISH, "memory-1") != rewrite(ENGLISH, "memory-2")


@pytest.mark.parametrize("seed", [f"m{i}" for i in range(20)])
def test_at_least_a_fifth_of_the_words_are_dropped_or_replaced(seed: str) -> None:
    after = rewrite(ENGLISH, seed)

    assert changed_share(english_words(ENGLISH), english_words(after)) >= 0.2
    assert changed_share(list(CHINESE), list(rewrite(CHINESE, seed))) >= 0.2


@pytest.mark.parametrize("seed", [f"m{i}" for i in range(20)])
def test_sentences_are_reordered(seed: str) -> None:
    original = sentences_of(ENGLISH)
    after = sentences_of(rewrite(ENGLISH, seed))
    # Each rewritten sentence is matched to the original it shares most words with: their order differs.
    origin = [
        max(range(len(original)), key=lambda i: len(set(english_words(s)) & set(english_words(original[i]))))
        for s in after
    ]
    assert origin != sorted(origin)


def test_width_and_whitespace_are_normalised() -> None:
    text = "ＭｅｍＯＳ　ｉｓ　ａ　ｍｅｍｏｒｙ　ｓｙｓｔｅｍ１２３．\n\n  Its   keys are   short\t\twords ."

    after = rewrite(text, "m")

    assert not re.search(r"[\uff01-\uff5e\u3000]", after)
    assert after == " ".join(after.split())


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300), st.text(max_size=20))
def test_any_text_rewrites_to_normalised_text_without_failing(text: str, seed: str) -> None:
    after = rewrite(text, seed)

    assert after == rewrite(text, seed)
    assert after == " ".join(after.split())
