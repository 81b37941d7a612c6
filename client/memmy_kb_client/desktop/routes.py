"""The desktop service's own routes (``/control/*``, the page's assets, ``/open``, ``/proof``,
``/api/session``) and the request and reply every route speaks; the checks before any route are
``handler``'s (docs/desktop.md, "The local service")."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from memmy_kb_client.desktop import bodies, page
from memmy_kb_client.desktop.state import Access, DesktopState
from memmy_kb_client.home import paths, proof
from memmy_kb_client.home.credentials import CloudLogin

MAX_LOGIN_TOKEN_CHARS: Final = 16 * 1024


class Headers(Protocol):
    def get(self, name: str, /) -> str | None: ...


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    headers: Headers
    body: bytes
    query: str = ""
    session: page.Session | None = None

    def json_object(self) -> dict[str, Any] | None:
        """The body's JSON object ({} for none); None for anything else (``bodies`` says what it may be)."""
        if not self.body:
            return {}
        try:
            return bodies.parse_object(self.headers.get("Content-Type"), self.body)
        except bodies.BodyRefused:
            return None


@dataclass(frozen=True)
class Reply:
    status: int
    # JSON: the service's own (some have a ``TypedDict``: ``home.service_replies``) or a cloud error passed on.
    body: Mapping[str, object]
    headers: tuple[tuple[str, str], ...] = ()
    # Sent as is instead of ``body`` as JSON (the page's assets, a cloud answer passed on).
    raw: bytes | None = None
    content_type: str = "application/json; charset=utf-8"


def error_reply(status: int, code: str, message: str) -> Reply:
    return Reply(status, {"error": {"code": code, "message": message}})


@dataclass(frozen=True)
class Route:
    access: Access
    handler: Callable[[DesktopState, Request], Reply]


def _status(state: DesktopState, request: Request) -> Reply:
    return Reply(200, state.status())


def _login(state: DesktopState, request: Request) -> Reply:
    body = request.json_object()
    token = body.get("token") if body else None
    if (
        not isinstance(token, str)
        or not 0 < len(token) <= MAX_LOGIN_TOKEN_CHARS
        or not token.isascii()
        or not token.isprintable()
        or " " in token
    ):
        return error_reply(422, "validation_error", 'expected {"token": "<the cloud login token>"}')
    candidate = CloudLogin(state.cloud.base_url, token)
    if candidate.expired(state.config.clock()):
        return error_reply(422, "login_expired", "this login token has expired; get a new one")
    # Asked of the cloud before it is kept: a token it refuses would read "logged in" while every
    # command got 503 cloud_login_rejected. A cloud that cannot answer now does not stop a script.
    tried = state.cloud.call(token, "GET", "/knowledge-bases")
    if tried.status == 401:
        return error_reply(
            422,
            "login_rejected",
            f"the cloud at {state.cloud.base_url} refused this token (401): nothing was kept. A token of "
            "the local stack is signed with the key of its --data-dir: `memmy-local token USER --data-dir "
            "DIR`, with the DIR the stack was started with",
        )
    state.set_login(token)
    return Reply(200, state.status())


def _logout(state: DesktopState, request: Request) -> Reply:
    state.logout()
    return Reply(200, state.status())


def _rotate(state: DesktopState, request: Request) -> Reply:
    state.rotate_hook_token()
    return Reply(200, {"hook_token_file": os.path.join(state.state_dir, paths.HOOK_TOKEN_FILE)})


def _page_code(state: DesktopState, request: Request) -> Reply:
    code = state.sessions.new_code()
    return Reply(200, {"url": f"{state.url}/open?code={code}", "expires_in": int(page.CODE_TTL_SECONDS)})


def _proof(state: DesktopState, request: Request) -> Reply:
    """``GET /proof?for=control|hook&nonce=N``: the proof that this service holds that token (``proof``)."""
    from urllib.parse import parse_qs

    params = parse_qs(request.query)
    purpose, nonce = (params.get("for") or [""])[0], (params.get("nonce") or [""])[0]
    if purpose not in proof.PURPOSES or not proof.valid_nonce(nonce):
        return error_reply(422, "validation_error", "expected ?for=control|hook&nonce=<32 to 128 hex digits>")
    return Reply(200, {"proof": state.prove(purpose, nonce)})


