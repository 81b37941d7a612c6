"""Who a user is to others: the verified facts a login token carries, and the normal forms of the
identifiers a KB can be shared by (phones in E.164, emails lower-cased)."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

# Numbers written without a country code are read as mainland China numbers, where Memmy's users are.
DEFAULT_PHONE_REGION = "CN"
_EMAIL = re.compile(r"^[\x21-\x3f\x41-\x7e]+@[a-z0-9.-]+\.[a-z0-9-]+$")
MAX_EMAIL_CHARS = 254


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
    """E.164 form of ``raw`` (``+8613800138000``), or None when it is not a valid number.

    Letters (phonenumbers would read ``1-800-FLOWERS`` as digits) and extensions are refused, not
    dropped: a number that only matches after something was cut off is not the number that was verified.
    """
    import phonenumbers

    if any(ch.isalpha() for ch in raw):
        return None
    try:
        number = phonenumbers.parse(raw.strip(), region)
    except phonenumbers.NumberParseException:
        return None
    if number.extension or not phonenumbers.is_valid_number(number):
        return None
    formatted: str = phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)
    return formatted


def normalise_email(raw: str) -> str | None:
    """The form an email is stored and compared in, or None when it is not one we can match safely.

    The domain is compared after Unicode compatibility normalisation and case folding, in its ASCII
    (IDNA) form. The local part must be ASCII and is lower-cased: a non-ASCII local part is refused,
    since folding it would let a look-alike (``\u212aelvin@``, with a KELVIN SIGN) match ``kelvin@``, a
    different mailbox.
    """
    local, at, domain = raw.strip().rpartition("@")
    if not at or not local or not domain or not local.isascii():
        return None
    try:
        ascii_domain = unicodedata.normalize("NFKC", domain).casefold().encode("idna").decode("ascii")
    except UnicodeError:
        return None
    value = f"{local.lower()}@{ascii_domain}"
    return value if len(value) <= MAX_EMAIL_CHARS and _EMAIL.match(value) else None
