"""The remote MCP endpoint against recall: its cold import, a warm ``search`` against a warm ``POST /recall``,
and the DynamoDB requests of each, from one run.

Import: ``bench.import_time``'s rounds (fresh Python 3.12 interpreters, the layer built as ``sam build``
builds it, the median of per-round ratios to ``import boto3``) for the ``mcp`` and ``recall`` handlers,
and each handler's import plus its first request against loopback stubs (``bench.mcp_first_request``:
for ``mcp``, one ``search`` from a client already connected, PyJWT, cryptography and the JWKS fetch
included). Target: the ``mcp`` handler's import at most ``import_time.DEFAULT_TARGET`` (1.5x).

Warm latency: the real handlers in-process on moto and the MemOS emulator (``route_calls.in_process_stack``),
a reader with ``KBS`` KBs shared by an owner, each holding one file of its own with its fingerprints
(so recall's default ``by_file`` plan names each excerpt's KB and file, reading the files' items), and
an MCP client already connected (its token signed against a JWKS on 127.0.0.1,
``tests.support.mcp_tokens``). After ``WARM_UP`` calls of each, ``PAIRS`` pairs of ``POST /recall`` and
the ``search`` tool through ``POST /mcp`` for the same reader, query and scope, interleaved (which goes
first alternates); medians, p90s and the median of the per-pair ratios. Twice: as they are (moto
answers a DynamoDB call in about a millisecond of this process's CPU, the emulator a search in a few),
and with realistic latencies: every DynamoDB call held ``DYNAMODB_MS`` (``bench.fleet_governor``'s
in-region round trip) and every MemOS search ``MEMOS_MS`` (``bench.recall_fanout``'s, by the emulator's
latency-only fault). The second is the one that predicts AWS, where both are network round trips.
Target: ``search`` at most ``TARGET_OVERHEAD`` slower than ``/recall``.

DynamoDB requests per call are counted (``route_calls.recording``) over the timed pairs.

``python -m bench.mcp_endpoint [--pairs N] [--no-import]``
"""

from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

from bench.fleet_governor import DYNAMODB_MS
from bench.recall_fanout import LATENCY_MS as MEMOS_MS
from bench.route_calls import DOCUMENT, QUERY, Calls, in_process_stack, recording

KBS = 3  # the cost model's typical scope (bench.cost_model.KBS_IN_SCOPE)
PAIRS = 30
WARM_UP = 3
TARGET_OVERHEAD = 0.10
# Searches a day through /mcp for the SnapStart rows: the endpoint has no traffic model yet, so a range.
SEARCHES_PER_DAY = (1_000, 10_000, 100_000, 1_000_000)
SEARCH = {"name": "search", "arguments": {"query": QUERY}}


@dataclass(frozen=True)
class Latency:
    """One view's timings (ms): each route's median and p90, and the median of the per-pair ratios."""

    view: str
    recall_ms: list[float]
    search_ms: list[float]

    @staticmethod
    def _p90(values: list[float]) -> float:
        return statistics.quantiles(values, n=10)[-1]

    @property
    def recall(self) -> tuple[float, float]:
        return statistics.median(self.recall_ms), self._p90(self.recall_ms)

    @property
    def search(self) -> tuple[float, float]:
        return statistics.median(self.search_ms), self._p90(self.search_ms)

    @property
    def ratio(self) -> float:
        return statistics.median(s / r for s, r in zip(self.search_ms, self.recall_ms, strict=True))

    @property
    def met(self) -> bool:
        return self.ratio <= 1 + TARGET_OVERHEAD


