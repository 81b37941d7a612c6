"""Claims a login provider may send: a clear 401 for an unusable subject, unusable optional claims dropped."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

import pytest

from memmy_kb.api.identity import MAX_SUBJECT_BYTES, caller_id, verified_claims
from memmy_kb.errors import Unauthorized


def event(**claims: Any) -> dict[str, Any]:
    return {"requestContext": {"authorizer": {"jwt": {"claims": claims}}}}


@pytest.mark.parametrize(
    "sub",
    [
        "x" * (MAX_SUBJECT_BYTES + 1),
        "名" * 100,  # 300 bytes of UTF-8
        "auth0|\ud800abc",  # a lone surrogate
        "alice\nbob",
        "alice\x00",
        "\ue000private",
    ],
    ids=["long", "long-in-bytes", "surrogate", "newline", "nul", "private-use"],
)
def test_an_unusable_subject_is_401_invalid_subject(sub: str) -> None:
    with pytest.raises(Unauthorized) as refused:
        caller_id(event(sub=sub))
    assert (refused.value.status, refused.value.code) == (HTTPStatus.UNAUTHORIZED, "invalid_subject")


@pytest.mark.parametrize("sub", [None, "", "  ", 42, ["alice"], {"id": "alice"}])
def test_a_missing_or_non_string_subject_is_401(sub: Any) -> None:
    with pytest.raises(Unauthorized):
        caller_id(event(sub=sub))


@pytest.mark.parametrize("sub", ["auth0|5f7c8ec7c33c6c004bbafe82", "google-oauth2|1083", "张三", "x" * MAX_SUBJECT_BYTES])
def test_real_subjects_pass(sub: str) -> None:
    assert caller_id(event(sub=sub)) == sub


def test_unusable_optional_claims_are_dropped_not_stored() -> None:
    claims = verified_claims(
        event(
            sub="alice",
            name="Al\ud800ice\ue000",
            email="a" * 300 + "@example.com",
            email_verified="true",
            phone_number={"number": "13800138000"},
            phone_number_verified=True,
            iat="9" * 5000,
        )
    )
    assert (claims.name, claims.email, claims.phone, claims.issued_at) == ("Al ice", None, None, None)


def test_an_email_with_a_lone_surrogate_is_dropped() -> None:
    claims = verified_claims(event(sub="alice", email="al\udcffice@example.com", email_verified="true"))
    assert claims.email is None
