"""The browser's part of a sign-in: the cookie that ties the login provider's callback and the consent to
the browser that started the sign-in, and the consent form's one-time token.

The cookie ``__Host-memmy-oauth`` holds 32 random bytes; the sign-in under way keeps only its SHA-256
(``PendingAuthorization.browser``). The consent token is another 32 random bytes, stored by digest when
the person has signed in: a consent form is answered once, from the browser that asked.
"""

from __future__ import annotations

import hmac
import secrets

from memmy_kb.domain.mcp_auth.clients import digest

__all__ = ["COOKIE_NAME", "browser_cookie", "cleared_cookie", "digest", "new_secret", "same_browser"]

COOKIE_NAME = "__Host-memmy-oauth"
COOKIE_SECONDS = 600


def new_secret() -> str:
    return secrets.token_urlsafe(32)


def browser_cookie(value: str) -> str:
    """The ``Set-Cookie`` value: host-only, https only, not readable by script, sent on top-level GETs
    from other sites (the login provider's redirect) but not on their POSTs."""
    return f"{COOKIE_NAME}={value}; Max-Age={COOKIE_SECONDS}; Path=/; Secure; HttpOnly; SameSite=Lax"


def cleared_cookie() -> str:
    return f"{COOKIE_NAME}=; Max-Age=0; Path=/; Secure; HttpOnly; SameSite=Lax"


def same_browser(cookies: dict[str, str], browser: str) -> bool:
    """Whether the request's cookie is the one whose digest the sign-in keeps."""
    value = cookies.get(COOKIE_NAME)
    return bool(value) and hmac.compare_digest(digest(value or ""), browser)
