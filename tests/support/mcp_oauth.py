"""A person at the dev identity provider's pages, for an MCP client's authorization URL: a browser that
opens the URL, reads the sign-in form (its hidden fields and form token), signs in, then answers the
consent page, and hands back where the provider finally redirects (``code`` or ``error``, ``state``,
``iss``). Only loopback URLs are opened."""

from __future__ import annotations

import base64
import hashlib
import secrets
from html.parser import HTMLParser
from urllib.parse import parse_qsl, urljoin, urlsplit

import httpx

LOOPBACK = ("127.0.0.1", "localhost", "::1")


class _Form(HTMLParser):
    """The first form of a page: its action and its hidden fields, in order, unescaped."""

    def __init__(self) -> None:
        super().__init__()
        self.action: str | None = None
        self.hidden: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "form" and self.action is None:
            self.action = found.get("action") or ""
        elif tag == "input" and found.get("type") == "hidden" and found.get("name"):
            self.hidden.append((str(found["name"]), found.get("value") or ""))


def read_form(page: str) -> tuple[str, list[tuple[str, str]]]:
    """The action and the hidden fields of the page's form; AssertionError when it has none."""
    form = _Form()
    form.feed(page)
    assert form.action is not None, f"no form on the page: {page[:300]}"
    return form.action, form.hidden


def _fields(pairs: list[tuple[str, str]]) -> dict[str, list[str]]:
    """Form fields for httpx, a repeated name keeping every value."""
    fields: dict[str, list[str]] = {}
    for key, value in pairs:
        fields.setdefault(key, []).append(value)
    return fields


def _loopback(url: str) -> str:
    assert urlsplit(url).hostname in LOOPBACK, f"tests open only loopback URLs, not {url}"
    return url


def sign_in_and_consent(
    authorization_url: str,
    user_id: str,
    *,
    decision: str = "allow",
    name: str | None = None,
    email: str | None = None,
    timeout: float = 10.0,
) -> str:
    """Open ``authorization_url``, sign in as ``user_id``, press ``decision`` ("allow" or "deny") on the
    consent page, and return the URL the provider redirects to. A desktop's sign-in (no consent page)
    returns its redirect at once; any other answer fails with the page's text."""
    typed = {
        "login_user_id": user_id,
        "login_name": name or "",
        "login_email": email or "",
        "login_phone": "",
    }
    with httpx.Client(timeout=timeout, follow_redirects=False) as browser:
        page = browser.get(_loopback(authorization_url))
        assert page.status_code == 200, f"the sign-in page answered {page.status_code}: {page.text[:300]}"
        action, hidden = read_form(page.text)
        target = _loopback(urljoin(str(page.url), action))
        consent = browser.post(target, data=_fields([*hidden, *typed.items()]))
        if consent.status_code in (302, 303):
            return consent.headers["location"]
        assert consent.status_code == 200, f"signing in answered {consent.status_code}: {consent.text[:300]}"
        action, hidden = read_form(consent.text)
        answer = browser.post(
            _loopback(urljoin(str(consent.url), action)), data=_fields([*hidden, ("decision", decision)])
        )
        assert answer.status_code in (302, 303), (
            f"the consent answered {answer.status_code}: {answer.text[:300]}"
        )
        return answer.headers["location"]


def pkce() -> tuple[str, str]:
    """A PKCE verifier and its S256 challenge."""
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def register(http: httpx.Client, **metadata: object) -> httpx.Response:
    """``POST /register`` with a native MCP client's metadata, ``metadata`` replacing or adding fields."""
    body = {
        "client_name": "Test Agent",
        "redirect_uris": ["http://127.0.0.1:33418/callback"],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        "application_type": "native",
    } | metadata
    return http.post("/register", json=body)


def redirect_params(url: str) -> dict[str, str]:
    """The query of a redirect, one value per name (AssertionError if a name repeats)."""
    pairs = parse_qsl(urlsplit(url).query, keep_blank_values=True)
    assert len({k for k, _ in pairs}) == len(pairs), f"a repeated parameter in {url}"
    return dict(pairs)
