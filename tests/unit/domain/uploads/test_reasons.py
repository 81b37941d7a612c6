"""Failure reasons travel with a machine code (``memmy_kb.domain.uploads.reasons``): every sentence the domain
can record has its own, so a client can word it in its language."""

from __future__ import annotations

import pytest

from memmy_kb.domain.deletion import delete
from memmy_kb.domain.knowledge_bases import files
from memmy_kb.domain.knowledge_bases.capacity import bytes_refused, files_refused
from memmy_kb.domain.uploads import ingest, verification
from memmy_kb.domain.uploads.reasons import reason_code
from memmy_kb.records import KbCapacity

SENTENCES = [
    *verification.REASONS.values(),
    *(
        value
        for name, value in vars(verification).items()
        if name.isupper() and isinstance(value, str) and value.endswith(".")
    ),
    *(value for name, value in vars(ingest).items() if name.isupper() and isinstance(value, str)),
    *(value for name, value in vars(files).items() if name.isupper() and isinstance(value, str)),
    delete.FOLDER_GONE,
]


@pytest.mark.parametrize("sentence", sorted(set(SENTENCES)))
def test_every_reason_sentence_of_the_domain_has_its_own_code(sentence):
    assert reason_code(sentence) not in (None, "other")


def test_codes_are_distinct_per_sentence():
    sentences = sorted(set(SENTENCES) - {delete.FOLDER_GONE} | {ingest.FOLDER_GONE})
    codes = [reason_code(s) for s in sentences]
    assert len(set(codes)) == len(codes)


@pytest.mark.parametrize(
    ("capacity", "code"),
    [
        (KbCapacity(max_files=7, max_bytes=3 * 1024**2), "kb_file_limit_reached"),
        (KbCapacity(max_files=1000, max_bytes=2 * 1024**3), "kb_storage_limit_reached"),
    ],
)
def test_capacity_refusals_are_coded_whatever_their_limits(capacity, code):
    refusal = files_refused(capacity) if code == "kb_file_limit_reached" else bytes_refused(capacity)
    assert reason_code(refusal.message) == code


def test_no_reason_has_no_code_and_an_unknown_one_is_other():
    assert reason_code(None) is None
    assert reason_code("Something new went wrong.") == "other"
