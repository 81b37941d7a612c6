"""The request guards on their worst-case bodies: the largest body's time against 1 KB's, as a ratio.

Every request with a body passes a guard that scans its JSON text before anything parses it: the
cloud's (``memmy_kb.api.request_guard.check_json_body``, in every API function) and the desktop
service's (``memmy_kb_client.desktop.bodies.refusal``). Each is timed on the hostile shapes the tests
hold them to (``tests.support.hostile_bodies``: unterminated escaped quotes, runs of backslashes,
``\\u`` escapes, brackets inside and outside strings...) at 1 KB and at the largest body a route
accepts (64 KB), as the minimum of many runs; the figure is the worst shape's ratio. Linear is the
size ratio, 64; the regex that skipped strings before the guards became one pass gave 4,117 on
unterminated escaped quotes (13.5 s against 3.3 ms).

Run alone: ``python -m bench.worst_case_body``.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any

SMALL = 1024
LARGE = 64 * 1024
SMALL_RUNS = 50
LARGE_RUNS = 10


def _best(check: Callable[[str], object], body: str, runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        check(body)
        best = min(best, time.perf_counter() - started)
    return best


def _guards() -> dict[str, Callable[[str], object]]:
    from memmy_kb.api.request_guard import check_json_body
    from memmy_kb.errors import DomainError
    from memmy_kb_client.desktop.bodies import refusal

    def cloud(body: str) -> object:
        try:
            return check_json_body(body, base64_encoded=False, content_type="application/json")
        except DomainError as refused:
            return refused.code

    def desktop(body: str) -> object:
        return refusal("application/json", body.encode())

    return {"cloud request guard": cloud, "desktop body guard": desktop}


def run() -> dict[str, dict[str, Any]]:
    """Per guard: the worst shape, its ratio and both times."""
    from tests.support.hostile_bodies import SHAPES

    results: dict[str, dict[str, Any]] = {}
    gc.collect()
    gc.disable()
    try:
        for guard, check in _guards().items():
            worst: dict[str, Any] = {"ratio": 0.0}
            for shape, make in SHAPES.items():
                small, large = make(SMALL), make(LARGE)
                check(small)
                small_s, large_s = _best(check, small, SMALL_RUNS), _best(check, large, LARGE_RUNS)
                ratio = large_s / small_s
                print(
                    f"{guard}, {shape}: {large_s * 1e3:.2f} ms vs {small_s * 1e6:.1f} µs, ratio {ratio:.1f}"
                )
                if ratio > worst["ratio"]:
                    worst = {
                        "shape": shape,
                        "ratio": ratio,
                        "large_ms": large_s * 1e3,
                        "small_us": small_s * 1e6,
                    }
            worst["shapes"] = len(SHAPES)
            results[guard] = worst
    finally:
        gc.enable()
    return results


if __name__ == "__main__":
    run()
