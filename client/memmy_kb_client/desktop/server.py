"""``memmy-kb desktop serve``: the local service, the only desktop process that talks to the cloud.

It listens on 127.0.0.1 only and answers three kinds of caller, each with its own credential:

* the agent hooks, with the **hook token** (``hook-token``, 0600, rotatable): ``POST /hook/recall`` and
  nothing else. It is no cloud token: the cloud refuses it, and so does every other route here (403);
* the ``memmy-kb desktop`` commands, with the **control token** (``control-token``, 0600, new on each
  start): ``/control/login``, ``/control/logout``, ``/control/status``, ``/control/rotate-hook-token``;
* the knowledge-base page (next issue): its own session, added to ``ROUTES`` with ``Access.SESSION``.

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

from memmy_kb_client.desktop import paths
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
    """Which credential a route takes. The page's session (next issue) becomes ``SESSION``."""

    PUBLIC = "public"
    HOOK = "hook"
    CONTROL = "control"


class Headers(Protocol):
    def get(self, name: str, /) -> str | None: ...


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    headers: Headers
    body: bytes

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
        if login.expired():
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
            state = "expired" if login.expired() else "rejected" if rejected else "logged_in"
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
    if candidate.expired():
        return _error(422, "login_expired", "this login token has expired; get a new one")
    state.set_login(token)
    return Reply(200, state.status())


def _logout(state: DesktopState, request: Request) -> Reply:
    state.clear_login()
    return Reply(200, state.status())


def _rotate(state: DesktopState, request: Request) -> Reply:
    state.rotate_hook_token()
    return Reply(200, {"hook_token_file": os.path.join(state.state_dir, paths.HOOK_TOKEN_FILE)})


ROUTES: Final[dict[tuple[str, str], Route]] = {
    ("POST", "/hook/recall"): Route(Access.HOOK, _hook_recall),
    ("GET", "/control/status"): Route(Access.CONTROL, _status),
    ("POST", "/control/login"): Route(Access.CONTROL, _login),
    ("POST", "/control/logout"): Route(Access.CONTROL, _logout),
    ("POST", "/control/rotate-hook-token"): Route(Access.CONTROL, _rotate),
    # The knowledge-base page (next issue) adds its routes here, under /page/, with Access.SESSION.
}


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
    path = target.split("?", 1)[0].split("#", 1)[0]
    route = ROUTES.get((method, path))
    if credential is Access.HOOK and (route is None or route.access is not Access.HOOK):
        # The hook token is good for recall only: everywhere else, whatever the path, it is refused.
        return _error(403, "hook_token_not_allowed", "the hook token may only ask for recall")
    if route is None:
        known = any(known_path == path for _, known_path in ROUTES)
        return _error(405 if known else 404, "not_found", "no such route")
    if route.access is not Access.PUBLIC and credential is not route.access:
        if credential is None:
            return _error(401, "unauthorized", "a valid token is required")
        return _error(403, "forbidden", "this token is not good for this route")
    body = read_body()
    if body is None:
        return _error(
            413, "body_too_large", f"a body needs a Content-Length of at most {MAX_BODY_BYTES} bytes"
        )
    return route.handler(state, Request(method, path, headers, body))


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
        payload = json.dumps(reply.body, ensure_ascii=False).encode("utf-8")
        try:
            self.send_response(reply.status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
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
