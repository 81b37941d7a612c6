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

    def identifiers(self) -> tuple[str | None, str | None]:
        """The verified email and phone in their normal forms (None: absent, or not one we can match)."""
        email = normalise_email(self.email) if self.email else None
        phone = normalise_phone(self.phone) if self.phone else None
        return email, phone


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


def mask_phone(e164: str) -> str:
    """``+8613800138000`` → ``138****8000``: the national number with all but its first 3 and last 4
    digits hidden (shorter numbers keep only their last 2)."""
    import phonenumbers

    try:
        national = phonenumbers.national_significant_number(phonenumbers.parse(e164, None))
    except phonenumbers.NumberParseException:
        national = e164.lstrip("+")
    if len(national) >= 9:
        return national[:3] + "*" * (len(national) - 7) + national[-4:]
    return "*" * max(len(national) - 2, 1) + national[-2:]


def mask_email(email: str) -> str:
    """``alice@example.com`` → ``a***@example.com``."""
    local, _, domain = email.rpartition("@")
    return f"{local[:1]}***@{domain}"


def masked_contact(phone: str | None, email: str | None) -> str | None:
    """What others see of a user's verified contact, so a display name alone cannot impersonate."""
    if phone:
        return mask_phone(phone)
    if email:
        return mask_email(email)
    return None
