"""Recall latency with 1, 4 and 8 KBs in the caller's scope, each MemOS search taking 200 ms.

Attributed recall searches each KB of the scope on its own (``memmy_kb.domain.recall.search``): up to
``RECALL_MAX_SEARCHES`` (4) searches at once, the KBs past that searched as one group. With MemOS slow
(the emulator holds every ``/search/memory`` for ``LATENCY_MS`` before answering: a latency-only fault),
a recall over 8 KBs should take about as long as one over 1 KB: the searches overlap, each on its own
kept-alive connection. Target: 8 KBs at most ``TARGET`` x 1 KB.

The real recall handler runs in-process on moto (provisioned from template.yaml, with the local stack's
partition-query patch, as ``bench.recall_scale``). MemOS is a shim on loopback (``--memos shim``, the
default) that answers each ``/search/memory`` after ``LATENCY_MS`` with one excerpt per KB searched, or the
MemOS emulator (``--memos emulator``) with every search held as long by a latency-only fault. The shim is
the figure: the emulator searches its SQLite index in this process, under our interpreter's lock and its
own store lock, so its four searches' work (about 8 ms each) runs one after another, where MemOS's servers
run them side by side. Three callers own 1, 4 and 8 KBs; their recalls are interleaved, round by round, so
that the shared machine's noise hits them alike. The figure is each scope's median; the searches and the
connections MemOS accepted during the timed recalls are counted at MemOS.

``python -m bench.recall_fanout [--memos shim|emulator]``
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from bench.recall_scale import EXCERPT, MEMOS_KEY, QUERY, kb_items, quiet_environment, write_items

SCOPES = (1, 4, 8)
LATENCY_MS = 200
TARGET = 1.3
ROUNDS = 15
WARMUP = 2


class _Shim(ThreadingHTTPServer):
    """MemOS's search, answered after ``latency_ms``: one excerpt per KB id asked for; nothing else."""

    daemon_threads = True

    def __init__(self, latency_ms: int) -> None:
        super().__init__(("127.0.0.1", 0), _ShimHandler)
        self.latency_ms = latency_ms
        self.counts: Counter[str] = Counter()
        self.lock = threading.Lock()

    def count(self, what: str) -> None:
        with self.lock:
            self.counts[what] += 1

    def get_request(self) -> tuple[socket.socket, Any]:
        connection = super().get_request()
        self.count("connections")
        return connection


