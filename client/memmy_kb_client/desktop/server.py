"""``memmy-kb desktop serve``: the local service, the only desktop process that talks to the cloud.

It listens on 127.0.0.1 only and answers three kinds of caller, each with its own credential:

* the agent hooks, with the **hook token** (``hook-token``, 0600, rotatable): ``POST /hook/recall`` and
  nothing else. It is no cloud token: the cloud refuses it, and so does every other route here (403);
* the ``memmy-kb desktop`` commands, with the **control token** (``control-token``, 0600, new on each
  start): ``/control/login``, ``/control/logout``, ``/control/status``, ``/control/rotate-hook-token``;
* the knowledge-base page (``page.py``), with a **session cookie** that a one-time code from
  ``memmy-kb desktop open`` became: ``/api/...`` (the cloud routes the page needs, sent on with the
  cloud login) and ``/api/session``; a state-changing request also carries the session's CSRF token.
  The page's assets and ``/open`` are public.

Before any route, a request must name this service in ``Host`` (``127.0.0.1:PORT`` or ``localhost:PORT``;
anything else is DNS rebinding, 403) and a state-changing request may carry no foreign ``Origin`` (403).
The service sends no CORS headers, so no web page can read an answer either.

Recall forwards the query to the cloud's ``POST /recall`` with the cloud login and returns the context
block cut to the asking agent's inline limit. Logged out, an expired login, a 401, the cloud down or
failing: an empty block (the turn goes ahead without excerpts) and ``desktop status`` says why.
Queries, blocks and tokens are never logged.
"""

from __future__ import annotations

import enum
import json
import logging
import os
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import IO, Any, Final, Protocol

from memmy_kb_client.desktop import page, paths
from memmy_kb_client.desktop.block import fit_for_agent
from memmy_kb_client.desktop.cloud import CloudRecall
from memmy_kb_client.desktop.credentials import CloudLogin, FileStore, LoginStore, open_store

logger = logging.getLogger("memmy_kb_client.desktop")

DEFAULT_PORT: Final = 8765
HOST: Final = "127.0.0.1"
MAX_BODY_BYTES: Final = 64 * 1024
MAX_QUERY_CHARS: Final = 4000
MAX_LOGIN_TOKEN_CHARS: Final = 16 * 1024
HOOK_TOKEN_PREFIX: Final = "mkh_"  # noqa: S105 - a prefix, not a secret
CONTROL_TOKEN_PREFIX: Final = "mkc_"  # noqa: S105 - a prefix, not a secret
_SAFE_METHODS: Final = frozenset({"GET", "HEAD"})


class DesktopStartError(RuntimeError):
    """The service could not start; the message says why."""


class PortInUse(DesktopStartError):
    pass


class Access(enum.Enum):
    """Which credential a route takes."""

    PUBLIC = "public"
    HOOK = "hook"
    CONTROL = "control"
    SESSION = "session"


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
        try:
            value = json.loads(self.body or b"{}")
        except ValueError:
            return None
        return value if isinstance(value, dict) else None


@dataclass(frozen=True)
class Reply:
    status: int
    body: dict[str, Any]
    headers: tuple[tuple[str, str], ...] = ()
    # Sent as is instead of ``body`` as JSON (the page's assets, a cloud answer passed on).
    raw: bytes | None = None
    content_type: str = "application/json; charset=utf-8"


def _error(status: int, code: str, message: str) -> Reply:
    return Reply(status, {"error": {"code": code, "message": message}})


@dataclass(frozen=True)
class Route:
    access: Access
    handler: Callable[[DesktopState, Request], Reply]


@dataclass(frozen=True)
class DesktopConfig:
    state_dir: str
    cloud_url: str
    port: int = DEFAULT_PORT
    cloud_timeout: float = 3.5
    # A keyring backend to hold the cloud login (tests pass an in-memory one); None: whatever keyring finds.
    keyring_backend: Any = None
    # The wall clock the login's expiry is read against (tests pass one they move).
    clock: Callable[[], float] = time.time


def _now_iso(at: float | None = None) -> str:
    return datetime.fromtimestamp(time.time() if at is None else at, UTC).isoformat(timespec="seconds")


def _new_token(prefix: str) -> str:
    return prefix + secrets.token_urlsafe(32)


