"""Normal forms of the identifiers a KB can be shared by: phones in E.164, emails lower-cased."""

from __future__ import annotations

import re

# Numbers written without a country code are read as mainland China numbers, where Memmy's users are.
DEFAULT_PHONE_REGION = "CN"
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


def normalise_phone(raw: str, region: str = DEFAULT_PHONE_REGION) -> str | None:
    """E.164 form of ``raw`` (``+8613800138000``), or None when it is not a valid number."""
    import phonenumbers

    try:
        number = phonenumbers.parse(raw.strip(), region)
    except phonenumbers.NumberParseException:
        return None
    if not phonenumbers.is_valid_number(number):
        return None
    return phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)


def normalise_email(raw: str) -> str | None:
    """Lower-cased, trimmed email, or None when it does not look like one."""
    value = raw.strip().lower()
    return value if _EMAIL.match(value) else None