@dataclass
class Requests:
    """The DynamoDB requests of the timed calls of one route, and how many calls there were; the fleet
    budget's (its ``BUCKET`` item's GetItem and PutItem, a block of tokens taken now and then, shared by
    recall and search alike: ``docs/memos.md``) apart from the route's own."""

    calls: int = 0
    operations: Counter[str] = field(default_factory=Counter)
    budget: Counter[str] = field(default_factory=Counter)
    memos: int = 0  # MemOS searches

    def add(self, counted: Calls, memos: int) -> None:
        self.calls += 1
        for (operation, kind), units in counted.by_kind.items():
            (self.budget if "BUCKET#" in kind.split("+") else self.operations)[operation] += units.calls
        self.memos += memos

    def per_call(self, budget: bool = False) -> dict[str, float]:
        return {op: n / self.calls for op, n in sorted((self.budget if budget else self.operations).items())}

    def describe(self) -> str:
        """``6 (BatchGetItem 1, GetItem 1, ...) + fleet budget 0.5 (PutItem 0.5)`` per call."""

        def listed(ops: dict[str, float]) -> str:
            return f"{sum(ops.values()):g} ({', '.join(f'{op} {n:g}' for op, n in ops.items())})"

        budget = self.per_call(budget=True)
        return listed(self.per_call()) + (f" + fleet budget {listed(budget)}" if budget else "")


@dataclass
class Warm:
    latencies: list[Latency]
    recall: Requests
    search: Requests


@contextlib.contextmanager
def held_dynamodb(milliseconds: float) -> Iterator[None]:
    """Every DynamoDB call answered ``milliseconds`` later, as an in-region round trip would be."""
    from botocore.client import BaseClient

    inner = vars(BaseClient)["_make_api_call"]  # private: botocore's stubs do not name it

    def held(self: Any, operation: str, params: dict[str, Any]) -> Any:
        if self.meta.service_model.service_name == "dynamodb":
            time.sleep(milliseconds / 1000)
        return inner(self, operation, params)

    with mock.patch.object(BaseClient, "_make_api_call", held):
        yield


def _world(service: Any, owner: str, reader: str) -> None:
    """``KBS`` KBs of ``owner``, a file of its own in each (with its fingerprints, as the ingest leaves it,
    so that recall's ``by_file`` plan names each excerpt's KB and file), shared with ``reader``, in their
    recall."""
    from memmy_kb.composition import get_fingerprint_store
    from memmy_kb.domain.fingerprints.prints import fingerprint
    from memmy_kb.domain.fingerprints.store import FilePrints
    from tests.support import seed
    from tests.support.mcp_world import register

    register(service, owner, reader)
    for n in range(KBS):
        created = service.call("POST", "/knowledge-bases", owner, body={"name": f"资料 {n}"})
        kb_id = created.body["id"]
        text = DOCUMENT.decode() + f"第 {n} 版：商业版另含 {n} 项服务。\n"
        file_id = seed.add_file(service, kb_id, owner, f"手册 {n}.md", text.encode())
        file = service.stores.contents.get_file(kb_id, file_id)
        assert file is not None
        prints = FilePrints(kb_id, file_id, file.version, fingerprint([text]), file.memos_file_id)
        get_fingerprint_store().put_prints(prints)
        shared = service.call("POST", f"/knowledge-bases/{kb_id}/members", owner, body={"identifier": reader})
        toggled = service.call("PUT", f"/knowledge-bases/{kb_id}/recall", reader, body={"enabled": True})
        if (created.status, shared.status, toggled.status) != (201, 201, 200):
            raise RuntimeError(f"the bench's KB {n}: {created.body} {shared.body} {toggled.body}")


