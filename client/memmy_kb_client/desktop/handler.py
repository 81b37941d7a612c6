"""One request's way through the desktop service: the checks in order (Host, Origin, credential, route,
body), then the route; and the threaded stdlib HTTP server that sends each reply in one send
(docs/desktop.md, "The local service")."""

from __future__ import annotations

import io
import json
import logging
import sys
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final

from memmy_kb_client.desktop import bodies, page
from memmy_kb_client.desktop.hook_routes import HOOK_ROUTES
from memmy_kb_client.desktop.link_routes import LINK_ROUTES
from memmy_kb_client.desktop.login_routes import LOGIN_ROUTES
from memmy_kb_client.desktop.mcp_routes import MCP_ROUTES
from memmy_kb_client.desktop.proxy import CLI_CLOUD_ROUTE, CLOUD_ROUTE, cli_target
from memmy_kb_client.desktop.routes import ROUTES as OWN_ROUTES
from memmy_kb_client.desktop.routes import Headers, Reply, Request, Route, error_reply
from memmy_kb_client.desktop.state import HOST, Access, DesktopState

logger = logging.getLogger("memmy_kb_client.desktop")

MAX_BODY_BYTES: Final = 64 * 1024
# Every route of the service but the cloud routes of the page and the commands (``proxy``), with the
# credential each takes.
ROUTES: Final = {**OWN_ROUTES, **LOGIN_ROUTES, **HOOK_ROUTES, **MCP_ROUTES, **LINK_ROUTES}
_SAFE_METHODS: Final = frozenset({"GET", "HEAD"})


def find_route(method: str, path: str) -> Route | None:
    route = ROUTES.get((method, path))
    if (
        route is None
        and path.startswith(page.API_PREFIX + "/")
        and page.cloud_target(method, path[len(page.API_PREFIX) :], "") is not None
    ):
        return CLOUD_ROUTE
    if route is None and cli_target(method, path, "") is not None:
        return CLI_CLOUD_ROUTE
    return route


def dispatch(
    state: DesktopState,
    port: int,
    method: str,
    target: str,
    headers: Headers,
    read_body: Callable[[], bytes | None],
) -> Reply:
    """One request through the checks in order: Host, Origin, credential, route, body (``bodies``)."""
    host = (headers.get("Host") or "").strip().lower()
    if host not in (f"{HOST}:{port}", f"localhost:{port}"):
        return error_reply(403, "forbidden_host", "this service answers only to its own loopback address")
    origin = headers.get("Origin")
    own_origins = (f"http://{HOST}:{port}", f"http://localhost:{port}")
    if method not in _SAFE_METHODS and origin is not None and origin.strip().lower() not in own_origins:
        return error_reply(403, "forbidden_origin", "requests from other sites are refused")
    credential = state.credential(headers.get("Authorization"))
    without_fragment = target.split("#", 1)[0]
    path, _, query = without_fragment.partition("?")
    route = find_route(method, path)
    if credential is Access.HOOK and (route is None or route.access is not Access.HOOK):
        # The hook token is good for recall only (the hook's block, the MCP server's scope and search):
        # everywhere else, whatever the path, it is refused.
        return error_reply(403, "hook_token_not_allowed", "the hook token may only ask for recall")
    if route is None:
        known = any(known_path == path for _, known_path in ROUTES)
        return error_reply(405 if known else 404, "not_found", "no such route")
    session = None
    if route.access is Access.SESSION:
        if credential is not None:
            return error_reply(403, "forbidden", "this token is not good for this route")
        fetch_site = (headers.get("Sec-Fetch-Site") or "same-origin").strip().lower()
        if fetch_site not in ("same-origin", "none"):
            # A browser says where a request comes from: another site, or another port of this one.
            return error_reply(403, "forbidden_origin", "requests from other sites are refused")
        session = state.sessions.find(page.cookie_value(headers.get("Cookie"), state.cookie_name))
        if session is None:
            return error_reply(401, "session_required", "open the page with `memmy-kb desktop open`")
        if method not in _SAFE_METHODS and not page.csrf_ok(session, headers.get(page.CSRF_HEADER)):
            return error_reply(403, "csrf_token_required", "this request needs the page's CSRF token")
    elif route.access is not Access.PUBLIC and credential is not route.access:
        if credential is None:
            return error_reply(401, "unauthorized", "a valid token is required")
        return error_reply(403, "forbidden", "this token is not good for this route")
    body = read_body()
    if body is None:
        return error_reply(
            413, "body_too_large", f"a body needs a Content-Length of at most {MAX_BODY_BYTES} bytes"
        )
    refused = bodies.refusal(headers.get("Content-Type"), body)
    if refused is not None:
        return error_reply(refused.status, refused.code, refused.message)
    return route.handler(state, Request(method, path, headers, body, query, session))


class _RequestHandler(BaseHTTPRequestHandler):
    server: DesktopHTTPServer
    protocol_version = "HTTP/1.1"
    server_version = "memmy-kb-desktop"
    sys_version = ""
    # A client that stalls mid-request frees its thread after this many seconds.
    timeout = 10
    # TCP_NODELAY on each accepted socket: a small send never waits for the previous one's ACK.
    disable_nagle_algorithm = True

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
            reply = error_reply(500, "internal_error", "the local service failed; see its log")
        if reply.status >= 400 and self.headers.get("Content-Length") not in (None, "0"):
            # An unread body would be taken for the next request on this connection.
            self.close_connection = True
        payload = (
            reply.raw if reply.raw is not None else json.dumps(reply.body, ensure_ascii=False).encode("utf-8")
        )
        # The whole response is built here and goes out in one send: headers sent apart from the body
        # would wait on a kept-alive connection for the client's delayed ACK (Nagle), ~40 ms a request.
        buffer = io.BytesIO()
        socket_writer, self.wfile = self.wfile, buffer
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
        finally:
            self.wfile = socket_writer
        try:
            self.wfile.write(buffer.getbuffer())
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
        # The request line without its query: ``/open?code=`` and ``/callback?code=&state=`` carry secrets.
        line = getattr(self, "requestline", "")
        method, _, rest = line.partition(" ")
        target, _, version = rest.partition(" ")
        bare = f"{method} {target.split('?', 1)[0]} {version}".strip()
        logger.debug("desktop service: " + format, *(bare if arg == line and line else arg for arg in args))


class DesktopHTTPServer(ThreadingHTTPServer):
    """A thread per connection, so a slow cloud call never holds up another caller; one shared state."""

    daemon_threads = True
    # SO_REUSEADDR: a restart binds the port at once although the last run's closed connections still
    # sit in TIME_WAIT (about a minute). A second live service is still refused: Linux and macOS never
    # let two sockets listen on one address, reuse or not (SO_REUSEPORT, which would, stays off). Not
    # on Windows, where SO_REUSEADDR would let another program take a port that is being listened on.
    allow_reuse_address = sys.platform != "win32"
    # The listen backlog: socketserver's default of 5 refuses (resets) connections when more hooks,
    # MCP searches and page requests arrive at once than the accepting thread has taken yet.
    request_queue_size = 128

    def __init__(self, state: DesktopState, port: int) -> None:
        super().__init__((HOST, port), _RequestHandler)
        self.state = state
        self.port = int(self.server_address[1])
