"""An OAuth client's loopback redirect URI (RFC 8252) for browser tests: a server on 127.0.0.1 that
records each path the browser brings (``/callback?code=…&state=…&iss=…``) and answers "ok"."""

from __future__ import annotations

import http.server
from collections.abc import Iterator
from contextlib import contextmanager
from typing import ClassVar

from memmy_local.serving import LoopbackHTTPServer, serve_in_background, stop_serving


class _Callback(http.server.BaseHTTPRequestHandler):
    seen: ClassVar[list[str]]

    def do_GET(self) -> None:
        self.seen.append(self.path)
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def loopback_callback() -> Iterator[tuple[str, list[str]]]:
    """``(redirect URI, the paths it received so far)`` while the ``with`` block runs."""
    seen: list[str] = []
    handler: type[_Callback] = type("Callback", (_Callback,), {"seen": seen})
    server = LoopbackHTTPServer(("127.0.0.1", 0), handler)
    thread = serve_in_background(server, "loopback-callback")
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/callback", seen
    finally:
        stop_serving(server, thread)
