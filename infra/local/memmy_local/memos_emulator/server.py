"""A local stand-in for MemOS's knowledge-base API (see docs/memos.md), faithful in its awkward parts.

Business errors come back inside HTTP 200 with a non-zero ``code``; shape errors with HTTP 400; auth
failures with HTTP 401. Files are parsed, chunked and indexed by a background worker, so a new file is
``running`` until the worker (after a configurable delay) marks it ``completed`` or ``failed``.

Two routes outside the API prefix serve tests: ``GET /_emulator/state`` and ``/_emulator/faults``.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import random
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from ipaddress import ip_address
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import unquote, urlsplit

import httpx

from . import search_text
from .chunking import chunk_sections
from .extract import SUPPORTED_EXTENSIONS, ExtractionError, extract_sections
from .store import EmulatorStore, StoredFile

log = logging.getLogger("memos_emulator")

DEFAULT_PREFIX = "/api/openmem/v1"
DEFAULT_PORT = 8090
DEFAULT_API_KEY = "local-memos-key"

MAX_FILES_PER_REQUEST = 20
MAX_FILE_BYTES = 100 * 1024 * 1024
MAX_REQUEST_FILE_BYTES = 300 * 1024 * 1024
MAX_MEMORY_LIMIT = 25
MAX_PAGE_SIZE = 100
FILE_TYPES = frozenset({"document", "doc", "skill"})

ENDPOINTS = (
    "/create/knowledgebase",
    "/add/knowledgebase-file",
    "/get/knowledgebase-file",
    "/delete/knowledgebase-file",
    "/delete/knowledgebase",
    "/search/memory",
)

_MIME_EXTENSIONS = {
    "application/pdf": "pdf",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/msword": "doc",
    "text/plain": "txt",
    "text/markdown": "md",
    "text/x-markdown": "md",
    "application/json": "json",
    "application/xml": "xml",
    "text/xml": "xml",
}


class QuietHTTPServer(ThreadingHTTPServer):
    """A threading server that does not print a traceback when a client hangs up mid-reply."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class ApiError(Exception):
    """A MemOS error reply: ``code`` in the envelope, usually with HTTP 200."""

    def __init__(self, code: int, message: str, http_status: int = HTTPStatus.OK) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.http_status = http_status


@dataclass
class EmulatorConfig:
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    prefix: str = DEFAULT_PREFIX
    # API key -> MemOS project; every KB belongs to the project of the key that created it.
    api_keys: Mapping[str, str] = field(default_factory=lambda: {DEFAULT_API_KEY: "default"})
    db_path: Path | None = None
    processing_delay: float = 1.0
    kb_quota: int | None = None
    fetch_timeout: float = 30.0
    # MemOS's documented limits; tests may lower them to exercise the checks cheaply.
    max_file_bytes: int = MAX_FILE_BYTES
    max_request_file_bytes: int = MAX_REQUEST_FILE_BYTES

    @property
    def max_body_bytes(self) -> int:
        """Base64 inflates by 4/3; a body much larger than the request limit is refused unread."""
        return self.max_request_file_bytes * 4 // 3 + 1024 * 1024


@dataclass
class Fault:
    endpoint: str
    code: int | None = None
    http_status: int | None = None
    latency_ms: int | None = None
    times: int | None = None
    probability: float | None = None


@dataclass(frozen=True)
class _FileSpec:
    name: str
    type: str
    content: bytes | None
    url: str | None


def _opt(body: Mapping[str, Any], key: str) -> Any:
    """A field's value, with ``null`` treated as absent (as MemOS does)."""
    return body.get(key)


def _required_str(body: Mapping[str, Any], key: str) -> str:
    value = _opt(body, key)
    if value is None or (isinstance(value, str) and not value.strip()):
        raise ApiError(40002, f"required parameter missing: {key}")
    if not isinstance(value, str):
        raise ApiError(40000, f"parameter {key} must be a string")
    return value


