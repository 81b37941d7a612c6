"""``memmy_kb_client.desktop.bodies``: the desktop service's rule for request bodies, the cloud's rule."""

from __future__ import annotations

import pytest

from memmy_kb_client.desktop.bodies import MAX_JSON_DEPTH, Refusal, json_media_type, refusal


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
