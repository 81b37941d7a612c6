"""``memmy_kb.domain.fingerprints.prints``: a text's sampled shingle hashes, their stored form, and a hit's file.

The sample is the point: the same text given whole or in pieces samples the same hashes, a long text's
level rises so that at most ``MAX_HASHES`` are kept (exactly the hashes of that level, nothing else), and
a hit is named by the files that hold enough of it: one, a few, or none.
"""

from __future__ import annotations

import random
import struct
from array import array

import pytest

from memmy_kb.domain.fingerprints.prints import (
    FORMAT,
    MAX_HASHES,
    MAX_LEVEL,
    SHINGLE,
    FileIndex,
    Fingerprints,
    Sampler,
    attribute,
    fingerprint,
    hit_hashes,
    level_of,
    shingle_hashes,
    tokens,
)
from tests.support.linear_time import assert_linear_time

REFUNDS = (
    "Refunds are paid within fourteen days of the return reaching our warehouse, to the card the order "
    "was paid with; a voucher is offered only when the customer asks for one in writing."
)
SHIPPING = (
    "Parcels leave the depot each weekday at four in the afternoon, and a tracking number is emailed "
    "as soon as the courier scans the label at the loading bay."
)
LICENCE = (
    "Permission is hereby granted, free of charge, to any person obtaining a copy of this software and "
    "associated documentation files, to deal in the Software without restriction."
)
CJK = "开源版本提供基础的记忆管理功能，商业版本另外提供多租户隔离、审计日志和专属技术支持服务。"


def _words(count: int, seed: int = 7) -> str:
    rng = random.Random(seed)
    vocabulary = ["".join(rng.choice("abcdefghijklmnop") for _ in range(rng.randint(3, 8))) for _ in range(3000)]
    return " ".join(rng.choice(vocabulary) for _ in range(count))


def _index(**files: str) -> FileIndex[str]:
    return FileIndex({name: fingerprint([text]) for name, text in files.items()})


# -- tokens and the sample ---------------------------------------------------------------------------


def test_tokens_are_normalised_words_and_single_cjk_characters():
    assert list(tokens("Ｈｅｌｌｏ, WORLD_wide — 知识库!")) == ["hello", "world", "wide", "知", "识", "库"]


@pytest.mark.parametrize("size", [1, 7, 64, 1000])
def test_a_text_given_in_pieces_samples_as_the_whole_text_does(size):
    # Cut at spaces (the ingest cuts between words): every piece size gives the whole text's fingerprints.
    text = _words(8_000)
    words = text.split(" ")
    pieces = [" ".join(words[i : i + size]) + " " for i in range(0, len(words), size)]
    assert fingerprint(pieces) == fingerprint([text])


def test_cjk_text_in_pieces_samples_as_whole():
    text = CJK * 40
    pieces = [text[i : i + 13] for i in range(0, len(text), 13)]
    whole = fingerprint([text])
    assert fingerprint(pieces) == whole
    assert len(whole.hashes) > 0


def test_a_short_text_keeps_every_hash_at_level_0():
    prints = fingerprint([REFUNDS])
    assert prints.level == 0
    assert set(prints.hashes) == hit_hashes(REFUNDS)
    assert list(prints.hashes) == sorted(set(prints.hashes))


def test_a_long_text_raises_the_level_and_keeps_exactly_that_levels_hashes():
    text = _words(60_000)
    prints = fingerprint([text])
    every = set(shingle_hashes(tokens(text)))
    assert prints.level > 0
    assert len(prints.hashes) <= MAX_HASHES
    # Bounded, and not any subset: exactly the hashes of the level, so a hit samples them the same way.
    assert set(prints.hashes) == {h for h in every if level_of(h) >= prints.level}
    # One level lower would have been too many.
    assert len({h for h in every if level_of(h) >= prints.level - 1}) > MAX_HASHES


def test_the_sampler_keeps_its_limit_whatever_it_is_given():
    sampler = Sampler(limit=50)
    words = _words(40_000).split(" ")
    for start in range(0, len(words), 500):
        sampler.add(" ".join(words[start : start + 500]) + " ")
        assert len(sampler.result().hashes) <= 50
    assert sampler.level > 0


def test_level_of_is_capped():
    assert level_of(0) == MAX_LEVEL
    assert level_of(0xFFFFFFFF) == 0
    assert level_of(1 << 20) == 11


# -- the stored form ---------------------------------------------------------------------------------