class DesktopState:
    """The service's tokens, its cloud login and what the last recall met; shared by all request threads."""

    def __init__(self, config: DesktopConfig) -> None:
        self.config = config
        self.state_dir = config.state_dir
        self.cloud = CloudRecall(config.cloud_url, timeout=config.cloud_timeout)
        self.store: LoginStore = open_store(config.state_dir, config.keyring_backend)
        self._lock = threading.Lock()
        self.hook_token = ""
        self.control_token = ""
        self.login: CloudLogin | None = None
        self.login_note = ""
        self.rejected = False
        self.last_recall: dict[str, Any] | None = None
        self.url = ""
        self.port = 0
        self.sessions = page.Sessions()

    @property
    def cookie_name(self) -> str:
        # Cookies are not kept apart by port: two services on one machine each name their own.
        return f"memmy_kb_session_{self.port}"

    # ---------------------------------------------------------------------------------------- setup

    def load(self) -> None:
        """Tokens from (or into) the state directory, and the saved cloud login if it is for our cloud."""
        self.hook_token = paths.read_token(self.state_dir, paths.HOOK_TOKEN_FILE) or self._write_hook_token()
        self.control_token = _new_token(CONTROL_TOKEN_PREFIX)
        paths.write_private(
            os.path.join(self.state_dir, paths.CONTROL_TOKEN_FILE), self.control_token.encode("ascii")
        )
        try:
            saved = self.store.load()
        except Exception as err:  # a keychain that will not answer: the file, as at login
            self.login_note = f"the OS keychain could not be read ({type(err).__name__}); using the file"
            self.store = FileStore(self.state_dir)
            saved = self.store.load()
        if saved is not None and saved.cloud != self.cloud.base_url:
            self.login_note = f"the saved login is for {saved.cloud}, not {self.cloud.base_url}: log in again"
            saved = None
        self.login = saved

    def _write_hook_token(self) -> str:
        token = _new_token(HOOK_TOKEN_PREFIX)
        paths.write_private(os.path.join(self.state_dir, paths.HOOK_TOKEN_FILE), token.encode("ascii"))
        return token

    # ------------------------------------------------------------------------------------- requests

    def credential(self, authorization: str | None) -> Access | None:
        """Which of our tokens ``Authorization: Bearer ...`` carries, compared in constant time."""
        scheme, _, value = (authorization or "").strip().partition(" ")
        if scheme.lower() != "bearer" or not value.strip():
            return None
        offered = value.strip().encode("utf-8", "replace")
        with self._lock:
            hook, control = self.hook_token.encode(), self.control_token.encode()
        # Both comparisons run every time, so the timing does not say which token was near.
        is_hook = secrets.compare_digest(offered, hook)
        is_control = secrets.compare_digest(offered, control)
        if is_hook:
            return Access.HOOK
        if is_control:
            return Access.CONTROL
        return None

    def recall(self, query: str, agent: str | None) -> tuple[str, str, float | None]:
        """The block for ``query`` cut for ``agent``, the outcome, and the cloud call's seconds."""
        with self._lock:
            login = self.login
        if login is None:
            return "", "logged_out", None
        if login.expired(self.config.clock()):
            self._record("expired", None, None)
            return "", "expired", None
        reply = self.cloud.recall(login.token, query)
        with self._lock:
            if self.login is login:
                self.rejected = reply.outcome == "unauthorized"
        self._record(reply.outcome, reply.status, reply.elapsed, reply.detail)
        if reply.outcome != "ok":
            return "", reply.outcome, reply.elapsed
        return fit_for_agent(reply.context, agent), "ok", reply.elapsed

    def _record(self, outcome: str, status: int | None, elapsed: float | None, detail: str = "") -> None:
        record: dict[str, Any] = {"at": _now_iso(), "outcome": outcome}
        if status is not None:
            record["status"] = status
        if elapsed is not None:
            record["cloud_ms"] = round(elapsed * 1000, 1)
        if detail:
            record["detail"] = detail
        with self._lock:
            self.last_recall = record

    def set_login(self, token: str) -> CloudLogin:
        login = CloudLogin(self.cloud.base_url, token)
        try:
            self.store.save(login)
        except Exception as err:  # a keychain that refuses (locked, no session): the 0600 file instead
            self.login_note = f"the OS keychain refused the login ({type(err).__name__}); kept in the file"
            self.store = FileStore(self.state_dir)
            self.store.save(login)
        else:
            self.login_note = ""
            if not isinstance(self.store, FileStore):
                FileStore(self.state_dir).clear()  # no stale copy of an older login on disk
        with self._lock:
            self.login, self.rejected = login, False
        return login

    def clear_login(self) -> None:
        with self._lock:
            self.login, self.rejected = None, False
        self.store.clear()
        FileStore(self.state_dir).clear()
        self.login_note = ""

    def current_login(self) -> CloudLogin | None:
        with self._lock:
            return self.login

    def mark_rejected(self, login: CloudLogin) -> None:
        with self._lock:
            if self.login is login:
                self.rejected = True

    def rotate_hook_token(self) -> None:
        token = self._write_hook_token()
        with self._lock:
            self.hook_token = token

    def status(self) -> dict[str, Any]:
        with self._lock:
            login, rejected, last = self.login, self.rejected, self.last_recall
        described: dict[str, Any]
        if login is None:
            described = {"state": "logged_out"}
        else:
            claims = login.claims()
            expires = login.expires_at()
            state = "expired" if login.expired(self.config.clock()) else "rejected" if rejected else "logged_in"
            described = {"state": state, "user": claims.get("sub")}
            if expires is not None:
                described["expires_at"] = _now_iso(expires)
        if self.login_note:
            described["note"] = self.login_note
        return {
            "service": self.url,
            "cloud": self.cloud.base_url,
            "login": described,
            "credential_store": self.store.description,
            "hook_token_file": os.path.join(self.state_dir, paths.HOOK_TOKEN_FILE),
            "last_recall": last,
        }


