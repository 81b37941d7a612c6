"""The local service in front of a cloud that records what reaches it (``RecordingCloud``), for the tests
of the page's side: ``service`` (a fixture) runs it logged in, ``call`` sends one request, ``control``
one with the control token, ``signed_in`` the headers of a page signed in through a one-time code."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from memmy_kb_client.desktop.server import DesktopService
from tests.support.desktop_service import CLOUD_TOKEN, serving, start


class RecordingCloud(ThreadingHTTPServer):
    """A cloud on loopback that records every request (method, raw path, headers, body) and answers JSON:
    ``answer`` says what, by default ``status`` and an empty list; the tests' clouds override it."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[dict[str, Any]] = []
        self.status = 200

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def answer(self, method: str, path: str) -> tuple[int, Any]:
        """The status and JSON body (``None``: no body) for a request."""
        return self.status, {"items": [], "echo": path}


class _Handler(BaseHTTPRequestHandler):
    server: RecordingCloud
    protocol_version = "HTTP/1.1"
    # Headers and body leave in two sends: without this each kept-alive request waits ~40 ms for an ACK.
    disable_nagle_algorithm = True

    def _any(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.server.requests.append(
            {"method": self.command, "path": self.path, "headers": dict(self.headers), "body": body}
        )
        status, answer = self.server.answer(self.command, self.path)
        raw = b"" if answer is None else json.dumps(answer, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _any

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def cloud() -> Iterator[RecordingCloud]:
    yield from serving(RecordingCloud())


@pytest.fixture
def service(
    tmp_path: Path, cloud: RecordingCloud, monkeypatch: pytest.MonkeyPatch
) -> Iterator[DesktopService]:
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    running = start(tmp_path / "desktop", cloud.url)
    running.state.set_login(CLOUD_TOKEN)
    yield running
    running.stop()


def call(
    service: DesktopService, method: str, path: str, headers: dict[str, str] | None = None, body: Any = None
) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", service.port, timeout=10)
    raw = json.dumps(body).encode() if body is not None else None
    sent = {"Content-Type": "application/json"} if raw is not None else {}
    connection.request(method, path, body=raw, headers={**sent, **(headers or {})})
    response = connection.getresponse()
    data = response.read()
    connection.close()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, data


def control(service: DesktopService, method: str, path: str) -> dict[str, Any]:
    status, _, body = call(service, method, path, {"Authorization": f"Bearer {service.state.control_token}"})
    assert status == 200, body
    return dict(json.loads(body))


def signed_in(service: DesktopService) -> dict[str, str]:
    """Headers of a page signed in through a one-time code: the cookie, the CSRF token, our Origin."""
    url = str(control(service, "POST", "/control/page-code")["url"])
    status, headers, _ = call(service, "GET", url.removeprefix(service.url))
    assert status == 303
    cookie = headers["set-cookie"].split(";", 1)[0]
    _, _, body = call(service, "GET", "/api/session", {"Cookie": cookie})
    return {"Cookie": cookie, "X-CSRF-Token": json.loads(body)["csrf"], "Origin": service.url}
