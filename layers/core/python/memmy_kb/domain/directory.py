"""Who a user is to others: the verified facts a login token carries, and the normal forms of the
identifiers a KB can be shared by (phones in E.164, emails lower-cased)."""

from __future__ import annotations

import re
from dataclasses import dataclass

# Numbers written without a country code are read as mainland China numbers, where Memmy's users are.
DEFAULT_PHONE_REGION = "CN"
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


@dataclass(frozen=True)
class VerifiedClaims:
    """What the login provider vouched for (``memmy_kb.api.identity`` reads them off the request)."""

    user_id: str
    name: str | None
    email: str | None
    phone: str | None
    # When the login provider issued the token (``iat``): how fresh its email/phone verification is.
    issued_at: int | None = None


def normalise_phone(raw: str, region: str = DEFAULT_PHONE_REGION) -> str | None:
    """E.164 form of ``raw`` (``+8613800138000``), or None when it is not a valid number."""
    import phonenumbers

    try:
        number = phonenumbers.parse(raw.strip(), region)
    except phonenumbers.NumberParseException:
        return None
    if not phonenumbers.is_valid_number(number):
        return None
    formatted: str = phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)
    return formatted


def normalise_email(raw: str) -> str | None:
    """Lower-cased, trimmed email, or None when it does not look like one."""
    value = raw.strip().lower()
    return value if _EMAIL.match(value) else None
