"""``memmy_kb_client.desktop.bodies``: the desktop service's rule for request bodies, the cloud's rule."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memmy_kb.api import request_guard
from memmy_kb.errors import DomainError
from memmy_kb_client.desktop.bodies import MAX_JSON_DEPTH, Refusal, json_media_type, refusal, too_deep
from memmy_kb_client.desktop.handler import MAX_BODY_BYTES
from tests.support.hostile_bodies import SHAPES
from tests.support.linear_time import assert_linear_time


@pytest.mark.parametrize(
    "content_type",
    [None, "", "application/json", "Application/JSON", "APPLICATION/JSON; Charset=UTF-8", 'application/json;charset="UTF8"'],
)
def test_json_in_utf8_is_json_in_any_case(content_type: str | None) -> None:
    assert json_media_type(content_type)
    assert refusal(content_type, b'{"query": "q"}') is None


@pytest.mark.parametrize(
    "content_type",
    ["text/plain", "Text/Plain;charset=UTF-8", "application/json; charset=latin-1", "application/jsonx",
     "application/merge-patch+json", "multipart/form-data; boundary=x"],
)
def test_another_type_is_415(content_type: str) -> None:
    assert not json_media_type(content_type)
    assert refusal(content_type, b'{"query": "q"}') == Refusal(
        415, "unsupported_media_type", "request bodies must be JSON (application/json) in UTF-8"
    )


def test_an_empty_body_passes_whatever_the_type() -> None:
    assert refusal("text/plain", b"") is None


@pytest.mark.parametrize(
    "body",
    [
        b"[" * 30_000 + b"]" * 30_000,
        b'{"a": ' + b"[" * (MAX_JSON_DEPTH) + b"]" * MAX_JSON_DEPTH + b"}",
        b'{"a": "\xff"}',
        b"{not json",
        b'{"n": ' + b"9" * 5000 + b"}",
        b"[]",
        b'"text"',
    ],
)
def test_what_is_not_a_small_json_object_is_422(body: bytes) -> None:
    refused = refusal("application/json", body)
    assert refused is not None
    assert (refused.status, refused.code) == (422, "validation_error")


def test_nesting_up_to_the_limit_passes_and_brackets_in_strings_do_not_count() -> None:
    depth = MAX_JSON_DEPTH - 1
    assert refusal(None, b'{"a": ' + b"[" * depth + b"]" * depth + b"}") is None
    assert refusal(None, b'{"a": "' + b"[{" * 1000 + b'\\"]"}') is None


@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_hostile_body_of_64_kb_is_answered_in_linear_time(shape: str) -> None:
    make = SHAPES[shape]
    assert_linear_time(
        lambda body: refusal("application/json", body), lambda size: make(size).encode(), large=MAX_BODY_BYTES
    )


def _cloud_answer(body: str) -> tuple[int, str] | None:
    try:
        request_guard.check_json_body(body, base64_encoded=False, content_type="application/json")
    except DomainError as refused:
        return int(refused.status), refused.code
    return None


@pytest.mark.parametrize("size", [1024, 4096, MAX_BODY_BYTES])
@pytest.mark.parametrize("shape", list(SHAPES))
def test_the_desktop_answers_each_hostile_body_as_the_cloud_does(shape: str, size: int) -> None:
    body = SHAPES[shape](size)
    assert too_deep(body) is request_guard.too_deep(body)
    desktop = refusal("application/json", body.encode())
    assert (None if desktop is None else (desktop.status, desktop.code)) == _cloud_answer(body)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet='"\\[]{}a ', max_size=200))
def test_the_desktop_rule_is_the_clouds_on_any_text(text: str) -> None:
    assert too_deep(text) is request_guard.too_deep(text)


_JSON = st.recursive(
    st.none() | st.integers() | st.text(alphabet='"\\[]{}a\n', max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(alphabet='"\\[]{a', max_size=4), inner, max_size=3),
    max_leaves=60,
)


def _depth(value: object) -> int:
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    return 0


@settings(max_examples=300, deadline=None)
@given(_JSON, st.integers(min_value=0, max_value=MAX_JSON_DEPTH + 2))
def test_on_json_text_the_rule_counts_exactly_the_nesting(value: object, wrap: int) -> None:
    text = "[" * wrap + json.dumps(value) + "]" * wrap
    assert too_deep(text) is (wrap + _depth(value) > MAX_JSON_DEPTH)
