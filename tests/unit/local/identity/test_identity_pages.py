"""``memmy_local.identity.pages``: what the dev provider's sign-in form accepts, in linear time."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memmy_local.identity.pages import EMAIL, read_sign_in
from tests.support.linear_time import assert_linear_time

# The email pattern before it was made linear: the reference for short values.
QUADRATIC_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")


@pytest.mark.parametrize(
    ("email", "accepted"),
    [("a@b.c", True), ("name@example.com", True), ("a@b.c.d", True), ("a@.b.c", True),
     ("a@b.", False), ("a@.b", False), ("a@b", False), ("@b.c", False), ("a b@c.d", False), ("a@b@c.d", False)],
)
def test_an_email_needs_a_dot_inside_its_domain(email: str, accepted: bool) -> None:
    typed, errors = read_sign_in({"login_user_id": "u", "login_email": email})
    assert (typed is not None, bool(errors)) == (accepted, not accepted)


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from(["a", ".", "@", " ", "b.c"]), max_size=20).map("".join))
def test_emails_are_judged_as_they_were(email: str) -> None:
    assert (EMAIL.fullmatch(email) is None) == (QUADRATIC_EMAIL.fullmatch(email) is None)


# Typed fields have no size limit before this check (the form is read whole; "too long" is judged with
# it), so 1 MB stands for "far past the 200 characters a field may have".
LARGEST_FIELD = 1024 * 1024
HOSTILE_EMAILS = {
    "a domain of dots, then a space and a letter": lambda size: "a@" + "." * (size - 4) + " x",
    "a domain of dots, then an at sign": lambda size: "a@" + "." * (size - 3) + "@",
    "no at sign": lambda size: "a" * size,
    "at signs only": lambda size: "@" * size,
    "dots and letters, then a space and a letter": lambda size: "a@" + "a." * ((size - 4) // 2) + " x",
}


@pytest.mark.parametrize("shape", list(HOSTILE_EMAILS))
def test_a_hostile_email_is_judged_in_linear_time(shape: str) -> None:
    def judged(email: str) -> object:
        return read_sign_in({"login_user_id": "u", "login_email": email})

    assert_linear_time(judged, HOSTILE_EMAILS[shape], large=LARGEST_FIELD)
