"""The client's one HTTP client: ``HttpClient`` calls the cloud (the SDK, the desktop service) over
kept-alive connections; ``classify`` says what a reply came to and ``read_error`` reads the error format,
for every caller (the desktop service's callers too). docs/architecture.md, "Client"."""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from memmy_kb_client.replies import ErrorBody, ErrorResponse

# What a call came to (``CallResult.outcome``).
OK: Final = "ok"
UNAUTHORIZED: Final = "unauthorized"  # 401 or 403: the login was refused
UNREACHABLE: Final = "unreachable"  # no connection, or it broke
TIMEOUT: Final = "timeout"
CLOUD_ERROR: Final = "cloud_error"  # any other status but 2xx
BAD_REPLY: Final = "bad_reply"  # a 2xx whose body is not JSON

MAX_IDLE_CONNECTIONS: Final = 4
_JSON: Final = "application/json"


class TransportError(OSError):
    """The reply could not be read (``http.client``'s own errors, such as a truncated body, as an
    ``OSError`` like the connection's own failures)."""


@dataclass(frozen=True)
class ApiError:
    """A reply in the error format ``{"error": {"code", "message", "details"?}}``."""

    status: int
    code: str
    message: str
    details: Any = None

    def as_json(self) -> ErrorResponse:
        """The error in its format again, to pass it on."""
        error: ErrorBody = {"code": self.code, "message": self.message}
        if self.details is not None:
            error["details"] = self.details
        return {"error": error}


def read_error(status: int, data: bytes, reason: str = "") -> ApiError:
    """The error a non-2xx reply carries; one not in the error format (a gateway's ``{"message"}``, HTML)
    is ``http_error`` with what it says, else ``reason``."""
    try:
        body = json.loads(data) if data else None
    except ValueError:
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        message = error.get("message")
        return ApiError(
            status, str(error.get("code") or "http_error"), str(message or reason), error.get("details")
        )
    message = body.get("message") if isinstance(body, dict) else None
    return ApiError(status, "http_error", str(message or reason))


@dataclass(frozen=True)
class CallResult:
    """One call: its ``outcome``, the status, the JSON ``answer`` (``ok``), the ``error`` (any other
    status), the seconds it took and a short ``detail`` for a log or a status line."""

    outcome: str
    status: int | None = None
    answer: Any = None
    error: ApiError | None = None
    elapsed: float = 0.0
    detail: str = ""


def classify(status: int, data: bytes, elapsed: float = 0.0, reason: str = "") -> CallResult:
    """What a reply came to: ``ok`` (2xx; an empty body is ``{}``), ``bad_reply`` (2xx, not JSON),
    ``unauthorized`` (401, 403) or ``cloud_error``, the last two with the error read."""
    if 200 <= status < 300:
        if not data:
            return CallResult(OK, status, {}, elapsed=elapsed)
        try:
            return CallResult(OK, status, json.loads(data), elapsed=elapsed)
        except ValueError:
            return CallResult(BAD_REPLY, status, elapsed=elapsed, detail="not JSON")
    error = read_error(status, data, reason)
    outcome = UNAUTHORIZED if status in (401, 403) else CLOUD_ERROR
    return CallResult(outcome, status, error=error, elapsed=elapsed, detail=error.code[:100])


def failed(err: BaseException, elapsed: float = 0.0) -> CallResult:
    """A call that got no reply: ``timeout`` or ``unreachable``."""
    return CallResult(
        TIMEOUT if isinstance(err, TimeoutError) else UNREACHABLE, elapsed=elapsed, detail=type(err).__name__
    )


@dataclass(frozen=True)
class Reply:
    status: int
    data: bytes
    reason: str = ""


Connect = Callable[[], http.client.HTTPConnection]


class HttpClient:
    """Requests to one base URL (``http(s)://host[:port][/prefix]``) over kept-alive connections, at most
    ``max_idle`` of them idle. A request sent on an idle connection the server had closed meanwhile is
    sent once more on a new one when ``retry`` allows. ``connect`` opens a connection (tests hand in
    one that answers in-process). No proxy setting of the environment is read."""

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float,
        max_idle: int = MAX_IDLE_CONNECTIONS,
        max_reply_bytes: int | None = None,
        connect: Connect | None = None,
    ) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"the URL must be http(s)://host[:port][/path], not {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self.prefix = parts.path.rstrip("/")
        self._timeout = timeout
        self._max_idle = max_idle
        self._max_reply = max_reply_bytes
        self._connect = connect or self._opener(parts.scheme == "https", parts.hostname, parts.port)
        self._idle: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()

    def _opener(self, https: bool, host: str, port: int | None) -> Connect:
        kind = http.client.HTTPSConnection if https else http.client.HTTPConnection
        return lambda: kind(host, port, timeout=self._timeout)

    def _take(self) -> tuple[http.client.HTTPConnection, bool]:
        with self._lock:
            if self._idle:
                return self._idle.pop(), True
        return self._connect(), False

    def _give_back(self, connection: http.client.HTTPConnection) -> None:
        with self._lock:
            if len(self._idle) < self._max_idle:
                self._idle.append(connection)
                return
        connection.close()

    def send(
        self,
        method: str,
        target: str,
        *,
        body: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        retry: bool | None = None,
    ) -> Reply:
        """``method`` ``prefix + target`` once (twice on a dropped idle connection); raises ``OSError``
        when no reply could be read. ``retry`` defaults to what repeating safely allows: anything but a
        POST without an ``Idempotency-Key``."""
        sent = dict(headers or {})
        if retry is None:
            retry = method != "POST" or "Idempotency-Key" in sent
        for attempt in range(2):
            connection, reused = self._take()
            try:
                connection.request(method, self.prefix + target, body=body, headers=sent)
                response = connection.getresponse()
                limit = -1 if self._max_reply is None else self._max_reply + 1
                data = response.read(limit) if limit >= 0 else response.read()
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                connection.close()
                if reused and attempt == 0 and retry:
                    continue  # the server closed an idle connection: once more on a new one
                raise
            except http.client.HTTPException as err:
                connection.close()
                raise TransportError(f"{type(err).__name__}: {err}") from err
            except BaseException:
                connection.close()
                raise
            too_long = self._max_reply is not None and len(data) > self._max_reply
            if response.will_close or too_long:
                connection.close()
            else:
                self._give_back(connection)
            return Reply(response.status, data, response.reason)
        raise ConnectionError("no reply")  # not reached: the second attempt returns or raises

    def send_json(
        self,
        method: str,
        target: str,
        *,
        json_body: Any = None,
        headers: Mapping[str, str] | None = None,
        retry: bool | None = None,
    ) -> Reply:
        """``send`` with ``json_body`` as JSON (none when it is None), asking for JSON."""
        sent = {"Accept": _JSON, **(headers or {})}
        body = None
        if json_body is not None:
            body = json.dumps(json_body, ensure_ascii=False).encode("utf-8")
            sent["Content-Type"] = _JSON
        return self.send(method, target, body=body, headers=sent, retry=retry)

    def call(
        self,
        method: str,
        target: str,
        *,
        json_body: Any = None,
        headers: Mapping[str, str] | None = None,
        retry: bool | None = None,
    ) -> CallResult:
        """``send_json``, classified; never raises for the network (``unreachable``, ``timeout``)."""
        started = time.perf_counter()
        try:
            reply = self.send_json(method, target, json_body=json_body, headers=headers, retry=retry)
        except OSError as err:
            return failed(err, time.perf_counter() - started)
        return classify(reply.status, reply.data, time.perf_counter() - started, reply.reason)

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()
