"""A loopback proxy that adds an ``Authorization`` header: for a third-party program that can reach an
MCP endpoint by URL but has no option for a bearer token (the MCP conformance suite).

Every request to the proxy is sent on to ``target`` with the same method, path suffix, headers (the MCP
headers included) and body, plus ``Authorization: Bearer <token>``; an ``Origin`` that is the proxy's own
becomes the target's (the proxy stands for the target, so a page of its origin is one of the target's);
the answer comes back with its status, headers and body unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import ClassVar

import httpx

from memmy_local.serving import LoopbackHTTPServer, serve_in_background, stop_serving

# Hop-by-hop and framing headers the proxy sets itself.
_NOT_FORWARDED = {"host", "content-length", "connection", "transfer-encoding", "keep-alive", "authorization"}


class _Forward(BaseHTTPRequestHandler):
    target: ClassVar[str]
    token: ClassVar[str]
    client: ClassVar[httpx.Client]
    port: ClassVar[int]

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _forward(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        # Optional whitespace around a value is not part of it (RFC 9110, 5.5), and httpx refuses to send it.
        headers = [(k, v.strip(" \t")) for k, v in self.headers.items() if k.lower() not in _NOT_FORWARDED]
        # Its own origin by the address it listens on: the Host header is the client's to choose.
        own = f"http://127.0.0.1:{self.port}"
        headers = [(k, self.target if k.lower() == "origin" and v == own else v) for k, v in headers]
        headers.append(("Authorization", f"Bearer {self.token}"))
        answer = self.client.request(self.command, self.target + self.path, headers=headers, content=body)
        self.send_response(answer.status_code)
        for name, value in answer.headers.multi_items():
            if name.lower() not in _NOT_FORWARDED and name.lower() != "content-encoding":
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(answer.content)))
        self.end_headers()
        self.wfile.write(answer.content)

    do_GET = do_POST = do_DELETE = do_PUT = _forward


@contextmanager
def bearer_proxy(target: str, token: str) -> Iterator[str]:
    """A proxy on 127.0.0.1 (a free port) to ``target`` (a URL without a trailing slash) adding ``token``;
    yields the proxy's URL, which stands for ``target``."""
    with httpx.Client(timeout=30) as client:
        handler: type[_Forward] = type(
            "Forward", (_Forward,), {"target": target, "token": token, "client": client, "port": 0}
        )
        server = LoopbackHTTPServer(("127.0.0.1", 0), handler)
        handler.port = server.server_address[1]
        thread = serve_in_background(server, "bearer-proxy")
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}"
        finally:
            stop_serving(server, thread)
