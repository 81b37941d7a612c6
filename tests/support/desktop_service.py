"""The local service (``memmy-kb desktop serve``) in-process in front of a fake cloud, for the desktop's
integration tests: ``FakeCloud`` answers ``POST /recall`` with the cloud's own block for the one token it
knows (``CLOUD_TOKEN``), 401 for any other; ``start`` runs the service on a free port; ``Client`` calls
it with the hook or the control token; ``serving`` is a fixture's body for any of these servers."""

from __future__ import annotations

import base64
import http.client
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar

from memmy_kb.domain.recall.context_block import Excerpt, SizeLimit, build_context
from memmy_kb_client.desktop.server import DesktopConfig, DesktopService
from memmy_kb_client.home import paths

QUERY = "差旅报销需要哪些发票"
Server = TypeVar("Server", bound=ThreadingHTTPServer)


def jwt(**claims: object) -> str:
    def part(value: object) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    return f"{part({'alg': 'RS256'})}.{part(claims)}.signature"


CLOUD_TOKEN = jwt(sub="alice", exp=int(time.time()) + 3600)
HITS = [Excerpt("差旅报销制度", "住宿发票、机票行程单。DELTA4")]


def recall_reply(hits: list[Excerpt], context_limit: dict[str, Any] | None = None) -> dict[str, Any]:
    """``POST /recall``'s answer as the cloud builds it (its block builder, a fixed boundary)."""
    limit = None if context_limit is None else SizeLimit(context_limit["max"], context_limit["unit"])
    block = build_context(hits, limit=limit, new_boundary=lambda: "0123456789abcdef")
    items = [{"title": e.title, "content": e.content} for e in block.excerpts]
    return {"items": items, "context": block.text, "scope_size": 1, "discarded": False}


BLOCK = recall_reply(HITS)["context"]


class FakeCloud(ThreadingHTTPServer):
    """``POST /recall``: the block for the one token it knows, 401 for any other. ``GET /knowledge-bases``
    (what a pasted login is tried with): 401 for a token in ``refused_logins``, else an empty list."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _CloudHandler)
        self.token = CLOUD_TOKEN
        self.status = 200
        # The answer: built from ``hits`` within the request's context_limit, unless a test sets ``body``.
        self.hits = HITS
        self.body: Any = None
        self.requests: list[dict[str, Any]] = []
        self.refused_logins: set[str] = set()
        # Close each connection after its reply without saying so, as a server that restarted would.
        self.drop_connections = False

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _CloudHandler(BaseHTTPRequestHandler):
    server: FakeCloud
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append(
            {"path": self.path, "auth": self.headers.get("Authorization"), "body": body}
        )
        status, reply = self.server.status, self.server.body
        if reply is None:
            reply = recall_reply(self.server.hits, body.get("context_limit"))
        if self.headers.get("Authorization") != f"Bearer {self.server.token}":
            status, reply = 401, {"message": "Unauthorized"}
        raw = json.dumps(reply).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)
        if self.server.drop_connections:
            self.close_connection = True

    def do_GET(self) -> None:
        token = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
        refused = token in self.server.refused_logins
        reply: dict[str, Any] = {"message": "Unauthorized"} if refused else {"items": []}
        status = 401 if refused else 200
        raw = json.dumps(reply).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: Any) -> None:
        pass


def serving(server: Server) -> Iterator[Server]:
    """A fixture's body: ``server`` answering on its own thread until the test is done."""
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def start(state_dir: Path, cloud_url: str, **options: Any) -> DesktopService:
    return DesktopService(
        DesktopConfig(state_dir=str(state_dir), cloud_url=cloud_url, port=0, **options)
    ).start()


class Client:
    def __init__(self, service: DesktopService) -> None:
        self.service = service
        self.state_dir = Path(service.config.state_dir)

    @property
    def hook_token(self) -> str:
        return (self.state_dir / paths.HOOK_TOKEN_FILE).read_text()

    @property
    def private_dir(self) -> Path:
        return Path(paths.private_dir(str(self.state_dir)))

    @property
    def control_token(self) -> str:
        return self.service.state.control_token

    def request(
        self,
        method: str,
        path: str,
        token: str | None = None,
        body: Any = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, dict[str, Any], http.client.HTTPResponse]:
        connection = http.client.HTTPConnection("127.0.0.1", self.service.port, timeout=10)
        sent = dict(headers or {})
        if token is not None:
            sent["Authorization"] = f"Bearer {token}"
        raw = body if isinstance(body, bytes) else None if body is None else json.dumps(body).encode()
        connection.request(method, path, body=raw, headers=sent)
        response = connection.getresponse()
        data = response.read()
        connection.close()
        return response.status, json.loads(data) if data else {}, response

    def recall(self, agent: str | None = "claude-code", **kwargs: Any) -> dict[str, Any]:
        status, body, _ = self.request(
            "POST", "/hook/recall", self.hook_token, {"query": QUERY, "agent": agent}, **kwargs
        )
        assert status == 200, body
        return body

    def control(self, method: str, path: str, body: Any = None) -> tuple[int, dict[str, Any]]:
        status, answer, _ = self.request(method, path, self.control_token, body)
        return status, answer

    def login(self, token: str = CLOUD_TOKEN) -> dict[str, Any]:
        status, answer = self.control("POST", "/control/login", {"token": token})
        assert status == 200, answer
        return answer