# ------------------------------------------------------------------------------------------- routes


def _hook_recall(state: DesktopState, request: Request) -> Reply:
    body = request.json_object()
    query = body.get("query") if body else None
    agent = body.get("agent") if body else None
    if not isinstance(query, str) or not query.strip() or not (agent is None or isinstance(agent, str)):
        return _error(422, "validation_error", 'expected {"query": "...", "agent"?: "..."}')
    context, outcome, cloud_seconds = state.recall(query.strip()[:MAX_QUERY_CHARS], agent)
    headers: tuple[tuple[str, str], ...] = ()
    if cloud_seconds is not None:
        headers = (("Server-Timing", f"cloud;dur={cloud_seconds * 1000:.2f}"),)
    return Reply(200, {"context": context, "cloud": outcome}, headers)


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
        return _error(422, "validation_error", 'expected {"token": "<the cloud login token>"}')
    candidate = CloudLogin(state.cloud.base_url, token)
    if candidate.expired(state.config.clock()):
        return _error(422, "login_expired", "this login token has expired; get a new one")
    state.set_login(token)
    return Reply(200, state.status())


def _logout(state: DesktopState, request: Request) -> Reply:
    state.clear_login()
    return Reply(200, state.status())


def _rotate(state: DesktopState, request: Request) -> Reply:
    state.rotate_hook_token()
    return Reply(200, {"hook_token_file": os.path.join(state.state_dir, paths.HOOK_TOKEN_FILE)})


def _page_code(state: DesktopState, request: Request) -> Reply:
    code = state.sessions.new_code()
    return Reply(200, {"url": f"{state.url}/open?code={code}", "expires_in": int(page.CODE_TTL_SECONDS)})


