"""Every log line a function writes, captured, and a scanner that finds a secret in any form a log could
carry it, for the log-hygiene tests (tests/integration/logs/test_log_hygiene.py).

``capture_logs`` (a fixture) sets logging to DEBUG as advanced logging controls set it on Lambda and
captures the Powertools Logger's stream, what is printed and every stdlib record, each line attributed
to the function running (``LogCapture.running``). ``scan`` searches the lines for every secret in each of
its ``forms``: raw, JSON-escaped once or twice, URL-encoded, base64, Python's repr.
"""


from __future__ import annotations

import base64
import io
import json
import logging
import threading
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from typing import Any, cast
from urllib.parse import quote, quote_plus

import pytest

from memmy_kb import observability

# Loggers of what stands in for AWS and MemOS here (moto runs in the function's thread); no Lambda has them.
TEST_ONLY_LOGGERS = {"moto", "werkzeug", "memos_emulator", "memmy_local", "jieba"}


# -- capture ------------------------------------------------------------------------------------------

_STANDARD_ATTRS = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


@dataclass(frozen=True)
class Line:
    function: str
    source: str  # "powertools" (the function's JSON Logger) or the stdlib logger's name
    text: str


def render(record: logging.LogRecord) -> str:
    """A record as any formatter could print it: the message, the exception, the stack, every extra field."""
    try:
        parts = [record.name, record.levelname, record.getMessage()]
    except Exception:  # a broken format string still shows its pieces
        parts = [record.name, record.levelname, repr(record.msg), repr(record.args)]
    if record.exc_info and record.exc_info[1] is not None:
        parts.append("".join(traceback.format_exception(*record.exc_info)))
    if record.exc_text:
        parts.append(record.exc_text)
    if record.stack_info:
        parts.append(record.stack_info)
    extras = {key: value for key, value in vars(record).items() if key not in _STANDARD_ATTRS}
    if extras:
        parts.append(json.dumps(extras, default=repr, ensure_ascii=False))
    return " ".join(parts)


@dataclass
class LogCapture:
    """Everything the functions log while they run, by function."""

    lines: list[Line] = field(default_factory=list)
    function: str | None = None
    thread: int | None = None

    @contextmanager
    def running(self, function: str) -> Iterator[None]:
        """While ``function`` runs, its records, and whatever it prints (Metrics' EMF lines), are its lines."""
        previous = (self.function, self.thread)
        self.function, self.thread = function, threading.get_ident()
        try:
            with redirect_stdout(_Stream(self, "stdout")), redirect_stderr(_Stream(self, "stderr")):
                yield
        finally:
            self.function, self.thread = previous

    def _active(self) -> str | None:
        # Only the function's own thread: the emulator serves in its own thread of this process.
        return self.function if self.thread == threading.get_ident() else None

    def add(self, source: str, text: str) -> None:
        function = self._active()
        if function is not None:
            self.lines.append(Line(function, source, text))

    def per_function(self) -> Counter[str]:
        return Counter(line.function for line in self.lines)


class _RootHandler(logging.Handler):
    """What the Lambda runtime's handler on the root logger would print: every stdlib record."""

    def __init__(self, capture: LogCapture) -> None:
        super().__init__(logging.DEBUG)
        self.capture = capture

    def emit(self, record: logging.LogRecord) -> None:
        service = observability.logger.service
        if record.name == service or record.name.startswith(service + "."):
            return  # the Powertools Logger prints these itself (and filters them out of the root's handlers)
        if record.name.split(".")[0] in TEST_ONLY_LOGGERS:
            return
        self.capture.add(record.name, render(record))


class _Stream(io.TextIOBase):
    """Stands in for stdout: the Powertools Logger's (each write is one JSON line), or the function's own."""

    def __init__(self, capture: LogCapture, source: str) -> None:
        self.capture, self.source = capture, source

    def write(self, text: str) -> int:
        if text.strip():
            self.capture.add(self.source, text)
        return len(text)