class _ShimHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _Shim

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
        if not self.path.endswith("/search/memory"):
            self.send_error(404)
            return
        self.server.count("/search/memory")
        time.sleep(self.server.latency_ms / 1000)
        hits = [
            {"memory_key": f"MemOS 开源VS商业化 {kb}", "memory_value": EXCERPT, "relativity": 0.9}
            for kb in body.get("knowledgebase_ids", [])
        ]
        data = json.dumps({"code": 0, "message": "ok", "data": {"memory_detail_list": hits}}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@contextmanager
def _memos(kind: str, latency_ms: int) -> Iterator[tuple[str, Any, Any]]:
    """(base URL, create a KB -> its MemOS id, counts so far) of the shim or the emulator."""
    if kind == "shim":
        shim = _Shim(latency_ms)
        threading.Thread(target=shim.serve_forever, daemon=True).start()
        names = iter(range(1_000_000))
        try:
            yield (
                f"http://127.0.0.1:{shim.server_address[1]}/api/openmem/v1",
                lambda: f"memos-{next(names)}",
                shim.counts,
            )
        finally:
            shim.shutdown()
            shim.server_close()
        return
    from memmy_kb.adapters.memos.client import MemosClient
    from memmy_kb.adapters.memos.key import StaticApiKeyProvider
    from memmy_local.memos_emulator.config import EmulatorConfig
    from memmy_local.memos_emulator.server import Fault, MemosEmulator

    config = EmulatorConfig(port=0, api_keys={MEMOS_KEY: "memmy"}, processing_delay=0)
    with (
        MemosEmulator(config) as emulator,
        MemosClient(emulator.base_url, StaticApiKeyProvider(MEMOS_KEY)) as memos,
    ):

        def create() -> str:
            memos_id = memos.create_knowledgebase("memmy:bench")
            file = emulator.store.add_file(
                memos_id,
                name="f.md",
                type_="document",
                size_bytes=1,
                content=b"",
                url=None,
                ready_at=time.time() + 3600,
            )
            emulator.store.complete_file(file.id, [(f"MemOS 开源VS商业化 {memos_id}", EXCERPT)])
            return memos_id

        # Every search waits latency_ms at the emulator before it is answered.
        emulator.add_fault(Fault(endpoint="/search/memory", latency_ms=latency_ms))
        yield emulator.base_url, create, _EmulatorCounts(emulator)


class _EmulatorCounts:
    def __init__(self, emulator: Any) -> None:
        self._emulator = emulator

    def __getitem__(self, what: str) -> int:
        return int(self._emulator.state()["calls"].get(what, 0))  # connections are not counted: 0


def run(
    scopes: tuple[int, ...] = SCOPES,
    rounds: int = ROUNDS,
    latency_ms: int = LATENCY_MS,
    memos: str = "shim",
    attribution: str = "by_file",
) -> dict[str, Any]:
    """The figures of one plan: ``attribution`` ``by_file`` (one search per backend, each hit's file and KB
    from its text) or ``per_kb`` (one search per KB, up to ``RECALL_MAX_SEARCHES``)."""
    from moto import mock_aws

    from memmy_local.aws.dynamodb import partition_queries
    from memmy_local.lambdas.handlers import load_function_module, overlaid_environment
    from memmy_local.provision.resources import provision
    from memmy_local.template import function_environment, load_template
    from tests.support.events import FakeLambdaContext, claims_for, http_event

    template = load_template()
    timings: dict[int, list[float]] = {size: [] for size in scopes}
    searches: dict[int, int] = dict.fromkeys(scopes, 0)
    excerpts: dict[int, int] = {}
    with (
        _memos(memos, latency_ms) as (base_url, create_kb, counts),
        overlaid_environment(quiet_environment()),
        mock_aws(),
    ):
        resources = provision(
            template,
            endpoint_url=None,
            memos_api_key=MEMOS_KEY,
            parameters={"MemosBaseUrl": base_url, "JwtIssuer": "bench", "JwtAudience": "bench"},
        )
        environment = {
            **function_environment(template, "RecallFunction", resources.refs),
            **quiet_environment(),
            "RECALL_ATTRIBUTION": attribution,
        }
        with overlaid_environment(environment):
            from memmy_kb.composition import dynamodb_client, reset_composition

            reset_composition()  # and the MemOS key cached by Parameters, when it is loaded
            items = [
                item
                for size in scopes
                for i in range(size)
                for item in kb_items(f"kb_s{size}_{i}", f"caller-{size}", create_kb())
            ]
            write_items(dynamodb_client(), resources.refs["Table"], items)

            module = load_function_module("functions/recall/", "app.lambda_handler")
            events = {
                size: http_event(
                    "POST", "/recall", claims=claims_for(f"caller-{size}"), body={"query": QUERY}
                )
                for size in scopes
            }

            def recall(size: int) -> dict[str, Any]:
                reply: dict[str, Any] = module.lambda_handler(events[size], FakeLambdaContext())
                assert reply["statusCode"] == 200, reply
                return reply

            with partition_queries():
                connections = _timed_rounds(recall, scopes, rounds, counts, timings, searches, excerpts)
            reset_composition()
    return {
        **_summary(memos, latency_ms, rounds, connections, timings, searches, excerpts),
        "attribution": attribution,
    }


def _timed_rounds(
    recall: Callable[[int], dict[str, Any]],
    scopes: tuple[int, ...],
    rounds: int,
    counts: Any,
    timings: dict[int, list[float]],
    searches: dict[int, int],
    excerpts: dict[int, int],
) -> int:
    """Warm up, then ``rounds`` recalls per scope, interleaved; the new connections MemOS accepted."""
    for size in scopes:  # warm: clients, the MemOS key, kept-alive connections
        for _ in range(WARMUP):
            recall(size)
    connections = counts["connections"]
    for _ in range(rounds):
        for size in scopes:
            before = counts["/search/memory"]
            started = time.perf_counter()
            reply = recall(size)
            timings[size].append(time.perf_counter() - started)
            searches[size] += counts["/search/memory"] - before
            excerpts[size] = reply["body"].count('"title"')
    return int(counts["connections"] - connections)


def _summary(
    memos: str,
    latency_ms: int,
    rounds: int,
    connections: int,
    timings: dict[int, list[float]],
    searches: dict[int, int],
    excerpts: dict[int, int],
) -> dict[str, Any]:
    """The figures per scope, printed and returned."""
    scopes = tuple(timings)
    smallest = scopes[0]
    medians = {size: statistics.median(timings[size]) * 1000 for size in scopes}
    result: dict[str, Any] = {
        "memos": memos,
        "latency_ms": latency_ms,
        "rounds": rounds,
        "new_connections": connections,
        "scopes": {
            size: {
                "median_ms": medians[size],
                "p95_ms": sorted(timings[size])[min(rounds - 1, int(rounds * 0.95))] * 1000,
                "searches": searches[size] / rounds,
                "excerpts": excerpts[size],
                "ratio": medians[size] / medians[smallest],
            }
            for size in scopes
        },
    }
    print(
        f"recall with MemOS ({memos}) searches held {latency_ms} ms each, {rounds} recalls per scope (interleaved);"
        f" connections MemOS accepted during them: {connections}{' (not counted)' if memos != 'shim' else ''}"
    )
    for size, figures in result["scopes"].items():
        verdict = "" if size == smallest else f", ratio {figures['ratio']:.2f} vs {smallest} KB"
        print(
            f"  {size} KB(s) in scope: median {figures['median_ms']:.0f} ms, p95 {figures['p95_ms']:.0f} ms, "
            f"{figures['searches']:g} MemOS searches and {figures['excerpts']} excerpts per recall{verdict}"
        )
    largest = result["scopes"][scopes[-1]]["ratio"]
    print(
        f"  {scopes[-1]} KBs vs {smallest}: {largest:.2f}x (target <= {TARGET}x: {'ok' if largest <= TARGET else 'OVER'})"
    )
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memos", choices=("shim", "emulator"), default="shim")
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--latency-ms", type=int, default=LATENCY_MS)
    args = parser.parse_args(argv)
    run(rounds=args.rounds, latency_ms=args.latency_ms, memos=args.memos)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
