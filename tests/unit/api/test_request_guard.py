"""``memmy_kb.api.request_guard``: what a request body must be before a route's validation reads it."""

from __future__ import annotations

import base64
from http import HTTPStatus

import pytest

from memmy_kb.api.request_guard import MAX_BODY_BYTES, MAX_JSON_DEPTH, check_json_body, too_deep
from memmy_kb.errors import DomainError
from tests.support.hostile_bodies import SHAPES
from tests.support.linear_time import assert_linear_time

OBJECT = '{"name": "产品资料"}'


def refusal(body: str, *, content_type: str | None = "application/json", b64: bool = False) -> tuple[int, str]:
    with pytest.raises(DomainError) as refused:
        check_json_body(body, base64_encoded=b64, content_type=content_type)
    return int(refused.value.status), refused.value.code


@pytest.mark.parametrize(
    "content_type",
    [None, "", "application/json", "application/json; charset=utf-8", "Application/JSON",
     "APPLICATION/JSON; Charset=UTF-8", 'application/Json;CHARSET="Utf8"'],
)
def test_a_json_object_passes(content_type: str | None) -> None:
    check_json_body(OBJECT, base64_encoded=False, content_type=content_type)


def test_no_body_passes_whatever_the_type() -> None:
    check_json_body(None, base64_encoded=False, content_type="text/plain")
    check_json_body("", base64_encoded=False, content_type="text/plain")


@pytest.mark.parametrize(
    "content_type",
    ["text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
     "application/json; charset=latin-1", "application/jsonx", "application/merge-patch+json",
     "Text/Plain", "Application/JSON; Charset=Latin-1", "Application/Merge-Patch+JSON"],
)
def test_another_content_type_is_415(content_type: str) -> None:
    assert refusal(OBJECT, content_type=content_type) == (HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type")


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ("[" * 100_000 + "]" * 100_000, "body_too_large"),
        ('{"name": "' + "x" * MAX_BODY_BYTES + '"}', "body_too_large"),
    ],
)
def test_a_flood_is_413(body: str, code: str) -> None:
    assert refusal(body) == (HTTPStatus.REQUEST_ENTITY_TOO_LARGE, code)


@pytest.mark.parametrize(
    "body",
    [
        '{"a": ' + "[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1) + "}",
        '{"limit": ' + "9" * 5000 + "}",  # past Python's integer digit limit: json.loads raises ValueError
        '{"name": "x"',
        "{name: x}",
        '{"name": NaN} trailing',
    ],
    ids=["too-deep", "huge-integer", "truncated", "not-json", "trailing"],
)
def test_malformed_json_is_422(body: str) -> None:
    assert refusal(body) == (HTTPStatus.UNPROCESSABLE_ENTITY, "validation_error")


def test_brackets_inside_strings_do_not_count_as_depth() -> None:
    check_json_body('{"name": "' + "[{" * 1000 + '\\"]"}', base64_encoded=False, content_type=None)


@pytest.mark.parametrize(
    ("body", "b64"),
    [
        (base64.b64encode(b'{"name": "\xff\xfe"}').decode(), True),
        ('{"name": "\udcff"}', False),  # a lone surrogate: what undecodable bytes turn into on the way in
        ("not base64!", True),
    ],
    ids=["invalid-utf8-bytes", "lone-surrogate", "bad-base64"],
)
def test_bytes_that_are_not_utf8_are_422(body: str, b64: bool) -> None:
    assert refusal(body, b64=b64) == (HTTPStatus.UNPROCESSABLE_ENTITY, "validation_error")


@pytest.mark.parametrize("body", ['[{"name": "x"}]', '"x"', "42", "null", "true"])
def test_a_top_level_value_other_than_an_object_is_422(body: str) -> None:
    assert refusal(body) == (HTTPStatus.UNPROCESSABLE_ENTITY, "validation_error")


def test_a_base64_body_of_a_json_object_passes() -> None:
    check_json_body(base64.b64encode(OBJECT.encode()).decode(), base64_encoded=True, content_type=None)


def _answer(body: str) -> object:
    try:
        return check_json_body(body, base64_encoded=False, content_type="application/json")
    except DomainError as refused:
        return (int(refused.status), refused.code)


@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_hostile_body_of_64_kb_is_answered_in_linear_time(shape: str) -> None:
    assert_linear_time(_answer, SHAPES[shape], large=MAX_BODY_BYTES)


@pytest.mark.parametrize(
    ("shape", "answer"),
    [
        ("unterminated escaped quotes", (HTTPStatus.UNPROCESSABLE_ENTITY, "validation_error")),
        ("a run of backslashes, unterminated", (HTTPStatus.UNPROCESSABLE_ENTITY, "validation_error")),
        ("bare \\u escapes", (HTTPStatus.UNPROCESSABLE_ENTITY, "validation_error")),
        ("deep brackets", (HTTPStatus.UNPROCESSABLE_ENTITY, "validation_error")),
        ("escaped quotes, closed", None),
        ("a run of escaped backslashes, closed", None),
        ("brackets inside a string", None),
    ],
)
def test_a_hostile_body_of_64_kb_gets_the_documented_answer(shape: str, answer: object) -> None:
    result = _answer(SHAPES[shape](MAX_BODY_BYTES))
    assert result == answer if answer is not None else isinstance(result, dict)


@pytest.mark.parametrize(
    ("text", "deep"),
    [
        ("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH, False),
        ("[" * (MAX_JSON_DEPTH + 1), True),
        ('{"a": "' + "[" * 100 + '"}', False),
        ('{"a": "\\"' + "[" * 100 + '"}', False),  # an escaped quote does not end the string
        ('{"a": "\\\\"' + "[" * 100, True),  # an escaped backslash does not escape the quote after it
        ('"\\' + "[" * 100, False),  # a string cut short: what follows it is inside it
        ("]" * 100 + "[" * (MAX_JSON_DEPTH + 1), False),  # counts as it goes, as the rule always has
    ],
)
def test_too_deep_counts_brackets_outside_strings_only(text: str, deep: bool) -> None:
    assert too_deep(text) is deep
