"""Normal forms of the identifiers a KB is shared by: no look-alike email matches another, no number is cut."""

from __future__ import annotations

import pytest

from memmy_kb.domain.directory import normalise_email, normalise_phone


@pytest.mark.parametrize(
    ("raw", "stored"),
    [
        ("Bob@Example.com", "bob@example.com"),
        ("  alice@example.com ", "alice@example.com"),
        ("x@ＥＸＡＭＰＬＥ.com", "x@example.com"),  # fullwidth domain: compatibility-normalised
        ("a@Bücher.de", "a@xn--bcher-kva.de"),  # an internationalised domain in its ASCII form
        ("first.last+tag@example.co.uk", "first.last+tag@example.co.uk"),
    ],
)
def test_an_email_is_stored_in_one_form(raw: str, stored: str) -> None:
    assert normalise_email(raw) == stored


@pytest.mark.parametrize(
    "raw",
    [
        "\u212aelvin@example.com",  # KELVIN SIGN: folds to "kelvin@" but is another mailbox
        "ﬁle@example.com",  # a ligature, likewise
        "é@example.com",
        "a b@example.com",
        "a@@example.com",
        "@example.com",
        "a@localhost",
        "a" * 250 + "@example.com",
    ],
)
def test_an_email_that_could_pass_for_another_is_refused(raw: str) -> None:
    assert normalise_email(raw) is None


def test_a_look_alike_never_equals_the_real_address() -> None:
    assert normalise_email("kelvin@example.com") == "kelvin@example.com"
    assert normalise_email("\u212aelvin@example.com") != normalise_email("kelvin@example.com")


@pytest.mark.parametrize(
    ("raw", "stored"),
    [("13800138000", "+8613800138000"), ("138 0013 8000", "+8613800138000"), ("+86 138-0013-8000", "+8613800138000")],
)
def test_a_phone_is_stored_in_e164(raw: str, stored: str) -> None:
    assert normalise_phone(raw) == stored


@pytest.mark.parametrize(
    "raw", ["13800138000 ext 12", "13800138000;ext=1", "13800138000 x12", "1380013800a", "1-800-FLOWERS", "138"]
)
def test_a_phone_with_an_extension_or_letters_is_refused_not_truncated(raw: str) -> None:
    assert normalise_phone(raw) is None