def _int_in(body: Mapping[str, Any], key: str, default: int, low: int, high: int) -> int:
    value = _opt(body, key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ApiError(40000, f"parameter {key} must be an integer in {low}..{high}")
    return value


def _str_list(body: Mapping[str, Any], key: str) -> list[str] | None:
    value = _opt(body, key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ApiError(40000, f"parameter {key} must be a list of strings")
    return value


class MemosEmulator:
    """The emulator: an HTTP server on loopback, a processing worker and a SQLite store."""

    def __init__(self, config: EmulatorConfig | None = None) -> None:
        self.config = config or EmulatorConfig()
        self.prefix = "/" + self.config.prefix.strip("/") if self.config.prefix.strip("/") else ""
        self._tmpdir: tempfile.TemporaryDirectory | None = None
        db_path = self.config.db_path
        if db_path is None:
            self._tmpdir = tempfile.TemporaryDirectory(prefix="memos-emulator-")
            db_path = Path(self._tmpdir.name) / "memos.sqlite3"
        self.store = EmulatorStore(db_path)
        self._faults: list[Fault] = []
        self._calls: Counter[str] = Counter()
        self._state_lock = threading.Lock()
        self._work = threading.Condition()
        self._stopping = threading.Event()
        self._random = random.Random()  # noqa: S311 - fault sampling, not security
        self._routes: dict[str, Callable[[str, dict[str, Any]], Any]] = {
            "/create/knowledgebase": self._create_kb,
            "/add/knowledgebase-file": self._add_files,
            "/get/knowledgebase-file": self._get_files,
            "/delete/knowledgebase-file": self._delete_files,
            "/delete/knowledgebase": self._delete_kb,
            "/search/memory": self._search,
        }
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
        for target in (self._httpd.serve_forever, self._process_loop):
            thread = threading.Thread(target=target, name=f"memos-emulator-{target.__name__}", daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self) -> None:
        self._stopping.set()
        with self._work:
            self._work.notify_all()
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
        return {"knowledge_bases": self.store.snapshot(), "calls": calls}

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
        """Forget every KB, file, fault and call count."""
        with self._state_lock:
            self._faults.clear()
            self._calls.clear()
        self.store.reset()

    # -- request pipeline ------------------------------------------------------------------------

    def handle_api(self, endpoint: str, headers: Mapping[str, str], raw: bytes) -> tuple[int, dict[str, Any]]:
        """One API call: count it, apply an injected fault, authenticate, validate, run."""
        with self._state_lock:
            self._calls[endpoint] += 1
        fault = self._take_fault(endpoint)
        if fault is not None and fault.latency_ms:
            time.sleep(fault.latency_ms / 1000)
        if fault is not None and (fault.code is not None or fault.http_status is not None):
            status = fault.http_status or HTTPStatus.OK
            code = fault.code if fault.code is not None else _code_for_status(status)
            return status, _envelope(code, None, "injected fault")
        try:
            project = self._authenticate(headers)
            try:
                body = json.loads(raw) if raw else None
            except (UnicodeDecodeError, json.JSONDecodeError):
                raise ApiError(40000, "request body is not valid JSON", HTTPStatus.BAD_REQUEST) from None
            if not isinstance(body, dict):
                raise ApiError(40000, "request body must be a JSON object", HTTPStatus.BAD_REQUEST)
            data = self._routes[endpoint](project, body)
        except ApiError as err:
            return err.http_status, _envelope(err.code, None, err.message)
        except Exception:
            log.exception("emulator error on %s", endpoint)
            return HTTPStatus.OK, _envelope(50000, None, "internal error")
        return HTTPStatus.OK, _envelope(0, data, "ok")

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

    def _authenticate(self, headers: Mapping[str, str]) -> str:
        value = headers.get("authorization", "")
        scheme, _, key = value.partition(" ")
        if not value or scheme.lower() != "token" or not key.strip():
            raise ApiError(40100, "API key missing", HTTPStatus.UNAUTHORIZED)
        project = self.config.api_keys.get(key.strip())
        if project is None:
            raise ApiError(40132, "API key invalid or expired", HTTPStatus.UNAUTHORIZED)
        return project

    def _linked_kb(self, project: str, kb_id: str) -> None:
        kb = self.store.get_kb(kb_id)
        if kb is None:
            raise ApiError(50120, "knowledge base does not exist")
        if kb.project != project or not kb.linked:
            raise ApiError(50123, "knowledge base is not linked to this project")

    # -- endpoints -------------------------------------------------------------------------------

    def _create_kb(self, project: str, body: dict[str, Any]) -> dict[str, Any]:
        name = _required_str(body, "knowledgebase_name")
        description = _opt(body, "knowledgebase_description")
        if description is not None and not isinstance(description, str):
            raise ApiError(40000, "knowledgebase_description must be a string")
        quota = self.config.kb_quota
        if quota is not None and self.store.count_linked_kbs(project) >= quota:
            raise ApiError(40304, "knowledge base quota exhausted")
        return {"id": self.store.create_kb(project, name, description).id}

    def _add_files(self, project: str, body: dict[str, Any]) -> list[dict[str, Any]]:
        kb_id = _required_str(body, "knowledgebase_id")
        items = _opt(body, "file")
        if items is None:
            raise ApiError(40002, "required parameter missing: file")
        if not isinstance(items, list):
            raise ApiError(40000, "file must be a list")
        if not items:
            raise ApiError(40003, "file list is empty")
        if len(items) > MAX_FILES_PER_REQUEST:
            raise ApiError(50103, f"at most {MAX_FILES_PER_REQUEST} files per request")
        self._linked_kb(project, kb_id)
        specs = [_parse_file(item, self.config.max_file_bytes) for item in items]
        if sum(len(s.content) for s in specs if s.content is not None) > self.config.max_request_file_bytes:
            raise ApiError(50105, "files in one request exceed 300 MB")
        ready_at = time.time() + self.config.processing_delay
        added = [
            self.store.add_file(
                kb_id,
                name=s.name,
                type_=s.type,
                size_bytes=len(s.content) if s.content is not None else None,
                content=s.content,
                url=s.url,
                ready_at=ready_at,
            )
            for s in specs
        ]
        with self._work:
            self._work.notify_all()
        return [
            {
                "id": f.id,
                "type": f.type,
                "name": f.name,
                "sizeMB": round((f.size_bytes or 0) / (1024 * 1024), 4),
                "status": f.status,
            }
            for f in added
        ]

    def _get_files(self, project: str, body: dict[str, Any]) -> dict[str, Any]:
        file_ids = _str_list(body, "file_ids")
        kb_id = _opt(body, "knowledgebase_id")
        if file_ids is not None and kb_id is not None:
            raise ApiError(40000, "give either file_ids or knowledgebase_id, not both")
        if file_ids is not None:
            if not file_ids:
                raise ApiError(40003, "file_ids is empty")
            files = self.store.files_by_ids(project, file_ids)
            return {"total": len(files), "file_detail_list": [_file_detail(f) for f in files]}
        if kb_id is None:
            raise ApiError(40002, "required parameter missing: file_ids or knowledgebase_id")
        kb_id = _required_str(body, "knowledgebase_id")
        self._linked_kb(project, kb_id)
        type_ = _opt(body, "type")
        if type_ is not None and type_ not in FILE_TYPES:
            raise ApiError(40000, "type must be document or skill")
        page = _int_in(body, "page", 1, 1, 1_000_000)
        page_size = _int_in(body, "page_size", 20, 1, MAX_PAGE_SIZE)
        total, files = self.store.list_files(kb_id, type_, page, page_size)
        return {
            "total": total,
            "page": page,
            "page_size": page_size,
            "file_detail_list": [_file_detail(f) for f in files],
        }

    def _delete_files(self, project: str, body: dict[str, Any]) -> dict[str, Any]:
        file_ids = _str_list(body, "file_ids")
        if file_ids is None:
            raise ApiError(40002, "required parameter missing: file_ids")
        if not file_ids:
            raise ApiError(40003, "file_ids is empty")
        self.store.delete_files(project, file_ids)
        return {"success": True}

    def _delete_kb(self, project: str, body: dict[str, Any]) -> dict[str, Any]:
        kb_id = _required_str(body, "knowledgebase_id")
        delete_all = _opt(body, "delete_all")
        if delete_all is not None and not isinstance(delete_all, bool):
            raise ApiError(40000, "delete_all must be a boolean")
        self._linked_kb(project, kb_id)
        if delete_all:
            self.store.delete_kb(kb_id)
        else:
            self.store.unlink_kb(kb_id)
        return {"success": True}

    def _search(self, project: str, body: dict[str, Any]) -> dict[str, Any]:
        _required_str(body, "user_id")
        query = _required_str(body, "query")
        kb_ids = _str_list(body, "knowledgebase_ids") or []
        limit = _int_in(body, "memory_limit_number", 9, 1, MAX_MEMORY_LIMIT)
        relativity = _opt(body, "relativity")
        if relativity is None:
            relativity = 0.45
        if (
            isinstance(relativity, bool)
            or not isinstance(relativity, int | float)
            or not 0 <= relativity <= 1
        ):
            raise ApiError(40012, "relativity must be between 0 and 1")
        if "all" in kb_ids:
            scope = self.store.linked_kb_ids(project)
        else:
            scope = list(dict.fromkeys(kb_ids))
            for kb_id in scope:
                self._linked_kb(project, kb_id)
        hits = self.store.search(scope, query, limit=limit, relativity=float(relativity))
        return {
            "memory_detail_list": [
                {
                    "id": hit.memory_id,
                    "memory_key": hit.title,
                    "memory_value": hit.text,
                    "memory_type": "LongTermMemory",
                    "create_time": hit.created_at,
                    "update_time": hit.created_at,
                    "conversation_id": "default_session",
                    "status": "activated",
                    "confidence": 0.99,
                    "tags": ["multimodal:file"],
                    "relativity": hit.relativity,
                }
                for hit in hits
            ],
            "preference_detail_list": [],
            "tool_memory_detail_list": [],
            "skill_detail_list": [],
            "preference_note": "",
        }

    # -- processing ------------------------------------------------------------------------------

    def _process_loop(self) -> None:
        while not self._stopping.is_set():
            pending, due = self.store.next_pending(time.time())
            if pending is None:
                with self._work:
                    # Bounded so a stop or a clock jump is noticed; add_files notifies sooner.
                    self._work.wait(timeout=1.0 if due is None else min(1.0, max(0.0, due - time.time())))
                continue
            file = pending.file
            try:
                data = pending.content if pending.content is not None else self._fetch(pending.url or "")
                sections = extract_sections(file.name, data)
                excerpts = chunk_sections(sections, file.name)
                self.store.complete_file(file.id, [(e.title, e.text) for e in excerpts])
            except ExtractionError as err:
                self.store.fail_file(file.id, str(err))
            except Exception:
                log.exception("processing %s failed", file.id)
                self.store.fail_file(file.id, "internal processing error")

    def _fetch(self, url: str) -> bytes:
        """Fetch a file by URL: loopback only (the emulator must never reach out), at most 100 MB."""
        host = urlsplit(url).hostname or ""
        try:
            loopback = host == "localhost" or ip_address(host).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            raise ExtractionError("the emulator only fetches URLs on loopback")
        chunks, size = [], 0
        try:
            with httpx.stream("GET", url, timeout=self.config.fetch_timeout) as resp:
                if resp.status_code != HTTPStatus.OK:
                    raise ExtractionError(f"fetching the file failed with HTTP {resp.status_code}")
                for chunk in resp.iter_bytes():
                    size += len(chunk)
                    if size > self.config.max_file_bytes:
                        raise ExtractionError("file exceeds 100 MB")
                    chunks.append(chunk)
        except httpx.HTTPError as err:
            raise ExtractionError(f"fetching the file failed: {type(err).__name__}") from None
        return b"".join(chunks)


def _parse_file(item: Any, max_file_bytes: int) -> _FileSpec:
    if not isinstance(item, dict):
        raise ApiError(40000, "each file must be an object")
    content = _required_str(item, "content")
    type_ = _opt(item, "type") or "document"
    if type_ not in FILE_TYPES:
        raise ApiError(40000, "file type must be document or skill")
    name = _opt(item, "name")
    if name is not None and not isinstance(name, str):
        raise ApiError(40000, "file name must be a string")
    url: str | None = None
    data: bytes | None = None
    mime = None
    if content.startswith(("http://", "https://")):
        url = content
        name = name or unquote(PurePosixPath(urlsplit(content).path).name)
    elif content.startswith("data:"):
        header, sep, payload = content.partition(",")
        if not sep or not header.endswith(";base64"):
            raise ApiError(40008, "data URL content must be base64")
        mime = header[5:].split(";")[0].lower()
        data = _b64decode(payload, 40008, max_file_bytes)
    else:
        data = _b64decode(content, 40009, max_file_bytes)
    if not name:
        name = "file." + _MIME_EXTENSIONS.get(mime or "", "bin")
    extension = PurePosixPath(name).suffix.lower().lstrip(".")
    if type_ != "skill" and extension not in SUPPORTED_EXTENSIONS:
        raise ApiError(
            50107, f"file format not allowed: .{extension}" if extension else "file has no extension"
        )
    if data is not None and len(data) > max_file_bytes:
        raise ApiError(50104, "a file exceeds 100 MB")
    return _FileSpec(name=name, type=type_, content=data, url=url)


def _b64decode(payload: str, code: int, max_file_bytes: int) -> bytes:
    if len(payload) > max_file_bytes * 4 // 3 + 4:
        raise ApiError(50104, "a file exceeds 100 MB")
    try:
        return base64.b64decode("".join(payload.split()), validate=True)
    except (binascii.Error, ValueError):
        raise ApiError(code, "invalid base64 content") from None


def _file_detail(f: StoredFile) -> dict[str, Any]:
    detail = {
        "id": f.id,
        "type": f.type,
        "name": f.name,
        "size": str(f.size_bytes) if f.size_bytes is not None else None,
        "status": f.status,
        "create_time": f.created_at,
        "update_time": f.updated_at,
    }
    if f.reason:
        detail["fail_reason"] = f.reason
    return detail


def _envelope(code: int, data: Any, message: str) -> dict[str, Any]:
    return {"code": code, "data": data, "message": message}


def _code_for_status(status: int) -> int:
    return {400: 40000, 401: 40130, 403: 40132, 429: 40309}.get(status, 50000)


def _make_handler(emulator: MemosEmulator) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
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
            if length > emulator.config.max_body_bytes:
                self.close_connection = True
                return None
            return self.rfile.read(length) if length else b""

        def do_POST(self) -> None:
            path = urlsplit(self.path).path
            if path.startswith("/_emulator/"):
                self._control("POST", path)
                return
            endpoint = path[len(emulator.prefix) :] if path.startswith(emulator.prefix + "/") else None
            if endpoint not in ENDPOINTS:
                self._read_body()
                self._reply(HTTPStatus.NOT_FOUND, _envelope(40400, None, "no such endpoint"))
                return
            raw = self._read_body()
            if raw is None:
                self._reply(HTTPStatus.OK, _envelope(50105, None, "request exceeds 300 MB"))
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
            if (method, path) == ("GET", "/_emulator/state"):
                self._reply(HTTPStatus.OK, emulator.state())
            elif (method, path) == ("GET", "/_emulator/faults"):
                self._reply(HTTPStatus.OK, {"faults": emulator.faults()})
            elif (method, path) == ("DELETE", "/_emulator/faults"):
                emulator.clear_faults()
                self._reply(HTTPStatus.OK, {"faults": []})
            elif (method, path) == ("POST", "/_emulator/reset"):
                emulator.reset()
                self._reply(HTTPStatus.OK, {"reset": True})
            elif (method, path) == ("POST", "/_emulator/faults"):
                try:
                    spec = json.loads(raw or b"{}")
                    emulator.add_fault(Fault(**spec))
                except (TypeError, ValueError) as err:
                    self._reply(HTTPStatus.BAD_REQUEST, {"error": str(err)})
                    return
                self._reply(HTTPStatus.CREATED, {"faults": emulator.faults()})
            else:
                self._reply(HTTPStatus.NOT_FOUND, {"error": "no such route"})

    return Handler
