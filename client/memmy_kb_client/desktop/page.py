"""The knowledge-base page's side of the local service: its sessions (from a one-time code, 10 minutes,
or a finished sign-in), the cloud routes it may reach through the service, and its assets
(docs/desktop.md, "The knowledge-base page")."""

from __future__ import annotations

import html
import re
import secrets
import threading
import time
from dataclasses import dataclass
from importlib import resources
from typing import Final
from urllib.parse import parse_qsl, quote, unquote, urlencode

# Long enough to open the link the local stack prints after a slow first start (an install, the demo's
# seeding) or after reading the banner; short enough that a link left in a terminal's scrollback soon
# stops working. The code works once either way (docs/desktop.md, "The knowledge-base page").
CODE_TTL_SECONDS: Final = 600.0
SESSION_IDLE_SECONDS: Final = 12 * 3600.0
MAX_SESSIONS: Final = 32
MAX_CODES: Final = 16
CSRF_HEADER: Final = "X-CSRF-Token"
API_PREFIX: Final = "/api"

# The cloud routes the page may reach, as (method, path under /api); ``{}`` is one id segment.
CLOUD_ROUTES: Final = tuple(
    (method, tuple(template.split("/")[1:]))
    for method, template in (
        ("PUT", "/me"),
        ("GET", "/knowledge-bases"),
        ("POST", "/knowledge-bases"),
        ("GET", "/knowledge-bases/{}"),
        ("PATCH", "/knowledge-bases/{}"),
        ("DELETE", "/knowledge-bases/{}"),
        ("PUT", "/knowledge-bases/{}/recall"),
        ("GET", "/knowledge-bases/{}/members"),
        ("POST", "/knowledge-bases/{}/members"),
        ("DELETE", "/knowledge-bases/{}/members/{}"),
        ("POST", "/knowledge-bases/{}/uploads"),
        ("DELETE", "/knowledge-bases/{}/uploads/{}"),
        ("GET", "/knowledge-bases/{}/files"),
        ("GET", "/knowledge-bases/{}/files/{}"),
        ("POST", "/knowledge-bases/{}/files/{}/replacements"),
        ("PATCH", "/knowledge-bases/{}/files/{}"),
        ("DELETE", "/knowledge-bases/{}/files/{}"),
        ("POST", "/knowledge-bases/{}/folders"),
        ("PATCH", "/knowledge-bases/{}/folders/{}"),
        ("DELETE", "/knowledge-bases/{}/folders/{}"),
        ("POST", "/recall"),
        # Teams (docs/teams.md), reached as sharing is: by the page's session or the control token.
        ("POST", "/teams"),
        ("GET", "/teams"),
        ("GET", "/teams/{}"),
        ("PATCH", "/teams/{}"),
        ("DELETE", "/teams/{}"),
        ("POST", "/teams/{}/members"),
        ("PATCH", "/teams/{}/members/{}"),
        ("DELETE", "/teams/{}/members/{}"),
        ("POST", "/teams/{}/accept"),
        ("POST", "/teams/{}/decline"),
        ("GET", "/teams/{}/activity"),
        ("POST", "/knowledge-bases/{}/teams"),
        ("GET", "/knowledge-bases/{}/teams"),
        ("DELETE", "/knowledge-bases/{}/teams/{}"),
        # The apps connected through the remote MCP endpoint: listed and disconnected, never added here.
        ("GET", "/me/connections"),
        ("DELETE", "/me/connections/{}"),
    )
)
# An id segment as the page sends it, and once a layer is off: unreserved characters and well-formed
# percent escapes (the page escapes everything else); the id is at most as long as the cloud's longest
# path parameter.
_PAGE_SEGMENT: Final = re.compile(r"^(?:[A-Za-z0-9._~!'()*-]|%[0-9A-Fa-f]{2}){1,5120}$")
MAX_ID_CHARS: Final = 256
_QUERY_KEYS: Final = frozenset({"folder_id"})
_IDEMPOTENCY_KEY: Final = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")

