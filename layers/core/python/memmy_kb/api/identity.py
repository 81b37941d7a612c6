"""Who is calling: the verified ``sub`` of the JWT the HTTP API's authorizer accepted, and nothing else.

API Gateway passes JWT claims to the function as strings (``"true"``, not ``true``), so the verified
flags are read in both forms.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from typing import Any

from memmy_kb.domain.directory import VerifiedClaims
from memmy_kb.errors import Unauthorized


def _claims(event: Mapping[str, Any]) -> Mapping[str, Any]:
    context = event.get("requestContext") or {}
    jwt = (context.get("authorizer") or {}).get("jwt") or {}
    claims: Mapping[str, Any] = jwt.get("claims") or {}
    return claims


MAX_DISPLAY_NAME = 100


def _clean_display_name(value: Any) -> str | None:
    """The ``name`` claim as others will see it: no control or invisible characters, one line, capped.

    Login providers verify emails and phones, not names, and a name is shown to people a KB is shared
    with; a bidi override or a newline in it must not let one user pose as another.
    """
    if not isinstance(value, str):
        return None
    visible = "".join(ch if unicodedata.category(ch) not in ("Cc", "Cf", "Zl", "Zp") else " " for ch in value)
    collapsed = " ".join(visible.split())[:MAX_DISPLAY_NAME]
    return collapsed or None


def _epoch(value: Any) -> int | None:
    try:
        return int(value) if value is not None and not isinstance(value, bool) else None
    except (TypeError, ValueError):
        return None


def _is_true(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def caller_id(event: Mapping[str, Any]) -> str:
    """The caller's user id; a request without a verified ``sub`` never reaches the domain."""
    sub = _claims(event).get("sub")
    if not isinstance(sub, str) or not sub.strip():
        raise Unauthorized("The request carries no verified user.")
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
        email=email if isinstance(email, str) and email.strip() else None,
        phone=phone if isinstance(phone, str) and phone.strip() else None,
    )
