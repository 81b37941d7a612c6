"""The local service's calls to the cloud with the cloud login, over kept-alive connections (a TLS
handshake per agent turn would cost more than everything else the service does): ``POST /recall`` for
the hooks, and whatever route the knowledge-base page asks for (``forward``).

``http.client`` rather than httpx keeps the service's start cheap; recall has no side effect, so a
request on a kept-alive connection the cloud had closed meanwhile is sent once more on a new one.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlsplit

MAX_IDLE_CONNECTIONS: Final = 4
MAX_REPLY_BYTES: Final = 1024 * 1024


@dataclass(frozen=True)
class CloudReply:
    """What the cloud answered: ``outcome`` is ``ok``, ``unauthorized``, ``unreachable``, ``cloud_error``
    or ``bad_reply``; ``context`` is the block (only for ``ok``); ``elapsed`` is seconds on the call."""

    outcome: str
    status: int | None
    context: str
    elapsed: float
    detail: str = ""


class CloudRecall:
    """``recall(token, query)`` against the cloud at ``base_url``."""

    def __init__(self, base_url: str, *, timeout: float = 3.5) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"the cloud URL must be http(s)://host[:port][/path], not {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port
        self._prefix = parts.path.rstrip("/")
        self._path = self._prefix + "/recall"
        self._timeout = timeout
        self._idle: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()

    def _connection(self) -> tuple[http.client.HTTPConnection, bool]:
        with self._lock:
            if self._idle:
                return self._idle.pop(), True
        if self._https:
            return http.client.HTTPSConnection(self._host, self._port, timeout=self._timeout), False
        return http.client.HTTPConnection(self._host, self._port, timeout=self._timeout), False

    def _release(self, connection: http.client.HTTPConnection) -> None:
        with self._lock:
            if len(self._idle) < MAX_IDLE_CONNECTIONS:
                self._idle.append(connection)
                return
        connection.close()

    def _post(self, token: str, body: bytes) -> tuple[int, bytes]:
        return self._send("POST", self._path, token, body, {}, retry=True)

    def _send(
        self, method: str, path: str, token: str, body: bytes | None, extra: dict[str, str], *, retry: bool
    ) -> tuple[int, bytes]:
        headers = {
            "Authorization": f"Bearer {token}",
            "Accept": "application/json",
            **extra,
        }
        if body is not None:
            headers["Content-Type"] = "application/json"
        for attempt in range(2):
            connection, reused = self._connection()
            try:
                connection.request(method, path, body=body, headers=headers)
                response = connection.getresponse()
                data = response.read(MAX_REPLY_BYTES + 1)
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                connection.close()
                if reused and attempt == 0 and retry:
                    continue  # the cloud closed an idle connection: once more on a new one
                raise
            except BaseException:
                connection.close()
                raise
            if response.will_close or len(data) > MAX_REPLY_BYTES:
                connection.close()
            else:
                self._release(connection)
            return response.status, data
        raise ConnectionError("unreachable")  # not reached: the second attempt returns or raises

    def recall(self, token: str, query: str) -> CloudReply:
        started = time.perf_counter()
        body = json.dumps({"query": query}).encode("utf-8")
        try:
            status, data = self._post(token, body)
        except (OSError, http.client.HTTPException) as err:
            return CloudReply("unreachable", None, "", time.perf_counter() - started, type(err).__name__)
        elapsed = time.perf_counter() - started
        if status in (401, 403):
            return CloudReply("unauthorized", status, "", elapsed, "the cloud refused the login")
        if status != 200:
            return CloudReply("cloud_error", status, "", elapsed, _error_code(data))
        try:
            reply: Any = json.loads(data)
        except ValueError:
            return CloudReply("bad_reply", status, "", elapsed, "not JSON")
        context = reply.get("context") if isinstance(reply, dict) else None
        if not isinstance(context, str):
            return CloudReply("bad_reply", status, "", elapsed, "no context in the reply")
        return CloudReply("ok", status, context, elapsed)

    def forward(
        self, token: str, method: str, target: str, body: bytes | None, headers: dict[str, str]
    ) -> tuple[int, bytes]:
        """One page request sent on to the cloud as ``method target`` (path and query, already checked);
        its status and body. Unreachable: ``(502, ...)``. Sent once more on a fresh connection only when
        repeating it is harmless (no POST without an ``Idempotency-Key``)."""
        retry = method != "POST" or "Idempotency-Key" in headers
        try:
            return self._send(method, self._prefix + target, token, body, headers, retry=retry)
        except (OSError, http.client.HTTPException) as err:
            detail = json.dumps(
                {
                    "error": {
                        "code": "cloud_unreachable",
                        "message": f"the cloud did not answer ({type(err).__name__})",
                    }
                }
            )
            return 502, detail.encode("utf-8")

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()


def _error_code(data: bytes) -> str:
    try:
        error = json.loads(data).get("error") or {}
        return str(error.get("code") or "")[:100]
    except (ValueError, AttributeError):
        return ""
