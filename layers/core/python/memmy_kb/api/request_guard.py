"""What a request body must be before the routes' validation reads it: a small JSON object in UTF-8.

Powertools parses a body with ``json.loads`` and lets what that raises escape as a 500: JSON nested
thousands deep (``RecursionError``), an integer of thousands of digits (``ValueError``), bytes that are
not UTF-8. It also accepts a top-level array for an object body, and any ``Content-Type``. Every request
with a body is checked here first, so each of these is a clear 4xx in the usual error shape.

Media types are case-insensitive (RFC 9110): ``Application/JSON; Charset=UTF-8`` is JSON. Powertools
compares the type case-sensitively (``startswith("application/json")`` in its OpenAPI validation
middleware) and raises for any other spelling, so once a body passed here the resolver hands Powertools
``JSON_MEDIA_TYPE`` in its place.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any, Final

from memmy_kb.errors import InvalidInput, PayloadTooLarge, UnsupportedMediaType

# Our largest body is a recall query of 4,000 characters (up to 16 KB of UTF-8); leave room, refuse floods.
MAX_BODY_BYTES: Final = 64 * 1024
# No body of ours nests more than two levels; deeper JSON is refused before the parser recurses into it.
MAX_JSON_DEPTH: Final = 32
# The spelling Powertools' validation recognises, for a body this guard has accepted.
JSON_MEDIA_TYPE: Final = "application/json"
# Exactly what the routes' validation parses as JSON: a "+json" type would pass here and fail there.
_JSON_MEDIA_TYPE: Final = re.compile(r"^application/json$")


def check_json_body(
    body: str | None, *, base64_encoded: bool, content_type: str | None
) -> dict[str, Any] | None:
    """The body's JSON object; refuse one that is not a JSON object in UTF-8 (415, 413 or 422).

    An absent body passes (None).
    """
    if not body:
        return None
    _check_media_type(content_type)
    raw = _raw_bytes(body, base64_encoded)
    if len(raw) > MAX_BODY_BYTES:
        raise PayloadTooLarge(
            f"The request body may be at most {MAX_BODY_BYTES // 1024} KB.", code="body_too_large"
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _invalid("The request body is not valid UTF-8.") from None
    _check_depth(text)
    try:
        document: Any = json.loads(text)
    except (ValueError, RecursionError):
        # ValueError covers malformed JSON and integers past Python's digit limit.
        raise _invalid("The request body is not valid JSON.") from None
    if not isinstance(document, dict):
        raise InvalidInput(
            "The request body must be a JSON object.",
            details=[{"loc": ["body"], "msg": "must be a JSON object", "type": "dict_type"}],
        )
    return document


def _check_media_type(content_type: str | None) -> None:
    # A client that names no type is read as JSON; one that names another type (a browser's fetch sends
    # text/plain by default, a form sends urlencoded) is told so rather than half-understood.
    if content_type is None or not content_type.strip():
        return
    media_type, _, parameters = content_type.partition(";")
    charset = next(
        (value.strip().strip('"').lower() for name, _, value in (p.partition("=") for p in parameters.split(";"))
         if name.strip().lower() == "charset"),
        "utf-8",
    )
    if not _JSON_MEDIA_TYPE.match(media_type.strip().lower()) or charset not in ("utf-8", "utf8"):
        raise UnsupportedMediaType(
            "Request bodies must be JSON (Content-Type: application/json) in UTF-8.",
            code="unsupported_media_type",
        )


def _raw_bytes(body: str, base64_encoded: bool) -> bytes:
    if base64_encoded:
        try:
            return base64.b64decode(body, validate=True)
        except (binascii.Error, ValueError):
            raise _invalid("The request body is not valid base64.") from None
    try:
        return body.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: what undecodable bytes become on the way in
        raise _invalid("The request body is not valid UTF-8.") from None


def _check_depth(text: str) -> None:
    if too_deep(text):
        raise _invalid(f"The request body nests deeper than {MAX_JSON_DEPTH} levels.")


def too_deep(text: str) -> bool:
    """Do the brackets of ``text`` nest deeper than ``MAX_JSON_DEPTH`` (brackets inside strings not counted)?

    One pass over the text, stopping at the first bracket too deep: a string runs from a ``"`` to the next
    ``"`` that no backslash escapes, and inside it a backslash escapes the character after it, as
    ``json.loads`` reads them. Linear whatever the text holds (a regex that skipped strings was retried
    from every quote of an unterminated string and took 12 s on 64 KB of ``\\"``). A plain loop over the
    characters: jumping from one bracket, quote or backslash to the next with ``re`` or ``str.find`` is
    faster on long plain strings but slower where they are dense (on 64 KB: this loop at most 3.5 ms
    on any shape; jumping 0.14 ms on plain text, 8 to 35 ms on runs of quotes or brackets).
    The desktop service keeps the same rule (``memmy_kb_client.desktop.bodies.too_deep``).
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


def _invalid(message: str) -> InvalidInput:
    # The code malformed JSON always had (clients rely on it); the message says what is wrong.
    return InvalidInput(message)