def test_encode_decode_round_trip():
    prints = fingerprint([_words(50_000)])
    data = prints.encode()
    assert data[:4] == FORMAT
    assert len(data) == 10 + 4 * len(prints.hashes)
    assert Fingerprints.decode(data) == prints


def test_an_empty_sample_round_trips():
    assert Fingerprints.decode(Fingerprints(0, array("I")).encode()) == Fingerprints(0, array("I"))


@pytest.mark.parametrize(
    "junk",
    [
        b"",
        b"MKFP",
        b"XXXX" + bytes(6),
        struct.pack("<4sBBI", FORMAT, SHINGLE + 1, 0, 0),  # another shingle size
        struct.pack("<4sBBI", FORMAT, SHINGLE, 0, 2) + bytes(4),  # fewer hashes than counted
        struct.pack("<4sBBI", FORMAT, SHINGLE, 0, 1) + bytes(5),  # a stray byte
        struct.pack("<4sBBI", FORMAT, SHINGLE, MAX_LEVEL + 1, 0),  # a level no sampler reaches
    ],
)
def test_decode_refuses_what_is_not_a_record_of_this_format(junk):
    with pytest.raises(ValueError, match="fingerprint"):
        Fingerprints.decode(junk)


# -- attribution -------------------------------------------------------------------------------------


def test_a_hit_from_one_file_names_that_file():
    index = _index(refunds=REFUNDS + " " + SHIPPING, other=_words(300))
    found = attribute(REFUNDS, [index])
    assert found.files == ("refunds",)
    assert found.clear
    assert found.containment == pytest.approx(1.0)


def test_a_hit_whose_text_two_files_share_names_both_as_candidates():
    index = _index(**{"a/LICENSE": LICENCE + " " + REFUNDS, "b/LICENSE": LICENCE + " " + SHIPPING})
    found = attribute(LICENCE, [index])
    assert sorted(found.files) == ["a/LICENSE", "b/LICENSE"]
    assert not found.clear


def test_of_two_files_from_one_template_the_one_holding_the_hits_own_words_is_named_alone():
    # Two licences from one template, told apart by their copyright line: a hit with Alpha's line is
    # Alpha's; a hit of the shared text alone names both.
    alpha = "Copyright 2010 Alpha Ltd. " + LICENCE
    beta = "Copyright 2015 Beta Inc. " + LICENCE
    index = _index(alpha=alpha, beta=beta)
    assert attribute(alpha, [index]).files == ("alpha",)
    assert sorted(attribute(LICENCE, [index]).files) == ["alpha", "beta"]


def test_a_hit_no_file_holds_names_none():
    index = _index(refunds=REFUNDS, shipping=SHIPPING)
    assert attribute(_words(60, seed=99), [index]).files == ()
    assert attribute("", [index]).files == ()
    assert attribute("two words", [index]).files == ()


def test_a_weak_match_names_no_file():
    # A hit that shares one short phrase with a file is not that file's.
    index = _index(refunds=REFUNDS)
    hit = "Refunds are paid " + _words(80, seed=5)
    assert attribute(hit, [index]).files == ()


def test_a_hit_of_a_long_file_is_named_at_that_files_level():
    body = _words(40_000, seed=3)
    index = _index(big=body, small=REFUNDS)
    assert index.levels[0] > 0
    excerpt = " ".join(body.split(" ")[20_000:22_000])
    assert attribute(excerpt, [index]).files == ("big",)


def test_files_of_several_indexes_compete_for_a_hit():
    first, second = _index(refunds=REFUNDS), _index(shipping=SHIPPING)
    assert attribute(SHIPPING, [first, second]).files == ("shipping",)


def test_cjk_hit_is_named():
    index = _index(中文=CJK + REFUNDS, english=SHIPPING)
    assert attribute(CJK[5:40], [index]).files == ("中文",)


@pytest.mark.parametrize("unit", ["a_", "中a", "a" * 63 + "\u3000", "_-"], ids=["word-underscore", "cjk-latin", "long-runs", "no-words"])
def test_tokens_and_the_match_run_in_linear_time_on_hostile_text(unit):
    # A file's text (and a hit's) reaches the token pattern whole: one alternation, no nested quantifier.
    def make(size: int) -> str:
        return (unit * (size // len(unit) + 1))[:size]

    assert_linear_time(lambda text: sum(1 for _ in tokens(text)), make, large=1024 * 1024)
    index = _index(refunds=REFUNDS)
    assert_linear_time(lambda text: attribute(text, [index]), make, large=256 * 1024)
