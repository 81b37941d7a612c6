"""The dev identity provider's pages: plain server-rendered HTML, no script.

The sign-in form (``/authorize`` and, after the code, ``/device``) has the textboxes "User ID", "Name",
"Email" and "Phone" and the button "Sign in"; the device page has the textbox "Code"; after an MCP
client's sign-in, the consent page names the client and has the buttons "Allow" and "Deny". Every form
carries the parameters it was made for plus ``form_token``, an HMAC of them under the provider's secret
(the consent form's under another secret, so that no sign-in form passes for it): a form posted from
anywhere else, or with a parameter changed, is refused. What is typed is checked here (``read_sign_in``):
a user id is required, a phone must be E.164 and an email must look like one.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from html import escape

from .records import Identity

# The sign-in fields' names; every other posted field is a parameter of the request being answered.
USER_FIELDS = {
    "login_user_id": "User ID",
    "login_name": "Name",
    "login_email": "Email",
    "login_phone": "Phone",
}
FORM_TOKEN = "form_token"  # noqa: S105 - a field name
DECISION = "decision"  # the consent page's buttons: "allow" or "deny"
# Who signed in, carried by the consent form (bound by its form token) to the answer.
CONSENT_FIELDS = ("consent_user_id", "consent_name", "consent_email", "consent_phone")
MCP_PERMISSION = (
    "search and read your knowledge bases, read only; it cannot change, share or delete anything."
)
E164 = re.compile(r"\+[1-9][0-9]{1,14}")
# A dot inside the domain, found by one lookahead: "[^@\s]+\.[^@\s]+" after the "@" tried every dot of
# a domain of dots to its end (0.9 s for 16 KB).
EMAIL = re.compile(r"[^@\s]+@(?=[^@\s]+\.[^@\s])[^@\s]+")
MAX_FIELD_LENGTH = 200
# Pages hold no script; forms post to this server, whose answer may redirect to a loopback callback.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; style-src 'unsafe-inline'; form-action 'self' http://127.0.0.1:*; "
    "frame-ancestors 'none'; base-uri 'none'"
)
PAGE_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
}
_STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:28rem;margin:3rem auto;padding:0 1rem}"
    "label{display:block;margin-top:.8rem}input{width:100%;padding:.4rem;box-sizing:border-box}"
    "button{margin-top:1.2rem;padding:.5rem 1.2rem}.error{color:#a00}.note{color:#555;font-size:.9rem}"
)


def headers_redirecting_to(origin: str) -> dict[str, str]:
    """``PAGE_HEADERS`` for a page whose form's answer redirects to ``origin`` (an MCP client's redirect
    URI, checked): browsers hold a form's redirect to the Content-Security-Policy's ``form-action``."""
    policy = CONTENT_SECURITY_POLICY.replace("http://127.0.0.1:*", f"http://127.0.0.1:* {origin}")
    return PAGE_HEADERS | {"Content-Security-Policy": policy}


@dataclass(frozen=True)
class SignIn:
    """What was typed on the sign-in form; ``None`` for a field left empty."""

    user_id: str
    name: str | None
    email: str | None
    phone: str | None


def form_token(secret: bytes, params: Iterable[tuple[str, str]]) -> str:
    """The HMAC that binds a form to the parameters it was made for (their order does not matter)."""
    canonical = "\n".join(f"{key}={value}" for key, value in sorted(params))
    return hmac.new(secret, canonical.encode(), hashlib.sha256).hexdigest()


def request_params(form: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The posted fields that are parameters of the original request (not typed, not the form token, not
    the button pressed)."""
    return [(k, v) for k, v in form if k not in USER_FIELDS and k not in (FORM_TOKEN, DECISION)]


def original_params(form: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """``request_params`` without the consent form's own fields: a request cannot bring them along."""
    return [(k, v) for k, v in request_params(form) if k not in CONSENT_FIELDS]


def consent_params(identity: Identity) -> list[tuple[str, str]]:
    """Who signed in, as the consent form carries them (empty fields left out)."""
    values = (identity.user_id, identity.name, identity.email, identity.phone)
    return [(field, value) for field, value in zip(CONSENT_FIELDS, values, strict=True) if value]


def consented_identity(form: Mapping[str, str], auth_time: int) -> Identity:
    """Who signed in, from a consent form whose token was checked; ``auth_time``: when they allowed."""
    name, email, phone = (form.get(field) or None for field in CONSENT_FIELDS[1:])
    return Identity(form.get("consent_user_id", ""), name, email, phone, auth_time)


def form_is_ours(secret: bytes, form: Iterable[tuple[str, str]], token: str | None) -> bool:
    expected = form_token(secret, request_params(form))
    return token is not None and hmac.compare_digest(expected, token)


def read_sign_in(form: Mapping[str, str]) -> tuple[SignIn | None, list[str]]:
    """The typed identity, or the reasons it is refused (one sentence each)."""
    values = {key: (form.get(key) or "").strip() for key in USER_FIELDS}
    errors = [f"{USER_FIELDS[k]} is too long." for k, v in values.items() if len(v) > MAX_FIELD_LENGTH]
    if not values["login_user_id"]:
        errors.append("User ID is required.")
    if values["login_phone"] and not E164.fullmatch(values["login_phone"]):
        errors.append("Phone must be in E.164 form, like +8613800138000.")
    if values["login_email"] and not EMAIL.fullmatch(values["login_email"]):
        errors.append("Email must look like name@example.com.")
    if errors:
        return None, errors
    return (
        SignIn(
            user_id=values["login_user_id"],
            name=values["login_name"] or None,
            email=values["login_email"] or None,
            phone=values["login_phone"] or None,
        ),
        [],
    )


def _page(title: str, body: str) -> str:
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head>"
        f"<body><h1>{escape(title)}</h1>{body}</body></html>"
    )