@pytest.fixture
def capture_logs(monkeypatch: pytest.MonkeyPatch) -> Iterator[LogCapture]:
    """Logging at DEBUG as advanced logging controls set it on Lambda (the variables, the Powertools Logger,
    the root logger), and everything captured: the Powertools Logger's stream and a handler on the root."""
    monkeypatch.setenv("AWS_LAMBDA_LOG_LEVEL", "DEBUG")
    monkeypatch.setenv("POWERTOOLS_LOG_LEVEL", "DEBUG")
    capture = LogCapture()
    powertools = observability.logger
    root = logging.getLogger()
    root_handler = _RootHandler(capture)
    previous_level, previous_root_level = powertools.log_level, root.level
    handler = cast("logging.StreamHandler[Any]", powertools.logger_handler)
    previous_stream = handler.setStream(_Stream(capture, "powertools"))
    powertools.setLevel("DEBUG")
    root.setLevel(logging.DEBUG)
    root.addHandler(root_handler)
    try:
        yield capture
    finally:
        root.removeHandler(root_handler)
        root.setLevel(previous_root_level)
        powertools._logger.setLevel(previous_level)
        handler.setStream(previous_stream)


# -- the scanner --------------------------------------------------------------------------------------

MIN_NEEDLE = 6


def _json(text: str) -> str:
    return json.dumps(text)[1:-1]


def _json_utf8(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)[1:-1]


def encodings(secret: str) -> dict[str, str]:
    """The secret as a program could put it in a log line: as is, escaped for JSON, a URL or a repr,
    or in base64 (which finds a secret encoded on its own, or at the start of what was encoded: the
    documents' base64 is kept from their first byte for that reason)."""
    data = secret.encode()
    return {
        "raw": secret,
        "json": _json(secret),
        "json-utf8": _json_utf8(secret),
        "url": quote(secret, safe=""),
        "url-plus": quote_plus(secret),
        "url-path": quote(secret),
        "base64": base64.b64encode(data).decode().rstrip("="),
        "base64url": base64.urlsafe_b64encode(data).decode().rstrip("="),
        "repr": repr(secret)[1:-1],
        "bytes-repr": repr(data)[2:-1],
    }


# What a JSON log line does to a string it carries once or twice (a body logged inside a JSON field).
ESCAPES: dict[str, Callable[[str], str]] = {
    "": lambda text: text,
    "+json": _json,
    "+json-utf8": _json_utf8,
    "+json+json": lambda text: _json(_json(text)),
    "+json-utf8+json": lambda text: _json(_json_utf8(text)),
    "+json-utf8+json-utf8": lambda text: _json_utf8(_json_utf8(text)),
}


def forms(secret: str) -> dict[str, str]:
    """Every distinct way a log line could carry the secret: each encoding, as is or escaped by JSON."""
    unique: dict[str, str] = {}
    for name, encoded in encodings(secret).items():
        for escape, apply in ESCAPES.items():
            value = apply(encoded)
            if len(value) >= MIN_NEEDLE and value not in unique.values():
                unique[name + escape] = value
    return unique


@dataclass(frozen=True)
class Leak:
    secret: str
    form: str
    line: Line

    def __str__(self) -> str:
        text = self.line.text if len(self.line.text) < 400 else self.line.text[:400] + "..."
        return f"{self.secret} ({self.form}) in {self.line.function}/{self.line.source}: {text}"


def scan(lines: list[Line], secrets: dict[str, str]) -> list[Leak]:
    needles = [
        (label, form, value) for label, secret in secrets.items() for form, value in forms(secret).items()
    ]
    found = []
    for line in lines:
        seen: set[str] = set()
        for label, form, value in needles:
            if label not in seen and value in line.text:
                seen.add(label)
                found.append(Leak(label, form, line))
    return found


def report(leaks: list[Leak]) -> str:
    """Which secret leaked, in which form, through which logger of which function; then a few lines."""
    by_kind = Counter((leak.secret, leak.form, leak.line.function, leak.line.source) for leak in leaks)
    summary = [
        f"{count:5} x {secret} ({form}) in {function}/{source}"
        for (secret, form, function, source), count in sorted(by_kind.items())
    ]
    return "\n".join([f"{len(leaks)} log lines leak:", *summary, "for example:", *map(str, leaks[:5])])


def content_secrets(name: str, text: str) -> dict[str, str]:
    """A document's secrets: each line of body text (an excerpt is made of them), and its base64 (data URL)."""
    found = {
        f"{name} line {number}": line.strip()
        for number, line in enumerate(text.splitlines(), 1)
        if line.strip() and not line.startswith("#")
    }
    found[f"{name} base64"] = base64.b64encode(text.encode()).decode()[:48]
    return found
