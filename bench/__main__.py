"""``make bench``: every benchmark once, then one markdown table of their figures, all from this run.

Each module still runs on its own (``python -m bench.<module>``) and prints its detailed lines as it
goes; this collects what each returns. A benchmark that cannot run here (no Python 3.12 for the layer,
say) gets a row saying why instead of stopping the others. ``--only NAME ...`` runs some of them.
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

MB = 1024 * 1024
Row = tuple[str, str, str]  # (benchmark, what, figure)


def _route_rows(routes: dict[str, Any]) -> list[Row]:
    from bench.route_calls import ROUTES

    rows = []
    for name in ROUTES:
        calls = routes[name]
        memos = sum(calls.memos.values())
        memos_text = f"{memos}" + (
            f" ({', '.join(f'{p} {n}' for p, n in sorted(calls.memos.items()))})" if memos else ""
        )
        sfn = calls.describe("stepfunctions")
        if calls.transitions:
            sfn = (
                f"{calls.transitions} transitions"
                if sfn == "0"
                else f"{sfn}, {calls.transitions} transitions"
            )
        secrets = calls.count("secretsmanager")
        figure = (
            f"Lambda {calls.invocations} · DynamoDB {calls.describe('dynamodb')} ≈ {calls.rru:g} RRU + {calls.wru:g} WRU"
            f" · S3 {calls.describe('s3')} · Step Functions {sfn} · MemOS {memos_text}"
            + (f" · Secrets Manager {secrets}" if secrets else "")
        )
        rows.append(("calls per route (warm)", name, figure))
    return rows


def _calls_and_cost() -> list[Row]:
    from bench import cost_model, route_calls, snapstart_cost
    from memmy_local.template import load_template

    routes = route_calls.run()
    day = cost_model.run(routes)
    rows = _route_rows(routes)
    label = f"cost of {cost_model.USERS:,} active users/day"
    rows += [(label, item, figure) for item, figure in cost_model.rows(day)]
    snapstart = snapstart_cost.rows(routes, load_template())
    rows += [
        ("SnapStart vs cold starts vs provisioned concurrency", item, figure) for item, figure in snapstart
    ]
    return rows


def _import_ratios() -> list[Row]:
    from bench import import_time

    costs = import_time.run(first_request=True)
    boto, _ = costs.pop("import boto3")
    rows: list[Row] = [("handler import (cold, built layer)", "import boto3", f"{boto:.0f} ms")]
    first, first_ratio = costs.pop("recall + first request handler")
    for name, (ms, ratio) in costs.items():
        target = import_time.TARGETS.get(name.removesuffix(" handler"), import_time.DEFAULT_TARGET)
        verdict = f" (target ≤ {target}x: {'ok' if ratio <= target else 'over'})"
        rows.append(("handler import (cold, built layer)", name, f"{ratio:.2f}x boto3, {ms:.0f} ms{verdict}"))
    target = import_time.TARGETS["recall + first request"]
    rows.append(
        (
            "cold import + first recall vs import boto3",
            f"recall handler + one POST /recall ({import_time.FIRST_RECALL_KBS} KBs, loopback stubs)",
            f"{first_ratio:.2f}x boto3, {first:.0f} ms (target ≤ {target}x: {'ok' if first_ratio <= target else 'over'})",
        )
    )
    return rows


def _restore() -> list[Row]:
    from bench import import_time, restore_time

    costs = restore_time.run()
    boto = costs["import boto3"]
    label = "SnapStart restore vs cold start vs import boto3"
    what = f"recall handler + one POST /recall ({import_time.FIRST_RECALL_KBS} KBs, loopback stubs)"
    cold_target = import_time.TARGETS["recall + first request"]
    restore = costs["restore"] / boto
    return [
        (label, "import boto3", f"{boto:.0f} ms"),
        (
            label,
            f"cold import + first recall: {what}",
            f"{costs['cold'] / boto:.2f}x boto3, {costs['cold']:.0f} ms (target ≤ {cold_target}x)",
        ),
        (
            label,
            f"restore + first recall: primed, forked, after-restore hooks + {what}",
            f"{restore:.2f}x boto3, {costs['restore']:.0f} ms (target ≤ {restore_time.TARGET}x: {'ok' if restore <= restore_time.TARGET else 'over'})",
        ),
    ]


def _layer_size() -> list[Row]:
    from bench import layer_size

    size = layer_size.run()
    figure = f"{size['zipped'] / 1e6:.1f} MB zipped, {size['unzipped'] / 1e6:.1f} MB unzipped (file bytes), {size['files']} files"
    return [("core layer size", size["what"], figure)]


def _recall_scale() -> list[Row]:
    from bench import recall_scale

    results = recall_scale.run()
    sizes = sorted(size for size in results if isinstance(size, int))
    small = sizes[0]
    rows = [
        (
            "recall latency vs KBs in the table",
            f"{size:,} KBs vs {small:,}",
            f"ratio {results['ratios'][size]:.2f} (median {results[size]['median_ms']:.1f} vs "
            f"{results[small]['median_ms']:.1f} ms; {results[size]['items_read']:g} items read per recall)",
        )
        for size in sizes[1:]
    ]
    return rows


def _recall_fanout() -> list[Row]:
    from bench import recall_fanout

    rows = []
    for attribution in ("per_kb", "by_file"):
        result = recall_fanout.run(attribution=attribution)
        scopes = result["scopes"]
        smallest = min(scopes)
        base = scopes[smallest]
        for size in sorted(scopes)[1:]:
            figures = scopes[size]
            verdict = "ok" if figures["ratio"] <= recall_fanout.TARGET else "over"
            rows.append(
                (
                    f"recall latency vs KBs in scope ({result['latency_ms']} ms per MemOS search), {attribution}",
                    f"{size} KBs vs {smallest}",
                    f"ratio {figures['ratio']:.2f} (median {figures['median_ms']:.0f} vs {base['median_ms']:.0f} ms;"
                    f" {figures['searches']:g} searches per recall, {result['new_connections']} new connections"
                    f" after warm-up; target ≤ {recall_fanout.TARGET}x: {verdict})",
                )
            )
    return rows


def _ingest_memory() -> list[Row]:
    from bench import ingest_memory

    figures = ingest_memory.run()
    (small, (small_peak, small_rss)), (large, (large_peak, large_rss)) = sorted(figures.items())[
        :: len(figures) - 1
    ]
    rss = (
        f"; peak RSS growth {large_rss / 1024:.1f} MB vs {small_rss / 1024:.1f} MB"
        if small_rss is not None and large_rss is not None
        else ""
    )
    figure = (
        f"ratio {large_peak / small_peak:.2f}: tracemalloc peak {large_peak / MB:.1f} MB vs {small_peak / MB:.1f} MB{rss}"
        f" (file {large // small}x larger)"
    )
    return [("ingest peak memory", f"{large // MB} MB file vs {small // MB} MB", figure)]


def _local_stack_memory() -> list[Row]:
    from bench import local_stack_memory

    result = local_stack_memory.run()
    writes, rss = result["writes"], result["rss_mib"]
    first, last = writes[0], writes[-1]
    if result["ratio"] is None:
        return [("local stack memory", "moto server RSS", "n/a (needs /proc)")]
    figure = f"ratio {result['ratio']:.2f} ({rss[first]:.0f} MiB after {first:,} writes, {rss[last]:.0f} MiB after {last:,})"
    return [("local stack memory", f"moto server RSS, {last:,} vs {first:,} transactions", figure)]


def _search_emulator() -> list[Row]:
    from bench import search_emulator

    result = search_emulator.run()
    figure = f"p50 {result['p50_ms']:.1f} ms, p95 {result['p95_ms']:.1f} ms"
    return [("MemOS emulator search", f"{result['excerpts']:,} excerpts, 10-KB scope", figure)]


def _keepalive() -> list[Row]:
    from bench import keepalive

    results = keepalive.run()
    return [
        (
            "kept-alive vs new connection",
            name,
            f"ratio {figures['ratio']:.2f} (median {figures['persistent_ms']:.2f} vs {figures['new_ms']:.2f} ms"
            f" per request; target ≤ {keepalive.TARGET}x: {'ok' if figures['ratio'] <= keepalive.TARGET else 'over'})",
        )
        for name, figures in results.items()
    ]


def _hook_proof() -> list[Row]:
    from bench import hook_proof

    r = hook_proof.run()
    return [
        (
            "the hook's proof of the service",
            "POST /hook/recall on a new connection, with the challenge vs without",
            f"+{r['added_ms']:.2f} ms (median {r['with_proof_ms']:.2f} vs {r['without_proof_ms']:.2f} ms, logged out)",
        ),
        (
            "the hook's proof of the service",
            "import hmac after the hook's imports",
            f"+{r['import_hmac_ms']:.1f} ms",
        ),
    ]


def _recall_backends() -> list[Row]:
    from bench import recall_backends

    r = recall_backends.run()
    figure = f"ratio {r['ratio']:.2f} (median {r['two_backends_ms']:.1f} vs {r['one_backend_ms']:.1f} ms)"
    return [("recall over MemOS backends", f"{recall_backends.KBS} KBs on two backends vs one", figure)]


def _worst_case_body() -> list[Row]:
    from bench import worst_case_body

    results = worst_case_body.run()
    size_ratio = worst_case_body.LARGE // worst_case_body.SMALL
    return [
        (
            "worst-case body, largest vs 1 KB",
            f"{guard}, {worst_case_body.LARGE // 1024} KB vs 1 KB, worst of {r['shapes']} hostile shapes",
            f"ratio {r['ratio']:.0f} ({r['shape']}: {r['large_ms']:.2f} ms vs {r['small_us']:.1f} µs;"
            f" linear is {size_ratio})",
        )
        for guard, r in results.items()
    ]


def _ignore_patterns() -> list[Row]:
    from bench import ignore_patterns

    r = ignore_patterns.run()
    n = ignore_patterns.N
    before, small = r["before_ms"], ignore_patterns.BACKTRACKING_N
    return [
        (
            ".memmyignore's worst pattern, 2n vs n characters",
            f"RE2 (the sync's matcher), {2 * n} vs {n} characters, worst of {r['patterns']} hostile patterns",
            f"ratio {r['ratio']:.2f} (`{r['pattern']}`: {r['large_us']:.1f} µs vs {r['small_us']:.1f} µs; linear is 2)",
        ),
        (
            ".memmyignore's worst pattern, 2n vs n characters",
            f"Python's re (the matcher before), {2 * small} vs {small} characters, `{r['before_pattern']}`",
            f"ratio {before[1] / before[0]:.0f} ({before[1]:.1f} ms vs {before[0]:.2f} ms; linear is 2)",
        ),
    ]


def _attribution() -> list[Row]:
    from bench import attribution_report

    return attribution_report.rows(attribution_report.run())


def _fleet_governor() -> list[Row]:
    from bench import fleet_governor

    return fleet_governor.rows(fleet_governor.run())


def _team_costs() -> list[Row]:
    from bench import team_costs

    return team_costs.rows(team_costs.run())


def _mcp_endpoint() -> list[Row]:
    from bench import mcp_endpoint

    return mcp_endpoint.rows(mcp_endpoint.run())


def _sync_pass() -> list[Row]:
    from bench import sync_pass

    return sync_pass.rows()


BENCHMARKS: dict[str, Callable[[], list[Row]]] = {
    "route_calls": _calls_and_cost,
    "import_time": _import_ratios,
    "restore": _restore,
    "layer_size": _layer_size,
    "recall_scale": _recall_scale,
    "recall_fanout": _recall_fanout,
    "ingest_memory": _ingest_memory,
    "local_stack_memory": _local_stack_memory,
    "search_emulator": _search_emulator,
    "sync_pass": _sync_pass,
    "ignore_patterns": _ignore_patterns,
    "keepalive": _keepalive,
    "hook_proof": _hook_proof,
    "recall_backends": _recall_backends,
    "fleet_governor": _fleet_governor,
    "team_costs": _team_costs,
    "mcp_endpoint": _mcp_endpoint,
    "worst_case_body": _worst_case_body,
    "attribution": _attribution,
}


def table(rows: list[Row]) -> str:
    lines = ["| benchmark | what | figure |", "|---|---|---|"]
    lines += [f"| {a} | {b} | {c.replace('|', '/')} |" for a, b, c in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=sorted(BENCHMARKS), help="run only these benchmarks")
    args = parser.parse_args(argv)
    rows: list[Row] = []
    failed = False
    started = time.perf_counter()
    for name, benchmark in BENCHMARKS.items():
        if args.only and name not in args.only:
            continue
        print(f"\n## {name}", flush=True)
        try:
            produced = benchmark()
        except (Exception, SystemExit) as error:
            traceback.print_exc()
            failed = True
            produced = [(name, "not measured", f"{type(error).__name__}: {error}".splitlines()[0])]
        rows += produced
    print(f"\n## All figures (one run, {time.perf_counter() - started:.0f} s)\n")
    print(table(rows))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