# The page's assets: no framing, no inline script, no referrer (the /open URL carries a code).
PAGE_HEADERS: Final = (
    (
        "Content-Security-Policy",
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self' https: http://127.0.0.1:* http://localhost:*; "
        "frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
    ),
    ("X-Frame-Options", "DENY"),
    ("Referrer-Policy", "no-referrer"),
)


def _asset(state: DesktopState, request: Request) -> Reply:
    name, content_type = page.ASSETS[request.path]
    return Reply(200, {}, PAGE_HEADERS, raw=page.asset(name), content_type=content_type)


def _prefetch(request: Request) -> bool:
    """A browser fetching ahead of a navigation (a pasted link prerendered before Enter): it must not
    spend the one-time code that the navigation itself needs."""
    purpose = f"{request.headers.get('Sec-Purpose') or ''} {request.headers.get('Purpose') or ''}"
    return "prefetch" in purpose.lower()


def _open(state: DesktopState, request: Request) -> Reply:
    """``/open?code=...``: a one-time code becomes the session cookie, then on to the page. A browser that
    already holds a session (the link opened twice) goes on to the page; else a used or expired code is
    a page saying how to get a new link."""
    from urllib.parse import parse_qs

    params = parse_qs(request.query)
    code = (params.get("code") or [""])[0]
    asked = (params.get("lang") or [""])[0]
    location = f"/?lang={asked}" if asked in ("en", "zh") else "/"
    if _prefetch(request):
        return Reply(503, {}, (*PAGE_HEADERS, ("Retry-After", "0")), raw=b"", content_type="text/plain")
    redeemed = state.sessions.redeem(code) if code else None
    if redeemed is None:
        if state.sessions.find(page.cookie_value(request.headers.get("Cookie"), state.cookie_name)):
            return Reply(303, {}, (("Location", location),), raw=b"")
        return _link_refused(state, page.language(asked, request.headers.get("Accept-Language")))
    session_id, _ = redeemed
    cookie = page.session_cookie(state.cookie_name, session_id)
    return Reply(303, {}, (("Set-Cookie", cookie), ("Location", location)), raw=b"")


def _link_refused(state: DesktopState, lang: str) -> Reply:
    commands = state.commands()
    minutes = int(page.CODE_TTL_SECONDS // 60)
    if lang == "en":
        title = "This link was used already or has expired"
        sentences = [f"Each link to the knowledge-base page works once, within {minutes} minutes."]
        sentences.append(
            "For a new one, press Enter in the terminal where {stack} runs, or run {open}."
            if "stack" in commands
            else "For a new one, run {open}."
        )
    else:
        title = "此链接已使用或已过期"
        sentences = [f"知识库页面的每个链接只能使用一次，并且要在 {minutes} 分钟内打开。"]
        sentences.append(
            "要获取新链接，请在运行 {stack} 的终端里按回车键，或运行 {open}。"
            if "stack" in commands
            else "要获取新链接，请运行 {open}。"
        )
    body = page.notice_html(lang, title, sentences, commands)
    return Reply(403, {}, PAGE_HEADERS, raw=body, content_type="text/html; charset=utf-8")


def _session(state: DesktopState, request: Request) -> Reply:
    assert request.session is not None
    login = state.current_login()
    status = state.status()["login"]
    body: dict[str, Any] = {"csrf": request.session.csrf, "login": status["state"], "commands": state.commands()}
    if login is not None:
        profile = login.profile()  # the ID token's claims when there is one
        body["user"] = {
            "user_id": profile.get("sub"),
            "name": profile.get("name"),
            "email": profile.get("email"),
        }
    return Reply(200, body)


ROUTES: Final[dict[tuple[str, str], Route]] = {
    ("GET", "/control/status"): Route(Access.CONTROL, _status),
    ("POST", "/control/login"): Route(Access.CONTROL, _login),
    ("POST", "/control/logout"): Route(Access.CONTROL, _logout),
    ("POST", "/control/rotate-hook-token"): Route(Access.CONTROL, _rotate),
    ("POST", "/control/page-code"): Route(Access.CONTROL, _page_code),
    **{("GET", path): Route(Access.PUBLIC, _asset) for path in page.ASSETS},
    ("GET", "/open"): Route(Access.PUBLIC, _open),
    ("GET", proof.PATH): Route(Access.PUBLIC, _proof),
    ("GET", "/api/session"): Route(Access.SESSION, _session),
}