# The page's ES modules: index.html loads app.js, which imports the others (tests/unit/client/desktop
# checks that this is exactly the set the page imports). Each is served at /<name> as JavaScript.
PAGE_MODULES: Final = (
    "app.js",
    "api.js",
    "ask.js",
    "connection-rules.js",
    "connections.js",
    "dialog.js",
    "dom.js",
    "events.js",
    "format.js",
    "i18n.js",
    "kb.js",
    "links.js",
    "lists.js",
    "share.js",
    "share-teams.js",
    "state.js",
    "team.js",
    "team-rules.js",
    "teams.js",
    "text.js",
    "text-sync.js",
    "text-connections.js",
    "text-teams.js",
    "uploads.js",
    "versions.js",
)

# The page's assets, served at these paths with these types.
ASSETS: Final = {
    "/": ("index.html", "text/html; charset=utf-8"),
    **{f"/{name}": (name, "text/javascript; charset=utf-8") for name in PAGE_MODULES},
    "/app.css": ("app.css", "text/css; charset=utf-8"),
    # The page links the SVG; browsers that ask for /favicon.ico anyway get the same picture.
    "/favicon.svg": ("favicon.svg", "image/svg+xml"),
    "/favicon.ico": ("favicon.svg", "image/svg+xml"),
}


def cloud_segment(page_segment: str) -> str | None:
    """An id segment of a page path as the cloud gets it: encoded exactly once; None when not an id.

    The page encodes each id segment **twice**: browsers read ``%2E`` and ``%2E%2E`` as the dot segments
    ``.`` and ``..`` and remove them, so a user id ``.`` or ``..`` encoded once could never reach this
    service (``%252E`` does). This takes both layers off and encodes the id once again, every character
    but ``A-Z a-z 0-9 - _ ~`` escaped (``.`` as ``%2E``, ``!'()*`` too); the cloud decodes path
    parameters once (``memmy_kb.api.resolver.DecodingHttpResolver``).
    """
    if page_segment in (".", "..") or not _PAGE_SEGMENT.match(page_segment):
        return None
    try:
        once = unquote(page_segment, errors="strict")  # the second layer: unreserved and escapes only
        if not _PAGE_SEGMENT.match(once):
            return None
        ident = unquote(once, errors="strict")
    except UnicodeDecodeError:
        return None
    if not ident or len(ident) > MAX_ID_CHARS:
        return None
    return quote(ident, safe="").replace(".", "%2E")


def _cloud_path(method: str, path: str) -> str | None:
    segments = path.split("/")
    if segments[0] != "":
        return None
    segments = segments[1:]
    for allowed, template in CLOUD_ROUTES:
        if method != allowed or len(template) != len(segments):
            continue
        if any(part != "{}" and part != given for part, given in zip(template, segments, strict=True)):
            continue
        ids = [cloud_segment(given) for part, given in zip(template, segments, strict=True) if part == "{}"]
        if any(ident is None for ident in ids):
            return None
        filled = iter(ids)
        return "".join(f"/{next(filled) if part == '{}' else part}" for part in template)
    return None


def cloud_target(method: str, path: str, query: str) -> str | None:
    """The cloud route (path and query) for a page request to ``/api{path}``; None when not allowed.

    ``path`` is the request's raw path: its id segments are encoded twice (``cloud_segment``)."""
    cloud_path = _cloud_path(method, path)
    if cloud_path is None:
        return None
    pairs = [(key, value) for key, value in parse_qsl(query, keep_blank_values=False) if key in _QUERY_KEYS]
    return cloud_path + (f"?{urlencode(pairs)}" if pairs else "")


def idempotency_key(value: str | None) -> str | None:
    return value if value is not None and _IDEMPOTENCY_KEY.match(value) else None


def asset(name: str) -> bytes:
    return resources.files(__package__).joinpath("static", name).read_bytes()


@dataclass
class Session:
    csrf: str
    seen: float = 0.0


