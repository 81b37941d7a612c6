"""The attribution bench's own logic: the corpus it builds from the installed packages, how it judges a
hit, and the rule's variants it compares (the dominance step out of reach)."""

from __future__ import annotations

from collections import Counter

from bench import attribution, attribution_corpus
from bench.attribution_report import constants
from memmy_kb.domain.fingerprints import prints as fp

MIT = (
    "Permission is hereby granted, free of charge, to any person obtaining a copy of this software and"
    " associated documentation files (the Software), to deal in the Software without restriction, including"
    " without limitation the rights to use, copy, modify, merge, publish, distribute, sublicense, and/or sell"
    " copies of the Software."
)


def index_of(texts: dict[str, str]) -> fp.FileIndex[str]:
    return fp.FileIndex({name: fp.fingerprint([text]) for name, text in texts.items()})


def test_the_corpus_is_fifty_real_documents_or_more_in_four_formats_with_one_replacement() -> None:
    sources = list(attribution_corpus.sources())
    formats = Counter(
        "docx" if n % 5 == 1 else "pdf" if n % 7 == 3 else markup for n, (*_, markup) in enumerate(sources)
    )

    assert len(sources) >= 50
    assert set(formats) == {"md", "txt", "docx", "pdf"}
    kinds = Counter(kind for _, kind, _, _ in sources)
    assert kinds["README"] >= 20
    assert sum(n for kind, n in kinds.items() if kind != "README") >= 20
    pallets = [text for package, kind, text, _ in sources if kind == "LICENSE-txt" and "Pallets" in text]
    assert len(pallets) >= 2  # near-duplicates: one licence, different years


def test_a_hit_is_judged_by_the_files_that_hold_its_text() -> None:
    hit = attribution.Hit("m1", "a.md", "to deal in the Software without restriction", "")
    lines = {name: attribution._token_line(text) for name, text in {"a.md": MIT, "b.txt": MIT, "c.txt": "other"}.items()}

    assert attribution.holders(hit, lines) == {"a.md", "b.txt"}
    tally = attribution.tally([hit], index_of({"a.md": MIT, "b.txt": MIT}), {"m1": {"a.md", "b.txt"}}, rewritten=False)
    assert tally.outcomes == Counter({"candidates": 1})
    assert tally.shared == Counter({"candidates": 1})


def test_a_file_named_for_text_it_does_not_hold_is_wrong() -> None:
    hit = attribution.Hit("m1", "a.md", MIT, "")

    tally = attribution.tally([hit], index_of({"b.txt": MIT}), {"m1": {"a.md"}}, rewritten=False)

    assert tally.outcomes == Counter({"wrong": 1})
    assert tally.wrong == [("a.md", ("b.txt",), MIT[:80])]


def test_the_dominance_step_tells_a_licence_from_its_twin_by_the_copyright_line() -> None:
    files = {
        "pyrate/LICENSE": f"MIT License Copyright (c) 2021 vutran1710 {MIT}",
        "mdit/LICENSE": f"MIT License Copyright (c) 2020 ExecutableBookProject {MIT}",
    }
    hit = files["pyrate/LICENSE"]
    index = index_of(files)

    with constants({"MIN_DISTINCT": 10**9}):  # without the step: both, as candidates
        assert set(fp.attribute(hit, [index]).files) == set(files)
    assert fp.attribute(hit, [index]).files == ("pyrate/LICENSE",)
    assert set(fp.attribute(MIT, [index]).files) == set(files)  # the shared text alone: both still


def test_constants_are_patched_for_the_block_only() -> None:
    before = fp.CANDIDATE_RATIO

    with constants({"CANDIDATE_RATIO": 0.5}):
        assert fp.CANDIDATE_RATIO == 0.5

    assert before == fp.CANDIDATE_RATIO


def test_a_question_is_words_of_the_memory() -> None:
    import random

    text = "The quick brown fox jumps over the lazy dog near 42 riverbanks today"
    question = attribution.question_from(text, random.Random(1))

    assert 1 <= len(question.split()) <= 8
    assert set(question.split()) <= set(text.split())
