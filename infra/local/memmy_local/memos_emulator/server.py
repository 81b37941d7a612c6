"""The MemOS emulator: a local stand-in for MemOS's knowledge-base API, faithful in its awkward parts, with
its HTTP server, its test hooks under ``/_emulator/`` and fault injection (docs/memos.md, "What the
emulator adds for tests" and "Running the emulator")."""

from __future__ import annotations

import json
import logging
import random
import sqlite3
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from . import search_text
from .config import EmulatorConfig
from .endpoints import KnowledgeBaseApi, code_for_status, envelope
from .processing import FileProcessor
from .store import EmulatorStore

log = logging.getLogger("memos_emulator")

ENDPOINTS = (
    "/create/knowledgebase",
    "/add/knowledgebase-file",
    "/update/knowledgebase-file",
    "/get/knowledgebase-file",
    "/delete/knowledgebase-file",
    "/delete/knowledgebase",
    "/search/memory",
)


class QuietHTTPServer(ThreadingHTTPServer):
    """A threading server that does not print a traceback when a client hangs up mid-reply."""

    daemon_threads = True
    request_queue_size = 128  # socketserver's 5 resets connections when many searches arrive at once

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@dataclass
class Fault:
    endpoint: str
    code: int | None = None
    http_status: int | None = None
    latency_ms: int | None = None
    times: int | None = None
    probability: float | None = None


class MemosEmulator:
    """The emulator: an HTTP server on loopback, a processing worker and a SQLite store."""

    def __init__(self, config: EmulatorConfig | None = None) -> None:
        self.config = config or EmulatorConfig()
        self.prefix = "/" + self.config.prefix.strip("/") if self.config.prefix.strip("/") else ""
        self._tmpdir: tempfile.TemporaryDirectory[str] | None = None
        db_path = self.config.db_path
        if db_path is None:
            self._tmpdir = tempfile.TemporaryDirectory(prefix="memos-emulator-")
            db_path = Path(self._tmpdir.name) / "memos.sqlite3"
        self.store = EmulatorStore(db_path)
        self._faults: list[Fault] = []
        self._calls: Counter[str] = Counter()
        self._state_lock = threading.Lock()
        self._random = random.Random()  # noqa: S311 - fault sampling, not security
        self.processor = FileProcessor(self.store, self.config)
        self.api = KnowledgeBaseApi(self.store, self.config, files_added=self.processor.wake)
        self._httpd = QuietHTTPServer((self.config.host, self.config.port), _make_handler(self))
        self._threads: list[threading.Thread] = []

    # -- lifecycle -------------------------------------------------------------------------------

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def root_url(self) -> str:
        return f"http://{self.config.host}:{self.port}"

    @property
    def base_url(self) -> str:
        return self.root_url + self.prefix

    def start(self) -> MemosEmulator:
        """Serve and process in background threads; returns at once."""
        search_text.warm_up()
        for target in (self._httpd.serve_forever, self.processor.process_loop):
            thread = threading.Thread(target=target, name=f"memos-emulator-{target.__name__}", daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self) -> None:
        self.processor.stop()
        self._httpd.shutdown()
        self._httpd.server_close()
        for thread in self._threads:
            thread.join(timeout=5)
        self.store.close()
        if self._tmpdir is not None:
            self._tmpdir.cleanup()

    def __enter__(self) -> MemosEmulator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- test hooks ------------------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        with self._state_lock:
            calls = dict(self._calls)
        state = {"knowledge_bases": self.store.snapshot(), "calls": calls}
        if self.api.search_limit is not None:
            state["rate_limited"] = self.api.search_limit.refused()
        return state

    def add_fault(self, fault: Fault) -> None:
        if fault.endpoint not in ENDPOINTS:
            raise ValueError(f"unknown endpoint {fault.endpoint!r}; one of {', '.join(ENDPOINTS)}")
        with self._state_lock:
            self._faults.append(fault)

    def clear_faults(self) -> None:
        with self._state_lock:
            self._faults.clear()

    def faults(self) -> list[dict[str, Any]]:
        with self._state_lock:
            return [asdict(f) for f in self._faults]

    def reset(self) -> None:
        """Forget every KB, file, fault and call count; processing runs again if it was paused."""
        with self._state_lock:
            self._faults.clear()
            self._calls.clear()
        self.store.reset()
        self.processor.resume()

    def checkpoint(self) -> sqlite3.Connection:
        """What the emulator stores, copied (faults and call counts are not part of it)."""
        return self.store.checkpoint()

    def restore(self, checkpoint: sqlite3.Connection) -> None:
        """Put back what ``checkpoint`` copied; files it held still processing are taken up again."""
        self.store.restore(checkpoint)
        self.processor.wake()

    def control(self, method: str, path: str, raw: bytes) -> tuple[int, Any]:
        """A test hook under ``/_emulator/`` (``raw``: its JSON body): the HTTP status and the answer."""
        if (method, path) == ("GET", "/_emulator/state"):
            return HTTPStatus.OK, self.state()
        if (method, path) == ("GET", "/_emulator/faults"):
            return HTTPStatus.OK, {"faults": self.faults()}
        if (method, path) == ("DELETE", "/_emulator/faults"):
            self.clear_faults()
            return HTTPStatus.OK, {"faults": []}
        if (method, path) == ("POST", "/_emulator/processing"):
            try:
                paused = json.loads(raw).get("paused")
            except (ValueError, AttributeError):
                paused = None
            if not isinstance(paused, bool):
                return HTTPStatus.BAD_REQUEST, {"error": 'give {"paused": true|false}'}
            self.pause_processing(paused)
            return HTTPStatus.OK, {"paused": paused}
        if (method, path) == ("POST", "/_emulator/reset"):
            self.reset()
            return HTTPStatus.OK, {"reset": True}
        if (method, path) == ("POST", "/_emulator/faults"):
            try:
                self.add_fault(Fault(**json.loads(raw)))
            except (TypeError, ValueError) as err:
                return HTTPStatus.BAD_REQUEST, {"error": str(err)}
            return HTTPStatus.CREATED, {"faults": self.faults()}
        return HTTPStatus.NOT_FOUND, {"error": "no such route"}

    def pause_processing(self, paused: bool) -> None:
        """Hold every new file and version where it is (``running``), or let processing go on."""
        if paused:
            self.processor.pause()
        else:
            self.processor.resume()

    # -- request pipeline ------------------------------------------------------------------------

    def handle_api(self, endpoint: str, headers: Mapping[str, str], raw: bytes) -> tuple[int, dict[str, Any]]:
        """One API call: count it, apply an injected fault, then the endpoint (``KnowledgeBaseApi``)."""
        with self._state_lock:
            self._calls[endpoint] += 1
        fault = self._take_fault(endpoint)
        if fault is not None and fault.latency_ms:
            time.sleep(fault.latency_ms / 1000)
        if fault is not None and (fault.code is not None or fault.http_status is not None):
            status = fault.http_status or HTTPStatus.OK
            code = fault.code if fault.code is not None else code_for_status(status)
            return status, envelope(code, None, "injected fault")
        return self.api.call(endpoint, headers, raw)

    def _take_fault(self, endpoint: str) -> Fault | None:
        with self._state_lock:
            for fault in self._faults:
                if fault.endpoint != endpoint:
                    continue
                if fault.probability is not None and self._random.random() >= fault.probability:
                    return None
                if fault.times is not None:
                    fault.times -= 1
                    if fault.times <= 0:
                        self._faults.remove(fault)
                return fault
        return None


