"""The local stack's control endpoint: what a developer asks of the running stack that AWS does by itself,
today running a scheduled function once (``memmy-local reconcile``). A separate loopback server, never the
gateway, so the API's routes stay exactly the template's."""

from __future__ import annotations

import hmac
import json
import logging
import os
import secrets
import threading
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, Final

from .serving import LoopbackHTTPServer, serve_in_background, stop_serving

log = logging.getLogger("memmy_local.control")

STATE_FILE_NAME: Final = "local-stack.json"
TOKEN_HEADER: Final = "X-Memmy-Local-Token"  # noqa: S105 - a header name, not a secret
_PREFIX: Final = "/schedules"


def state_file(home: Path) -> Path:
    """Where a stack whose dev home is ``home`` records its control URL and token."""
    return home / STATE_FILE_NAME


def read_state(home: Path) -> dict[str, Any]:
    """The running stack's record in ``home``; ``FileNotFoundError`` when no stack recorded one."""
    state: dict[str, Any] = json.loads(state_file(home).read_text(encoding="utf-8"))
    return state


class ControlServer:
    """Serves the control routes on ``host`` (loopback) for ``run_scheduled`` and ``scheduled``.

    - ``GET /schedules``: ``{"functions": [logical ids]}``;
    - ``POST /schedules/<LogicalId>``: invoke that function once with its schedule's event and wait:
      200 ``{"function", "result"}``, 500 ``{"function", "errorType", "errorMessage"}`` if it raised,
      404 for a function without a schedule.

    ``start`` writes ``local-stack.json`` (0600) into the dev home with the URL and a random token that
    every request must carry in ``X-Memmy-Local-Token``: another user of the machine cannot read it, and a
    web page cannot send that header to loopback without a CORS preflight, which this server never grants.
    """

    def __init__(
        self,
        run_scheduled: Callable[[str], Any],
        scheduled: Callable[[], list[str]],
        *,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.token = secrets.token_urlsafe(32)
        self._run_scheduled = run_scheduled
        self._scheduled = scheduled
        self._httpd = LoopbackHTTPServer((host, port), _make_handler(self))
        self._thread: threading.Thread | None = None
        self._state_paths: list[Path] = []

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self, *homes: Path, **record: Any) -> ControlServer:
        """Serve in a background thread; record the URL and token (plus ``record``) in each of ``homes``."""
        self._thread = serve_in_background(self._httpd, "memmy-control")
        body = json.dumps({"control_url": self.url, "token": self.token, "pid": os.getpid(), **record})
        for home in dict.fromkeys(homes):
            home.mkdir(parents=True, exist_ok=True)
            path = state_file(home)
            tmp = path.with_name(path.name + ".tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(body)
            tmp.replace(path)
            self._state_paths.append(path)
        return self

    def stop(self) -> None:
        for path in self._state_paths:
            # Only our own record: another stack may have started with the same home since.
            try:
                if read_state(path.parent).get("token") == self.token:
                    path.unlink()
            except (OSError, ValueError):
                pass
        self._state_paths = []
        stop_serving(self._httpd, self._thread)
        self._thread = None

    def handle(self, method: str, path: str, token: str | None) -> tuple[HTTPStatus, dict[str, Any]]:
        """One request, without the socket: the status and the JSON body."""
        if token is None or not hmac.compare_digest(token.encode(), self.token.encode()):
            return HTTPStatus.FORBIDDEN, {"message": f"missing or wrong {TOKEN_HEADER}"}
        scheduled = self._scheduled()
        if path == _PREFIX and method == "GET":
            return HTTPStatus.OK, {"functions": scheduled}
        if path.startswith(_PREFIX + "/") and method == "POST":
            function = path[len(_PREFIX) + 1 :]
            if function not in scheduled:
                return HTTPStatus.NOT_FOUND, {"message": f"{function} has no schedule in the template"}
            try:
                result = self._run_scheduled(function)
            except Exception as error:
                log.exception("%s failed (run on request)", function)
                return HTTPStatus.INTERNAL_SERVER_ERROR, {
                    "function": function,
                    "errorType": type(error).__name__,
                    "errorMessage": str(error),
                }
            return HTTPStatus.OK, {"function": function, "result": result}
        return HTTPStatus.NOT_FOUND, {"message": "not found"}


def describe_run(function: str, result: Any) -> str:
    """What a scheduled function's run did, for a person: the reconcile's counts one kind a line, in words
    (``memmy_kb.domain.reconcile.report.REPORT_KINDS``, the metric's name beside), or "nothing to repair"."""
    from memmy_kb.domain.reconcile.report import REPORT_KINDS

    if not isinstance(result, dict) or not all(isinstance(n, int) for n in result.values()):
        return f"{function}: {json.dumps(result, ensure_ascii=False)}"
    done = {kind: count for kind, count in result.items() if count}
    if not done:
        return f"{function}: nothing to repair"
    width = len(str(max(done.values())))
    lines = [f"{function} repaired:"]
    for kind, count in done.items():
        words = REPORT_KINDS.get(kind)
        lines.append(f"  {count:>{width}}  {words} ({kind})" if words else f"  {count:>{width}}  {kind}")
    return "\n".join(lines)


def _make_handler(server: ControlServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "MemmyLocalControl/1"

        def log_message(self, format: str, *args: Any) -> None:
            log.debug(format, *args)

        def _respond(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(min(length, 65536))
            status, body = server.handle(self.command, self.path, self.headers.get(TOKEN_HEADER))
            data = json.dumps(body, default=str).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = _respond

    return Handler