class _Pairs:
    """``POST /recall`` and ``search`` for one reader, each timed and its requests counted."""

    def __init__(
        self, service: Any, emulator: Any, take: Callable[[], Calls], token: str, reader: str
    ) -> None:
        self.service, self.emulator, self.take = service, emulator, take
        self.token, self.reader = token, reader
        self.requests = {"recall": Requests(), "search": Requests()}

    def _searches(self) -> int:
        return int(self.emulator.state()["calls"].get("/search/memory", 0))

    def recall(self) -> Any:
        reply = self.service.call("POST", "/recall", self.reader, body={"query": QUERY})
        if reply.status != 200 or not reply.body["items"]:
            raise RuntimeError(f"POST /recall: {reply.status} {reply.body}")
        return reply.body

    def search(self) -> Any:
        from tests.support.mcp_world import answered

        result = answered(self.service, self.token, "tools/call", SEARCH)
        if not result["structuredContent"]["results"]:
            raise RuntimeError(f"search found nothing: {result}")
        return result

    def timed(self, name: str) -> float:
        call = self.recall if name == "recall" else self.search
        self.take()
        searches = self._searches()
        started = time.perf_counter()
        call()
        elapsed = (time.perf_counter() - started) * 1000
        self.requests[name].add(self.take(), self._searches() - searches)
        return elapsed

    def run(self, view: str, pairs: int) -> Latency:
        with contextlib.redirect_stdout(io.StringIO()):  # the searches' per-backend metric lines
            return self._run(view, pairs)

    def _run(self, view: str, pairs: int) -> Latency:
        for _ in range(WARM_UP):
            self.recall()
            self.search()
        timings: dict[str, list[float]] = {"recall": [], "search": []}
        for n in range(pairs):
            for name in ("recall", "search") if n % 2 == 0 else ("search", "recall"):
                timings[name].append(self.timed(name))
        return Latency(view, timings["recall"], timings["search"])


def warm(pairs: int = PAIRS) -> Warm:
    """Both views' pairs, and the requests per call counted over them."""
    from memmy_local.memos_emulator.server import Fault
    from tests.support.mcp_tokens import serving_mcp_tokens
    from tests.support.mcp_world import answered

    with (
        serving_mcp_tokens() as (settings, sign),
        in_process_stack(settings) as (service, emulator),
        recording() as take,
    ):
        with contextlib.redirect_stdout(io.StringIO()):  # the KBs' creation's metric lines
            _world(service, "bench-owner", "bench-reader")
        token = sign("bench-reader")
        answered(service, token, "tools/list")  # the client's first call adds its connection
        bench = _Pairs(service, emulator, take, token, "bench-reader")
        latencies = [bench.run("in-process (moto, the MemOS emulator)", pairs)]
        emulator.add_fault(Fault(endpoint="/search/memory", latency_ms=MEMOS_MS))
        with held_dynamodb(DYNAMODB_MS):
            view = f"with latencies: DynamoDB {DYNAMODB_MS:g} ms a call, MemOS {MEMOS_MS} ms a search"
            latencies.append(bench.run(view, pairs))
        emulator.clear_faults()
    from aws_lambda_powertools import Metrics

    Metrics().clear_metrics()  # not flushed here: the benchmarks after this one would print them
    return Warm(latencies, bench.requests["recall"], bench.requests["search"])


def imports(rounds: int) -> dict[str, tuple[float, float]]:
    """``bench.import_time``'s figures for ``mcp`` and ``recall``, imports and first requests."""
    from bench import mcp_first_request

    return mcp_first_request.run(rounds)


@dataclass
class Results:
    warm: Warm
    imports: dict[str, tuple[float, float]] | None = None

    def snapstart(self) -> list[Any]:
        """``bench.snapstart_cost``'s day of the mcp function (its template memory; each invocation as long
        as the held view's median search) at each of ``SEARCHES_PER_DAY``: cold starts, SnapStart's and
        provisioned concurrency's dollars, as recall's are judged ("SnapStart" in docs/benchmarks.md)."""
        from bench import cost_model, snapstart_cost
        from memmy_local.template import load_template

        memory_gb = cost_model.memory_mb(load_template(), "McpFunction") / 1024
        duration_s = self.warm.latencies[-1].search[0] / 1000
        return [
            snapstart_cost.function_day("McpFunction", 0, searches, duration_s, memory_gb)
            for searches in SEARCHES_PER_DAY
        ]