class Sessions:
    """One-time codes and the sessions they became; in memory, so a restart ends every session."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._codes: dict[str, float] = {}
        self._sessions: dict[str, Session] = {}

    def new_code(self, now: float | None = None) -> str:
        now = time.monotonic() if now is None else now
        code = secrets.token_urlsafe(24)
        with self._lock:
            self._codes = {c: t for c, t in self._codes.items() if t > now}
            while len(self._codes) >= MAX_CODES:
                self._codes.pop(next(iter(self._codes)))
            self._codes[code] = now + CODE_TTL_SECONDS
        return code

    def redeem(self, code: str, now: float | None = None) -> tuple[str, Session] | None:
        """A new session for a code not used before and not expired; the code is gone either way."""
        now = time.monotonic() if now is None else now
        offered = code.encode("utf-8", "replace")
        with self._lock:
            found = next((c for c in self._codes if secrets.compare_digest(c.encode(), offered)), None)
            expires = self._codes.pop(found) if found is not None else None
            if expires is None or expires <= now:
                return None
            return self._open(now)

    def open_session(self, now: float | None = None) -> tuple[str, Session]:
        """A new session, for the browser whose callback completed a sign-in (``login_routes``)."""
        with self._lock:
            return self._open(time.monotonic() if now is None else now)

    def _open(self, now: float) -> tuple[str, Session]:
        self._sessions = {key: s for key, s in self._sessions.items() if s.seen + SESSION_IDLE_SECONDS > now}
        while len(self._sessions) >= MAX_SESSIONS:
            self._sessions.pop(next(iter(self._sessions)))
        session_id = secrets.token_urlsafe(32)
        session = Session(csrf=secrets.token_urlsafe(32), seen=now)
        self._sessions[session_id] = session
        return session_id, session

    def find(self, session_id: str | None, now: float | None = None) -> Session | None:
        if not session_id:
            return None
        now = time.monotonic() if now is None else now
        offered = session_id.encode("utf-8", "replace")
        with self._lock:
            match = None
            for key, session in self._sessions.items():
                if secrets.compare_digest(key.encode(), offered):
                    match = session
            if match is None or match.seen + SESSION_IDLE_SECONDS <= now:
                return None
            match.seen = now
            return match


def csrf_ok(session: Session, offered: str | None) -> bool:
    return offered is not None and secrets.compare_digest(
        session.csrf.encode(), offered.encode("utf-8", "replace")
    )


def cookie_value(header: str | None, name: str) -> str | None:
    """The value of cookie ``name`` in a ``Cookie`` header."""
    for part in (header or "").split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value
    return None


def session_cookie(name: str, session_id: str) -> str:
    """The ``Set-Cookie`` value of a page session: never readable by script, never sent cross-site."""
    return f"{name}={session_id}; HttpOnly; SameSite=Strict; Path=/"


def language(asked: str | None, accept_language: str | None) -> str:
    """``en`` or ``zh``: the one asked for (``?lang=``), else the browser's first language, as the page
    itself chooses (Chinese unless English comes first)."""
    if asked in ("en", "zh"):
        return asked
    first = (accept_language or "").split(",", 1)[0].strip().lower()
    return "en" if first.startswith("en") else "zh"


def notice_html(lang: str, title: str, sentences: list[str], commands: dict[str, str], back: str = "") -> bytes:
    """A page of the service's own (a refused link, a sign-in's end) in the page's style: ``title``, then
    each sentence, where ``{name}`` stands for ``commands[name]`` shown as code; ``back``: a link to the
    knowledge-base page with that text."""

    def sentence(text: str) -> str:
        shown = html.escape(text)
        for name, command in commands.items():
            shown = shown.replace(f"{{{name}}}", f"<code>{html.escape(command)}</code>")
        return f"<p>{shown}</p>"

    link = f'<p><a href="/?lang={lang}">{html.escape(back)}</a></p>' if back else ""
    body = (
        f'<!doctype html><html lang="{"en" if lang == "en" else "zh-CN"}"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<title>{html.escape(title)} · Memmy</title><link rel="icon" href="/favicon.svg" type="image/svg+xml">'
        '<link rel="stylesheet" href="/app.css"></head><body><header class="top"><p class="brand">Memmy</p>'
        f'</header><main class="single"><section class="panel"><h1>{html.escape(title)}</h1>'
        f"{''.join(sentence(s) for s in sentences)}{link}</section></main></body></html>"
    )
    return body.encode("utf-8")
