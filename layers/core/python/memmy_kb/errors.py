"""Domain errors: each carries the HTTP status and the snake_case code of the API's error shape.

The HTTP layer maps them in one place (``memmy_kb.http``); lower layers raise them and never build
responses themselves.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any


class DomainError(Exception):
    status: HTTPStatus = HTTPStatus.BAD_REQUEST
    code: str = "bad_request"

    def __init__(self, message: str, *, code: str | None = None, details: Any = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.details = details


class NotFound(DomainError):
    """Also what a caller gets for a KB it may not see: existence is never confirmed to strangers."""

    status = HTTPStatus.NOT_FOUND
    code = "not_found"


class Forbidden(DomainError):
    status = HTTPStatus.FORBIDDEN
    code = "forbidden"


class Conflict(DomainError):
    status = HTTPStatus.CONFLICT
    code = "conflict"


class InvalidInput(DomainError):
    status = HTTPStatus.UNPROCESSABLE_ENTITY
    code = "validation_error"


class Unauthorized(DomainError):
    status = HTTPStatus.UNAUTHORIZED
    code = "unauthorized"


class PayloadTooLarge(DomainError):
    status = HTTPStatus.REQUEST_ENTITY_TOO_LARGE
    code = "file_too_large"


class UnsupportedMediaType(DomainError):
    status = HTTPStatus.UNSUPPORTED_MEDIA_TYPE
    code = "unsupported_file_type"


class UpstreamUnavailable(DomainError):
    """MemOS failed or is out of capacity; nothing was stored on our side."""

    status = HTTPStatus.SERVICE_UNAVAILABLE
    code = "memos_unavailable"


def kb_not_found() -> NotFound:
    return NotFound("Knowledge base not found.", code="kb_not_found")
