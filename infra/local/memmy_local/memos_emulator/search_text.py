"""Tokenising for the emulator's full-text index.

SQLite's ``unicode61`` tokenizer treats a run of Chinese characters as one token, so Chinese text is
segmented with jieba first and stored space-joined; English words pass through lower-cased.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable
from functools import cache
from typing import Protocol

_WORD = re.compile(r"\w", re.UNICODE)

# Function words that carry no topic; dropping them from queries keeps BM25 from rewarding excerpts
# that merely share grammar with the question.
_STOPWORDS_ZH = "的 了 和 与 及 或 是 在 有 也 都 就 而 之 对 于 把 被 给 从 到 为 以 等 这 那 其 个 么 吗 呢 吧 啊 什么 怎么 如何 哪些 哪个 为什么 有没有 是否 一个 一些 我们 你们 他们 我 你 他 她 它"
_STOPWORDS_EN = "a an and are as at be by for from has have how i in is it its of on or that the this to was what when where which who why will with do does did can"
STOPWORDS = frozenset(_STOPWORDS_ZH.split() + _STOPWORDS_EN.split())

_init_lock = threading.Lock()


class _Segmenter(Protocol):
    """What the emulator uses of jieba (which ships no type information)."""

    def cut_for_search(self, sentence: str) -> Iterable[str]: ...


@cache
def _jieba() -> _Segmenter:
    with _init_lock:
        import jieba

        jieba.setLogLevel(logging.WARNING)
        jieba.initialize()
        segmenter: _Segmenter = jieba
        return segmenter


def warm_up() -> None:
    """Load jieba's dictionary now (about half a second) instead of on the first request."""
    _jieba()


def tokens(text: str) -> list[str]:
    """Segment ``text`` into lower-cased search tokens (Chinese words and their sub-words included)."""
    out = []
    for token in _jieba().cut_for_search(text.lower()):
        token = token.strip()
        if token and _WORD.search(token):
            out.append(token)
    return out


def index_text(text: str) -> str:
    """The space-joined form stored in the FTS5 column."""
    return " ".join(tokens(text))


def query_terms(query: str) -> list[str]:
    """Distinct query tokens worth matching, in order; stopwords dropped unless nothing else is left."""
    seen: dict[str, None] = {}
    for token in tokens(query):
        seen.setdefault(token, None)
    terms = [t for t in seen if t not in STOPWORDS]
    return terms or list(seen)


def fts_match_expression(terms: list[str]) -> str:
    """An FTS5 MATCH expression that ORs the quoted terms (quotes make any input literal)."""
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)