def run(
    pairs: int = PAIRS, rounds: int | None = None, *, with_import: bool = True, verbose: bool = True
) -> Results:
    from bench.import_time import ROUNDS

    results = Results(warm(pairs), imports(rounds or ROUNDS) if with_import else None)
    if verbose:
        for line in lines(results):
            print(line)
    return results


def lines(results: Results) -> list[str]:
    out = []
    if results.imports is not None:
        out += [
            f"import: {name}: {ms:.0f} ms, {ratio:.2f}x import boto3"
            for name, (ms, ratio) in results.imports.items()
        ]
    for latency in results.warm.latencies:
        (rm, rp), (sm, sp) = latency.recall, latency.search
        out.append(
            f"warm, {latency.view}: /recall median {rm:.1f} ms (p90 {rp:.1f}), search median {sm:.1f} ms"
            f" (p90 {sp:.1f}); ratio {latency.ratio:.2f} (target ≤ {1 + TARGET_OVERHEAD:.2f}:"
            f" {'ok' if latency.met else 'over'})"
        )
    for name, requests in (("/recall", results.warm.recall), ("search", results.warm.search)):
        memos = requests.memos / requests.calls
        out.append(f"DynamoDB requests per {name}: {requests.describe()}; MemOS searches {memos:g}")
    out += [f"SnapStart for mcp, {what}: {figure}" for what, figure in _snapstart(results)]
    return out


def _snapstart(results: Results) -> list[tuple[str, str]]:
    return [
        (
            f"{day.invocations:,.0f} searches/day",
            f"{day.cold_starts:,.0f} cold starts/day; SnapStart ${day.snapstart_dollars:.3f}/day"
            f" (${day.dollars_per_cold_start:.4f} per cold start avoided); provisioned concurrency for the"
            f" peak's {day.peak_environments}: ${day.provisioned_dollars:.2f}/day;"
            f" {'SnapStart' if day.snapstart_dollars < day.provisioned_dollars else 'provisioned'} is cheaper",
        )
        for day in results.snapstart()
    ]


def rows(results: Results) -> list[tuple[str, str, str]]:
    """``make bench``'s rows."""
    from bench.import_time import DEFAULT_TARGET, TARGETS

    label = "remote MCP endpoint vs recall"
    out: list[tuple[str, str, str]] = []
    if results.imports is not None:
        figures = dict(results.imports)
        boto, _ = figures.pop("import boto3")
        out.append((label, "import boto3 (cold, built layer)", f"{boto:.0f} ms"))
        for name, (ms, ratio) in figures.items():
            target = DEFAULT_TARGET if name == "mcp handler" else TARGETS.get(name.removesuffix(" handler"))
            verdict = (
                "" if target is None else f" (target ≤ {target}x: {'ok' if ratio <= target else 'over'})"
            )
            out.append((label, f"cold: {name}", f"{ratio:.2f}x boto3, {ms:.0f} ms{verdict}"))
    for latency in results.warm.latencies:
        (rm, rp), (sm, sp) = latency.recall, latency.search
        out.append(
            (
                label,
                f"warm search vs POST /recall ({KBS} KBs), {latency.view}",
                f"ratio {latency.ratio:.2f} (median {sm:.1f} vs {rm:.1f} ms, p90 {sp:.1f} vs {rp:.1f};"
                f" target ≤ {1 + TARGET_OVERHEAD:.2f}: {'ok' if latency.met else 'over'})",
            )
        )
    warm_ = results.warm
    out.append(
        (
            label,
            "DynamoDB requests per call",
            f"search {warm_.search.describe()} vs /recall {warm_.recall.describe()}",
        )
    )
    out += [(label, f"SnapStart for mcp, {what}", figure) for what, figure in _snapstart(results)]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=PAIRS)
    parser.add_argument("--rounds", type=int, help="import rounds (default: bench.import_time's)")
    parser.add_argument("--no-import", action="store_true", help="the warm figures only")
    args = parser.parse_args(argv)
    run(args.pairs, args.rounds, with_import=not args.no_import)
    return 0


if __name__ == "__main__":
    sys.exit(main())