class _Handler(BaseHTTPRequestHandler):
    """One request to the emulator ``_make_handler`` binds it to: the API, or a test hook."""

    emulator: MemosEmulator
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes; without this, Nagle plus delayed ACK adds ~40 ms.
    disable_nagle_algorithm = True
    server_version = "MemOSEmulator/1"

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s " + format, self.address_string(), *args)

    def _reply(self, status: int, payload: Any) -> None:
        body = json.dumps(payload, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _read_body(self) -> bytes | None:
        length = int(self.headers.get("Content-Length") or 0)
        if length > self.emulator.config.max_body_bytes:
            self.close_connection = True
            return None
        return self.rfile.read(length) if length else b""

    def do_POST(self) -> None:
        emulator, path = self.emulator, urlsplit(self.path).path
        if path.startswith("/_emulator/"):
            self._control("POST", path)
            return
        endpoint = path[len(emulator.prefix) :] if path.startswith(emulator.prefix + "/") else None
        if endpoint not in ENDPOINTS:
            self._read_body()
            self._reply(HTTPStatus.NOT_FOUND, envelope(40400, None, "no such endpoint"))
            return
        raw = self._read_body()
        if raw is None:
            self._reply(HTTPStatus.OK, envelope(50105, None, "request exceeds 300 MB"))
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        status, payload = emulator.handle_api(endpoint, headers, raw)
        self._reply(status, payload)

    def do_GET(self) -> None:
        self._control("GET", urlsplit(self.path).path)

    def do_DELETE(self) -> None:
        self._control("DELETE", urlsplit(self.path).path)

    def _control(self, method: str, path: str) -> None:
        raw = self._read_body() if method == "POST" else b""
        self._reply(*self.emulator.control(method, path, raw or b"{}"))


def _make_handler(emulator: MemosEmulator) -> type[BaseHTTPRequestHandler]:
    """The request handler class of ``emulator``'s server (http.server makes one instance per request)."""
    return type("Handler", (_Handler,), {"emulator": emulator})
