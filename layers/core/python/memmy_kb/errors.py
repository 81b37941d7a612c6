"""Domain errors: every refusal the service answers, each with its HTTP status and snake_case code.

This is the one home of every ``DomainError`` subclass. The domain raises them (translating what the
ports report, ``memmy_kb.domain.storage`` and ``memmy_kb.domain.engine``); the HTTP edge turns
them into the API's error shape in one place (``memmy_kb.api.resolver``). Nothing below the domain
raises these, and nothing here knows about HTTP beyond the status each refusal maps to
(docs/architecture.md, "Errors").
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


class TooManyRequests(DomainError):
    """A rate limit: ``retry_after`` seconds until the caller may try again (the ``Retry-After`` header)."""

    status = HTTPStatus.TOO_MANY_REQUESTS
    code = "rate_limited"

    def __init__(self, message: str, *, retry_after: int, code: str | None = None) -> None:
        super().__init__(message, code=code, details={"retry_after_seconds": retry_after})
        self.retry_after = retry_after


class UpstreamUnavailable(DomainError):
    """MemOS failed or is out of capacity; nothing was stored on our side."""

    status = HTTPStatus.SERVICE_UNAVAILABLE
    code = "memos_unavailable"


class RecallUnavailable(DomainError):
    """MemOS failed or did not answer within the recall budget, or the fleet's MemOS budget is spent
    (``retry_after``: seconds until it has a search again, the ``Retry-After`` header): no excerpts."""

    status = HTTPStatus.SERVICE_UNAVAILABLE
    code = "recall_unavailable"

    def __init__(self, message: str, *, retry_after: int | None = None) -> None:
        super().__init__(message, details=None if retry_after is None else {"retry_after_seconds": retry_after})
        self.retry_after = retry_after


class LoginNotConfigured(DomainError):
    """The function's environment lacks the login settings the template gives it (a broken deploy)."""

    status = HTTPStatus.SERVICE_UNAVAILABLE
    code = "login_not_configured"


# -- the refusals several domain modules share ------------------------------------------------------


def kb_not_found() -> NotFound:
    return NotFound("Knowledge base not found.", code="kb_not_found")


def team_not_found() -> NotFound:
    """A team the caller is not in: the same answer as a team that does not exist (docs/teams.md)."""
    return NotFound("Team not found.", code="team_not_found")


def folder_not_found() -> NotFound:
    return NotFound("Folder not found.", code="folder_not_found")


def file_not_found() -> NotFound:
    return NotFound("File not found.", code="file_not_found")


def owner_only(message: str = "Only the knowledge base's owner may do this.") -> Forbidden:
    return Forbidden(message, code="owner_only")


def idempotency_key_reused() -> InvalidInput:
    return InvalidInput(
        "This Idempotency-Key was already used with a different request.", code="idempotency_key_reused"
    )


def request_in_progress() -> Conflict:
    return Conflict("A request with this Idempotency-Key is still in progress.", code="request_in_progress")
