"""The client's HTTP client (``memmy_kb_client.http_client``) answered in-process: each request goes to a
handler written as for ``httpx.MockTransport`` (an ``httpx.Request`` in, an ``httpx.Response`` out), so
no socket is opened."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx

from memmy_kb_client.http_client import HttpClient

Handler = Callable[[httpx.Request], httpx.Response]


class _Response:
    def __init__(self, response: httpx.Response) -> None:
        self.status = response.status_code
        self.reason = response.reason_phrase
        self.will_close = False
        self._body = response.content

    def read(self, amount: int | None = None) -> bytes:
        body, self._body = (self._body, b"") if amount is None else (self._body[:amount], self._body[amount:])
        return body


class MockConnection:
    """What ``HttpClient`` and ``ProvenConnection`` use of ``http.client.HTTPConnection``, answered by
    ``handler``; ``base_url`` makes each request's URL whole."""

    def __init__(self, handler: Handler, base_url: str) -> None:
        self.handler, self.base_url = handler, base_url.rstrip("/")
        self.sock: object | None = None
        self.auto_open = 1
        self._response: httpx.Response | None = None

    def connect(self) -> None:
        self.sock = object()

    def request(self, method: str, url: str, body: bytes | None = None, headers: Any = None) -> None:
        self.connect()
        request = httpx.Request(method, self.base_url + url, headers=headers or {}, content=body or b"")
        self._response = self.handler(request)

    def getresponse(self) -> _Response:
        assert self._response is not None
        response, self._response = self._response, None
        return _Response(response)

    def close(self) -> None:
        self.sock = None


def mock_http(handler: Handler, base_url: str = "http://cloud.test") -> HttpClient:
    """An ``HttpClient`` for ``base_url`` whose every request ``handler`` answers."""
    return HttpClient(base_url, timeout=5, connect=lambda: MockConnection(handler, base_url))  # type: ignore[arg-type, return-value]


def mock_connect(handler: Handler) -> Callable[[int, float], Any]:
    """A ``connect`` for the desktop service's proven connections (``ProvenConnection``) on 127.0.0.1."""
    return lambda port, timeout: MockConnection(handler, f"http://127.0.0.1:{port}")
