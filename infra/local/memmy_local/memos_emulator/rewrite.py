"""The emulator's rewrite mode (``--memos-rewrite``): a memory's text as a memory system that rewrites what
it stores might return it, so that recognising a hit's file is measured against text that is not the
document's verbatim (docs/memos.md, "What a hit's text is").

``rewrite`` normalises the text (NFKC: full-width letters, digits and punctuation become half-width; every
run of whitespace, line ends included, one space), shuffles its sentences (a line without a terminator is
a sentence too), and changes ``CHANGED_SHARE`` of its words: half of those dropped, the others replaced by
a filler word the text does not hold. A word is a CJK character, or a run of other non-blank characters
(its punctuation with it). The result depends on the text and the seed only (the memory's id): the same
memory reads the same on every search.
"""

from __future__ import annotations

import math
import random
import re
import unicodedata
from typing import Final

from .chunking import sentences

# The share of a memory's words dropped or replaced (rounded up): at least a fifth, as asked of the mode.
CHANGED_SHARE: Final = 0.25
_FILLERS_EN: Final = (
    "notably", "overall", "basically", "specifically", "generally", "typically", "essentially",
    "namely", "indeed", "roughly", "broadly", "largely", "mainly", "chiefly", "simply", "clearly",
)  # fmt: skip
_FILLERS_ZH: Final = tuple("其该此亦均皆则乃即故且另")
_CJK: Final = "\u2e80-\u2fdf\u3040-\u30ff\u3100-\u312f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_WORD: Final = re.compile(rf"[{_CJK}]|[^\s{_CJK}]+")
_IS_CJK: Final = re.compile(rf"[{_CJK}]")


def rewrite(text: str, seed: str) -> str:
    """``text`` normalised, its sentences shuffled and ``CHANGED_SHARE`` of its words dropped or replaced,
    the same for the same ``seed``."""
    rng = random.Random(seed)  # noqa: S311 - reproducible noise, not security
    normal = unicodedata.normalize("NFKC", text)
    parts = [
        [match.group() for match in _WORD.finditer(sentence)]
        for line in normal.splitlines()
        for sentence in sentences(" ".join(line.split()))
    ]
    parts = [words for words in parts if words]
    if len(parts) > 1:
        order = list(range(len(parts)))
        rng.shuffle(order)
        if order == sorted(order):  # shuffled back into place: move every sentence on by one
            order = order[1:] + order[:1]
        parts = [parts[i] for i in order]
    return _join(_change_words(parts, rng))


def _change_words(parts: list[list[str]], rng: random.Random) -> list[str]:
    """Every word in order, ``CHANGED_SHARE`` of them dropped (half) or replaced by a filler (the others)."""
    words = [word for words in parts for word in words]
    if not words:
        return []
    changed = rng.sample(range(len(words)), math.ceil(len(words) * CHANGED_SHARE))
    replaced = set(changed[::2])
    dropped = set(changed[1::2])
    held = {word.casefold() for word in words}
    fillers = {
        cjk: [f for f in (_FILLERS_ZH if cjk else _FILLERS_EN) if f not in held] for cjk in (False, True)
    }
    out = []
    for at, word in enumerate(words):
        if at in dropped:
            continue
        if at in replaced:
            choices = fillers[bool(_IS_CJK.fullmatch(word))]
            if not choices:  # every filler is a word of the text already: drop the word instead
                continue
            word = rng.choice(choices)
        out.append(word)
    return out


def _join(words: list[str]) -> str:
    """Words back into text: a space between two words unless one of them is a CJK character."""
    out: list[str] = []
    for word in words:
        if out and not (_IS_CJK.fullmatch(word) or _IS_CJK.fullmatch(out[-1])):
            out.append(" ")
        out.append(word)
    return "".join(out)