def _hidden(params: Iterable[tuple[str, str]]) -> str:
    return "".join(f'<input type="hidden" name="{escape(k)}" value="{escape(v)}">' for k, v in params)


def _errors(errors: list[str]) -> str:
    if not errors:
        return ""
    items = "".join(f"<li>{escape(e)}</li>" for e in errors)
    return f'<ul class="error" role="alert">{items}</ul>'


def sign_in_page(
    action: str,
    params: list[tuple[str, str]],
    secret: bytes,
    *,
    values: Mapping[str, str] | None = None,
    errors: list[str] | None = None,
    intro: str = "",
) -> str:
    """The sign-in form posting ``params`` (hidden) and the typed fields back to ``action``."""
    values = values or {}
    fields = ""
    for key, label in USER_FIELDS.items():
        kind = {"login_email": "email", "login_phone": "tel"}.get(key, "text")
        required = " required" if key == "login_user_id" else ""
        fields += (
            f'<label for="{key}">{label}</label>'
            f'<input id="{key}" name="{key}" type="{kind}" value="{escape(values.get(key, ""))}"'
            f' maxlength="{MAX_FIELD_LENGTH}"{required}>'
        )
    body = (
        '<p class="note">Memmy local development sign-in: whatever you type is asserted as verified.</p>'
        f"{intro}{_errors(errors or [])}"
        f'<form method="post" action="{escape(action)}">{_hidden(params)}'
        f'<input type="hidden" name="{FORM_TOKEN}" value="{form_token(secret, params)}">'
        f'{fields}<button type="submit">Sign in</button></form>'
    )
    return _page("Sign in to Memmy (local)", body)


def device_code_page(action: str, secret: bytes, *, code: str = "", errors: list[str] | None = None) -> str:
    """The device page: the textbox "Code" (pre-filled from ``verification_uri_complete``)."""
    body = (
        "<p>Enter the code your device shows.</p>"
        f"{_errors(errors or [])}"
        f'<form method="post" action="{escape(action)}">'
        f'<input type="hidden" name="{FORM_TOKEN}" value="{form_token(secret, [])}">'
        '<label for="user_code">Code</label>'
        f'<input id="user_code" name="user_code" type="text" value="{escape(code)}" required'
        ' autocomplete="off" autocapitalize="characters">'
        '<button type="submit">Continue</button></form>'
    )
    return _page("Connect a device to Memmy (local)", body)


def consent_page(
    action: str,
    params: list[tuple[str, str]],
    secret: bytes,
    *,
    user_id: str,
    client_name: str | None,
    redirect_host: str,
) -> str:
    """The consent form for an MCP client: who it is (its name and where it sends the answer), what it may
    do, and the buttons "Allow" and "Deny". ``params`` include who signed in (``CONSENT_FIELDS``)."""
    who = (
        f"<strong>{escape(client_name)}</strong> ({escape(redirect_host)})"
        if client_name
        else (f"An application at <strong>{escape(redirect_host)}</strong>")
    )
    body = (
        f'<p class="note">Signed in as {escape(user_id)}.</p>'
        f"<p>{who} asks to connect to your Memmy account.</p>"
        f"<p>If you allow it, it may {escape(MCP_PERMISSION)}</p>"
        f'<form method="post" action="{escape(action)}">{_hidden(params)}'
        f'<input type="hidden" name="{FORM_TOKEN}" value="{form_token(secret, params)}">'
        f'<button type="submit" name="{DECISION}" value="allow">Allow</button> '
        f'<button type="submit" name="{DECISION}" value="deny">Deny</button></form>'
    )
    return _page("Allow access to Memmy (local)?", body)


def message_page(title: str, text: str) -> str:
    """A page that says one thing (an error, or that the device may go on)."""
    return _page(title, f"<p>{escape(text)}</p>")
