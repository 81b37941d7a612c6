"""What the desktop service's proof costs a hook, which runs before every agent turn.

Before it sends the hook token and the prompt, the hook asks ``GET /proof`` on the same connection and
checks the HMAC (``memmy_kb_client.home.proof``). Measured against a desktop service in-process,
logged out (so no cloud call: only the hook's side and the service are timed):

* the exchange: the median of the hook's ``raw_request.post_proven`` (challenge, then ``POST
  /hook/recall``, on one new connection) against the one ``POST /hook/recall`` on a new connection the
  hook sent before;
* the import: what ``hmac`` (with ``hashlib`` and OpenSSL's ``_hashlib``) adds to the hook's imports, the
  least of fresh interpreters' ``-X importtime`` (the least: other work on a shared machine only adds).

Run alone: ``python -m bench.hook_proof``.
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REQUESTS = 200
WARMUP = 5
IMPORT_RUNS = 9


def _post_without_proof(port: int, token: str, body: bytes) -> None:
    """The hook's request before the proof: one POST on a new connection, read to its end."""
    head = (
        f"POST /hook/recall HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode("ascii")
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(head + body)
        while sock.recv(65536):
            pass


def _median_ms(call: object, requests: int) -> float:
    assert callable(call)
    for _ in range(WARMUP):
        call()
    times = []
    for _ in range(requests):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def exchange(requests: int = REQUESTS) -> dict[str, float]:
    """Median ms per recall with the proof and without it (each on a new connection, as the hook does)."""
    from memmy_kb_client.agents.hook import RECALL_PATH
    from memmy_kb_client.desktop.server import DesktopConfig, DesktopService
    from memmy_kb_client.home.raw_request import post_proven

    os.environ.setdefault("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    with tempfile.TemporaryDirectory(prefix="memmy-hook-proof-") as home:
        config = DesktopConfig(state_dir=str(Path(home) / "desktop"), cloud_url="http://127.0.0.1:9", port=0)
        with DesktopService(config).start() as service:
            port, token = service.port, service.state.hook_token
            body = json.dumps({"query": "差旅报销", "agent": "claude-code"}).encode()

            def proven() -> None:
                status, _ = post_proven(port, token, "hook", RECALL_PATH, body, time.monotonic() + 5)
                assert status == 200

            with_proof = _median_ms(proven, requests)
            without = _median_ms(lambda: _post_without_proof(port, token, body), requests)
    return {"with_proof_ms": with_proof, "without_proof_ms": without, "added_ms": with_proof - without}


def import_cost(runs: int = IMPORT_RUNS) -> float:
    """The least ms that ``import hmac`` added after the hook's other imports, in a fresh interpreter."""
    script = "import json, os, socket, threading; import hmac"
    costs = []
    for _ in range(runs):
        done = subprocess.run(  # noqa: S603 - our own interpreter
            [sys.executable, "-X", "importtime", "-c", script], capture_output=True, text=True, check=True
        )
        for line in done.stderr.splitlines():
            parts = [part.strip() for part in line.split("|")]
            if len(parts) == 3 and parts[2] == "hmac":
                costs.append(int(parts[1]) / 1000)
    return min(costs)


def run(requests: int = REQUESTS) -> dict[str, float]:
    figures = {**exchange(requests), "import_hmac_ms": import_cost()}
    print(
        f"hook recall on a new connection: {figures['with_proof_ms']:.2f} ms with the proof, "
        f"{figures['without_proof_ms']:.2f} ms without (+{figures['added_ms']:.2f} ms, median of {requests}); "
        f"import hmac: +{figures['import_hmac_ms']:.1f} ms (least of {IMPORT_RUNS})",
        flush=True,
    )
    return figures


if __name__ == "__main__":
    run()
