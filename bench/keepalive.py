"""A kept-alive connection against a new connection per request, on each of our stdlib HTTP servers.

A server that writes a response's headers and body in two sends makes a kept-alive client wait for its
own delayed ACK (Nagle's algorithm holds the second send; about 40 ms on Linux) on every request after
the first, while a new connection per request hides it (the client ACKs at once at a connection's
start). Measured: the median time per request over one persistent connection and over a new connection
each time, against the desktop service (``POST /hook/recall``, logged out, so no cloud call), the local
gateway (a route to a trivial in-process function, no authorizer) and the MemOS emulator
(``GET /_emulator/faults``). Target: persistent <= 1.2x new.

Run alone: ``python -m bench.keepalive``.
"""

from __future__ import annotations

import http.client
import json
import os
import statistics
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REQUESTS = 200
WARMUP = 5
TARGET = 1.2

Request = tuple[str, str, bytes | None, dict[str, str]]  # method, path, body, headers

_TEMPLATE = """\
Resources:
  EchoFunction:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: functions/echo/
      Handler: app.lambda_handler
      Events:
        Echo:
          Type: HttpApi
          Properties:
            Method: GET
            Path: /echo
            Auth:
              Authorizer: NONE
"""
_ECHO = """\
import json


def lambda_handler(event, context):
    return {"statusCode": 200, "headers": {"content-type": "application/json"}, "body": json.dumps({"ok": True})}
"""


def _timed(connection: http.client.HTTPConnection, request: Request) -> float:
    method, path, body, headers = request
    started = time.perf_counter()
    connection.request(method, path, body=body, headers=headers)
    response = connection.getresponse()
    response.read()
    elapsed = time.perf_counter() - started
    if response.status != 200:
        raise RuntimeError(f"{method} {path}: {response.status}")
    return elapsed


def measure(port: int, request: Request, requests: int = REQUESTS) -> dict[str, float]:
    """Median ms per request over one kept-alive connection and over a new connection each time."""
    persistent = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        for _ in range(WARMUP):
            _timed(persistent, request)
        kept = [_timed(persistent, request) for _ in range(requests)]
    finally:
        persistent.close()
    new = []
    for _ in range(requests):
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        try:
            new.append(_timed(connection, request))
        finally:
            connection.close()
    kept_ms, new_ms = statistics.median(kept) * 1000, statistics.median(new) * 1000
    return {"persistent_ms": kept_ms, "new_ms": new_ms, "ratio": kept_ms / new_ms}


@contextmanager
def desktop_service(home: Path) -> Iterator[tuple[int, Request]]:
    from memmy_kb_client.desktop.server import DesktopConfig, DesktopService

    os.environ.setdefault("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    # Logged out: recall answers an empty block at once, so only the service itself is timed.
    config = DesktopConfig(state_dir=str(home / "desktop"), cloud_url="http://127.0.0.1:9", port=0)
    with DesktopService(config).start() as service:
        body = json.dumps({"query": "差旅报销", "agent": "claude-code"}).encode()
        headers = {"Authorization": f"Bearer {service.state.hook_token}", "Content-Type": "application/json"}
        yield service.port, ("POST", "/hook/recall", body, headers)


@contextmanager
def local_gateway(home: Path) -> Iterator[tuple[int, Request]]:
    from memmy_local import tokens
    from memmy_local.gateway.authorizer import JwtAuthorizer
    from memmy_local.gateway.server import Gateway, GatewayConfig

    (home / "functions" / "echo").mkdir(parents=True)
    (home / "template.yaml").write_text(_TEMPLATE, encoding="utf-8")
    (home / "functions" / "echo" / "app.py").write_text(textwrap.dedent(_ECHO), encoding="utf-8")
    authorizer = JwtAuthorizer(tokens.load_signing_key(home / "key.pem"), tokens.DEFAULT_ISSUER, "memmy-kb")
    config = GatewayConfig(template_path=home / "template.yaml", authorizer=authorizer, port=0)
    with Gateway(config) as gateway:
        yield gateway.port, ("GET", "/echo", None, {})


@contextmanager
def memos_emulator(home: Path) -> Iterator[tuple[int, Request]]:
    from memmy_local.memos_emulator.config import EmulatorConfig
    from memmy_local.memos_emulator.server import MemosEmulator

    with MemosEmulator(EmulatorConfig(port=0, db_path=home / "memos.sqlite3")) as emulator:
        yield emulator.port, ("GET", "/_emulator/faults", None, {})


SERVERS: dict[str, Callable[[Path], Any]] = {
    "desktop service, POST /hook/recall": desktop_service,
    "local gateway, GET to an in-process function": local_gateway,
    "MemOS emulator, GET /_emulator/faults": memos_emulator,
}


def run(requests: int = REQUESTS) -> dict[str, dict[str, float]]:
    results = {}
    for name, server in SERVERS.items():
        with (
            tempfile.TemporaryDirectory(prefix="memmy-keepalive-") as home,
            server(Path(home)) as (port, request),
        ):
            results[name] = figures = measure(port, request, requests)
        verdict = "ok" if figures["ratio"] <= TARGET else "over"
        print(
            f"{name}: persistent {figures['persistent_ms']:.2f} ms, new {figures['new_ms']:.2f} ms per request"
            f" (median of {requests}); ratio {figures['ratio']:.2f} (target <= {TARGET}: {verdict})",
            flush=True,
        )
    return results


if __name__ == "__main__":
    run()