# The page's assets: no framing, no inline script, no referrer (the /open URL carries a code).
_PAGE_HEADERS: Final = (
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
    return Reply(200, {}, _PAGE_HEADERS, raw=page.asset(name), content_type=content_type)


def _open(state: DesktopState, request: Request) -> Reply:
    """``/open?code=...``: a one-time code becomes the session cookie, then on to the page."""
    from urllib.parse import parse_qs

    params = parse_qs(request.query)
    code = (params.get("code") or [""])[0]
    lang = (params.get("lang") or [""])[0]
    redeemed = state.sessions.redeem(code) if code else None
    if redeemed is None:
        message = (
            "This link was used already or has expired. Run `memmy-kb desktop open` again.\n"
            "此链接已使用或已过期，请重新运行 memmy-kb desktop open。\n"
        )
        return Reply(
            403, {}, _PAGE_HEADERS, raw=message.encode("utf-8"), content_type="text/plain; charset=utf-8"
        )
    session_id, _ = redeemed
    cookie = f"{state.cookie_name}={session_id}; HttpOnly; SameSite=Strict; Path=/"
    location = "/?lang=en" if lang == "en" else "/?lang=zh" if lang == "zh" else "/"
    return Reply(303, {}, (("Set-Cookie", cookie), ("Location", location)), raw=b"")


def _session(state: DesktopState, request: Request) -> Reply:
    assert request.session is not None
    login = state.current_login()
    status = state.status()["login"]
    body: dict[str, Any] = {"csrf": request.session.csrf, "login": status["state"]}
    if login is not None:
        claims = login.claims()
        body["user"] = {"user_id": claims.get("sub"), "name": claims.get("name")}
    return Reply(200, body)


def _to_cloud(state: DesktopState, request: Request) -> Reply:
    """``/api/<cloud route>``: sent on to the cloud with the held login; its answer passed back."""
    target = page.cloud_target(request.method, request.path[len(page.API_PREFIX) :], request.query)
    if target is None:
        return _error(404, "not_found", "no such route")
    login = state.current_login()
    if login is None or login.expired(state.config.clock()):
        return _error(
            503, "desktop_logged_out", "the desktop service has no valid login: run `memmy-kb desktop login`"
        )
    headers: dict[str, str] = {}
    key = page.idempotency_key(request.headers.get("Idempotency-Key"))
    if key is not None:
        headers["Idempotency-Key"] = key
    body = request.body if request.method in ("POST", "PUT", "PATCH") else None
    status, data = state.cloud.forward(login.token, request.method, target, body or None, headers)
    if status == 401:
        state.mark_rejected(login)
        return _error(503, "cloud_login_rejected", "the cloud refused the desktop's login: log in again")
    return Reply(status, {}, raw=b"" if status == 204 else data)


ROUTES: Final[dict[tuple[str, str], Route]] = {
    ("POST", "/hook/recall"): Route(Access.HOOK, _hook_recall),
    ("GET", "/control/status"): Route(Access.CONTROL, _status),
    ("POST", "/control/login"): Route(Access.CONTROL, _login),
    ("POST", "/control/logout"): Route(Access.CONTROL, _logout),
    ("POST", "/control/rotate-hook-token"): Route(Access.CONTROL, _rotate),
    ("POST", "/control/page-code"): Route(Access.CONTROL, _page_code),
    ("GET", "/"): Route(Access.PUBLIC, _asset),
    ("GET", "/app.js"): Route(Access.PUBLIC, _asset),
    ("GET", "/app.css"): Route(Access.PUBLIC, _asset),
    ("GET", "/open"): Route(Access.PUBLIC, _open),
    ("GET", "/api/session"): Route(Access.SESSION, _session),
}
# Every other /api/... path: the cloud routes in ``page.CLOUD_ROUTES``, checked again by ``_to_cloud``.
_CLOUD_ROUTE: Final = Route(Access.SESSION, _to_cloud)


def _route(method: str, path: str) -> Route | None:
    route = ROUTES.get((method, path))
    if (
        route is None
        and path.startswith(page.API_PREFIX + "/")
        and page.cloud_target(method, path[len(page.API_PREFIX) :], "") is not None
    ):
        return _CLOUD_ROUTE
    return route


def dispatch(
    state: DesktopState,
    port: int,
    method: str,
    target: str,
    headers: Headers,
    read_body: Callable[[], bytes | None],
) -> Reply:
    """One request through the checks in order: Host, Origin, credential, route."""
    host = (headers.get("Host") or "").strip().lower()
    if host not in (f"{HOST}:{port}", f"localhost:{port}"):
        return _error(403, "forbidden_host", "this service answers only to its own loopback address")
    origin = headers.get("Origin")
    own_origins = (f"http://{HOST}:{port}", f"http://localhost:{port}")
    if method not in _SAFE_METHODS and origin is not None and origin.strip().lower() not in own_origins:
        return _error(403, "forbidden_origin", "requests from other sites are refused")
    credential = state.credential(headers.get("Authorization"))
    without_fragment = target.split("#", 1)[0]
    path, _, query = without_fragment.partition("?")
    route = _route(method, path)
    if credential is Access.HOOK and (route is None or route.access is not Access.HOOK):
        # The hook token is good for recall only: everywhere else, whatever the path, it is refused.
        return _error(403, "hook_token_not_allowed", "the hook token may only ask for recall")
    if route is None:
        known = any(known_path == path for _, known_path in ROUTES)
        return _error(405 if known else 404, "not_found", "no such route")
    session = None
    if route.access is Access.SESSION:
        if credential is not None:
            return _error(403, "forbidden", "this token is not good for this route")
        fetch_site = (headers.get("Sec-Fetch-Site") or "same-origin").strip().lower()
        if fetch_site not in ("same-origin", "none"):
            # A browser says where a request comes from: another site, or another port of this one.
            return _error(403, "forbidden_origin", "requests from other sites are refused")
        session = state.sessions.find(page.cookie_value(headers.get("Cookie"), state.cookie_name))
        if session is None:
            return _error(401, "session_required", "open the page with `memmy-kb desktop open`")
        if method not in _SAFE_METHODS and not page.csrf_ok(session, headers.get(page.CSRF_HEADER)):
            return _error(403, "csrf_token_required", "this request needs the page's CSRF token")
    elif route.access is not Access.PUBLIC and credential is not route.access:
        if credential is None:
            return _error(401, "unauthorized", "a valid token is required")
        return _error(403, "forbidden", "this token is not good for this route")
    body = read_body()
    if body is None:
        return _error(
            413, "body_too_large", f"a body needs a Content-Length of at most {MAX_BODY_BYTES} bytes"
        )
    return route.handler(state, Request(method, path, headers, body, query, session))


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    server_version = "memmy-kb-desktop"
    sys_version = ""
    # A client that stalls mid-request frees its thread after this many seconds.
    timeout = 10

    def _read_body(self) -> bytes | None:
        if self.headers.get("Transfer-Encoding"):
            self.close_connection = True
            return None
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if not 0 <= length <= MAX_BODY_BYTES:
            self.close_connection = True
            return None
        return self.rfile.read(length) if length else b""

    def _handle(self) -> None:
        started = time.perf_counter()
        state = self.server.state
        try:
            reply = dispatch(state, self.server.port, self.command, self.path, self.headers, self._read_body)
        except Exception:
            logger.exception("desktop service: %s %s failed", self.command, self.path.split("?", 1)[0])
            reply = _error(500, "internal_error", "the local service failed; see its log")
        if reply.status >= 400 and self.headers.get("Content-Length") not in (None, "0"):
            # An unread body would be taken for the next request on this connection.
            self.close_connection = True
        payload = (
            reply.raw if reply.raw is not None else json.dumps(reply.body, ensure_ascii=False).encode("utf-8")
        )
        try:
            self.send_response(reply.status)
            if reply.status not in (204, 303):
                self.send_header("Content-Type", reply.content_type)
            self.send_header("Content-Length", str(len(payload)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")
            for name, value in reply.headers:
                self.send_header(name, value)
            if self.close_connection:
                self.send_header("Connection", "close")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(payload)
        except OSError:
            return  # the caller gave up (a hook past its deadline)
        logger.info(
            "%s %s %d %.1fms",
            self.command,
            self.path.split("?", 1)[0][:100],
            reply.status,
            (time.perf_counter() - started) * 1000,
        )

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _handle

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("desktop service: " + format, *args)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = False

    def __init__(self, state: DesktopState, port: int) -> None:
        super().__init__((HOST, port), _Handler)
        self.state = state
        self.port = int(self.server_address[1])


class DesktopService:
    """The local service: ``start()`` it (or use it as a context manager), then ``stop()`` it."""

    def __init__(self, config: DesktopConfig) -> None:
        self.config = config
        self.state = DesktopState(config)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._lock_handle: IO[str] | None = None

    @property
    def port(self) -> int:
        assert self._server is not None, "not started"
        return self._server.port

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def start(self) -> DesktopService:
        paths.ensure_private_dir(self.config.state_dir)
        self._lock_handle = _take_lock(self.config.state_dir)
        try:
            try:
                self._server = _Server(self.state, self.config.port)
            except OSError as err:
                raise PortInUse(f"cannot listen on {HOST}:{self.config.port} ({err.strerror})") from err
            self.state.url = self.url
            self.state.port = self.port
            self.state.load()
            record = {
                "url": self.url,
                "port": self.port,
                "pid": os.getpid(),
                "cloud": self.state.cloud.base_url,
            }
            paths.write_private(
                os.path.join(self.config.state_dir, paths.SERVICE_FILE), json.dumps(record).encode("utf-8")
            )
        except BaseException:
            self.stop()
            raise
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.2},
            name="memmy-kb-desktop",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            if self._thread is not None:
                self._server.shutdown()
            self._server.server_close()
            recorded = paths.read_service(self.config.state_dir)
            if (
                recorded is not None
                and recorded.get("pid") == os.getpid()
                and recorded.get("port") == self.port
            ):
                paths.remove(os.path.join(self.config.state_dir, paths.SERVICE_FILE))
                paths.remove(os.path.join(self.config.state_dir, paths.CONTROL_TOKEN_FILE))
            self._server = None
        self._thread = None
        self.state.cloud.close()
        if self._lock_handle is not None:
            self._lock_handle.close()
            self._lock_handle = None

    def __enter__(self) -> DesktopService:
        return self if self._server is not None else self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _take_lock(state_dir: str) -> IO[str]:
    """Hold ``serve.lock`` for the service's life, so a second service on this state dir refuses to start."""
    fd = os.open(os.path.join(state_dir, paths.LOCK_FILE), os.O_RDWR | os.O_CREAT, 0o600)
    handle = os.fdopen(fd, "r+", encoding="utf-8")
    try:
        import fcntl
    except ImportError:  # Windows: no advisory lock; a second service fails on the port instead
        return handle
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as err:
        handle.close()
        raise DesktopStartError(
            f"another desktop service already runs on {state_dir} (stop it, or set MEMMY_KB_HOME)"
        ) from err
    return handle
