"""Who is calling: the verified ``sub`` of the JWT the HTTP API's authorizer accepted, and nothing else.

API Gateway passes JWT claims to the function as strings (``"true"``, not ``true``), so the verified
flags are read in both forms. Routes receive the caller through Powertools ``Depends`` on
``current_caller_id`` or ``current_claims`` (``memmy_kb.api.injected``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# At run time: Powertools hands the request to a provider whose parameter is annotated with this class.
from aws_lambda_powertools.event_handler.request import Request

from memmy_kb.domain.directory import VerifiedClaims
from memmy_kb.domain.display import hidden_characters, shown
from memmy_kb.errors import Unauthorized


def _claims(event: Mapping[str, Any]) -> Mapping[str, Any]:
    context = event.get("requestContext") or {}
    jwt = (context.get("authorizer") or {}).get("jwt") or {}
    claims: Mapping[str, Any] = jwt.get("claims") or {}
    return claims


MAX_DISPLAY_NAME = 100
# A user id is part of DynamoDB keys (``USER#<sub>`` is also GSI1's sort key, at most 1,024 bytes) and of
# paths; real login providers' subjects are far shorter than this.
MAX_SUBJECT_BYTES = 255
# RFC 5321 caps an address at 254 characters; E.164 numbers have at most 15 digits (allow formatting).
MAX_EMAIL_CHARS = 254
MAX_PHONE_CHARS = 32


def _clean_display_name(value: Any) -> str | None:
    """The ``name`` claim as others will see it (``memmy_kb.domain.display.shown``), capped; None if empty.

    Login providers verify emails and phones, not names, and a name is shown to people a KB is shared
    with; a bidi override or a newline in it must not let one user pose as another.
    """
    if not isinstance(value, str):
        return None
    return shown(value, max_chars=MAX_DISPLAY_NAME) or None


def _epoch(value: Any) -> int | None:
    try:
        return int(value) if value is not None and not isinstance(value, bool) else None
    except (TypeError, ValueError):
        return None


def _is_true(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def _usable_text(value: Any, max_chars: int) -> str | None:
    """An optional claim as text we can store, or None: a non-string, blank, too long or not UTF-8."""
    if not isinstance(value, str) or not value.strip() or len(value) > max_chars:
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return value


def caller_id(event: Mapping[str, Any]) -> str:
    """The caller's user id; a request without a usable verified ``sub`` never reaches the domain (401)."""
    sub = _claims(event).get("sub")
    if not isinstance(sub, str) or not sub.strip():
        raise Unauthorized("The request carries no verified user.")
    if hidden_characters(sub) or (
        len(sub.encode("utf-8", errors="replace")) > MAX_SUBJECT_BYTES
    ):
        raise Unauthorized("The login token's subject cannot be used as a Memmy user id.", code="invalid_subject")
    return sub


def verified_claims(event: Mapping[str, Any]) -> VerifiedClaims:
    """The caller's directory facts, keeping email and phone only when the login provider verified them."""
    claims = _claims(event)
    email = claims.get("email") if _is_true(claims.get("email_verified")) else None
    phone = claims.get("phone_number") if _is_true(claims.get("phone_number_verified")) else None
    return VerifiedClaims(
        user_id=caller_id(event),
        name=_clean_display_name(claims.get("name")),
        issued_at=_epoch(claims.get("iat")),
        email=_usable_text(email, MAX_EMAIL_CHARS),
        phone=_usable_text(phone, MAX_PHONE_CHARS),
    )


def current_caller_id(request: Request) -> str:
    """The ``Depends`` provider of a route's caller: the current request's verified user id (401 without)."""
    return caller_id(request.resolved_event.raw_event)


def current_claims(request: Request) -> VerifiedClaims:
    """The ``Depends`` provider of the caller's verified directory facts (``PUT /me``, creating a KB)."""
    return verified_claims(request.resolved_event.raw_event)
