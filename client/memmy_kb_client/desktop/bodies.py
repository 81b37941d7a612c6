"""What a request body must be before a desktop route reads it: a small JSON object in UTF-8, the cloud's
request guard's rule restated (the client may not import the core), checked in one pass without recursion
(docs/desktop.md, "The local service")."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

# No body of ours nests more than two levels; the cloud refuses deeper than this too.
MAX_JSON_DEPTH: Final = 32
_JSON_MEDIA_TYPE: Final = "application/json"
_UTF8: Final = ("utf-8", "utf8")


@dataclass(frozen=True)
class Refusal:
    """Why a body is refused: the status and the error code and message of the service's error shape."""

    status: int
    code: str
    message: str


class BodyRefused(Exception):
    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.message)
        self.refusal = refusal


_NOT_JSON: Final = Refusal(
    415, "unsupported_media_type", "request bodies must be JSON (application/json) in UTF-8"
)


def refusal(content_type: str | None, body: bytes) -> Refusal | None:
    """Why ``body`` (sent as ``content_type``) is refused, or None when it is an empty body or a JSON object."""
    if not body:
        return None
    try:
        parse_object(content_type, body)
    except BodyRefused as refused:
        return refused.refusal
    return None


def parse_object(content_type: str | None, body: bytes) -> dict[str, Any]:
    """The JSON object ``body`` holds; raises ``BodyRefused`` for anything else (never another exception)."""
    if not json_media_type(content_type):
        raise BodyRefused(_NOT_JSON)
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise BodyRefused(_invalid("the request body is not valid UTF-8")) from None
    if too_deep(text):
        raise BodyRefused(_invalid(f"the request body nests deeper than {MAX_JSON_DEPTH} levels"))
    try:
        document: Any = json.loads(text)
    except (ValueError, RecursionError):
        # ValueError covers malformed JSON and integers past Python's digit limit.
        raise BodyRefused(_invalid("the request body is not valid JSON")) from None
    if not isinstance(document, dict):
        raise BodyRefused(_invalid("the request body must be a JSON object"))
    return document


def json_media_type(content_type: str | None) -> bool:
    """Is ``content_type`` JSON in UTF-8, in any case? No type at all counts as JSON."""
    if content_type is None or not content_type.strip():
        return True
    media_type, _, parameters = content_type.partition(";")
    charset = "utf-8"
    for parameter in parameters.split(";"):
        name, _, value = parameter.partition("=")
        if name.strip().lower() == "charset":
            charset = value.strip().strip('"').lower()
    return media_type.strip().lower() == _JSON_MEDIA_TYPE and charset in _UTF8


def too_deep(text: str) -> bool:
    """Does ``text`` nest brackets deeper than ``MAX_JSON_DEPTH`` (brackets inside strings not counted)?

    One pass, stopping at the first bracket too deep, linear whatever the text holds: the cloud's rule
    (``memmy_kb.api.request_guard.too_deep``, which says why it is a loop), restated line for line.
    """
    depth = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                return True
        elif char in "]}":
            depth -= 1
    return False


def _invalid(message: str) -> Refusal:
    return Refusal(422, "validation_error", message)
