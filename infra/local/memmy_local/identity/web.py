"""The dev identity provider's Flask answers: an HTML page with the pages' headers, a JSON error, and
what Authlib's Flask server answered."""

from __future__ import annotations

import json

from flask import Response

from . import pages


def html(body: str, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(body, status, headers or pages.PAGE_HEADERS, content_type="text/html; charset=utf-8")


def json_error(error: str, description: str, status: int) -> Response:
    body = {"error": error, "error_description": description}
    return Response(json.dumps(body), status, {"Cache-Control": "no-store"}, content_type="application/json")


def response(answer: object) -> Response:
    """What Authlib's Flask server answered (it has no type information): a Flask response."""
    assert isinstance(answer, Response)
    return answer
