"""``.memmyignore``'s worst patterns: each matched against a path of n and of 2n characters, as a ratio.

The sync matches every file's path against the folder's ``.memmyignore`` (``memmy_kb_client.sync.ignore``:
pathspec's patterns run by RE2). Each hostile pattern of ``tests.support.hostile_patterns`` (runs of ``*a``,
``*[ab]`` and ``?*``, long ``**/`` chains) is timed against a path it almost matches, of 255 characters
(the longest name the service takes) and of 510 (a folder and a name), as the minimum of many runs; the
figure is the worst pattern's ratio, linear is 2. Beside it, the matcher the sync used before (pathspec's
own, Python's backtracking ``re``) on the first pattern at 16 and 32 characters: it cannot be timed at
255 (76 s at 64 characters; five ``*a`` took some 20 s at 200).

Run alone: ``python -m bench.ignore_patterns``.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any

N = 255
RUNS = 2000
BACKTRACKING_N = 16
BACKTRACKING_RUNS = 5


def _best(match: Callable[[str], object], path: str, runs: int) -> float:
    match(path)
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        match(path)
        best = min(best, time.perf_counter() - started)
    return best


def run() -> dict[str, Any]:
    """The worst pattern, its times at n and 2n and their ratio; and the backtracking matcher's."""
    from pathspec import GitIgnoreSpec

    from memmy_kb_client.sync.ignore import compile_ignore
    from tests.support.hostile_patterns import PATTERNS, almost_matching

    worst: dict[str, Any] = {"ratio": 0.0}
    gc.collect()
    gc.disable()
    try:
        for pattern in PATTERNS:
            match = compile_ignore([pattern]).match_file
            small, large = _best(match, almost_matching(N), RUNS), _best(match, almost_matching(2 * N), RUNS)
            ratio = large / small
            print(
                f"{pattern}: {large * 1e6:.1f} µs at {2 * N} vs {small * 1e6:.1f} µs at {N}, ratio {ratio:.2f}"
            )
            if ratio > worst["ratio"]:
                worst = {"pattern": pattern, "ratio": ratio, "small_us": small * 1e6, "large_us": large * 1e6}
        backtracking = GitIgnoreSpec.from_lines([PATTERNS[0]], backend="simple").match_file
        n = BACKTRACKING_N
        before = [_best(backtracking, "a" * size, BACKTRACKING_RUNS) for size in (n, 2 * n)]
        print(
            f"backtracking, {PATTERNS[0]}: {before[1] * 1e3:.1f} ms at {2 * n} vs {before[0] * 1e3:.2f} ms at {n}"
        )
    finally:
        gc.enable()
    worst.update(patterns=len(PATTERNS), before_ms=[t * 1e3 for t in before], before_pattern=PATTERNS[0])
    return worst


if __name__ == "__main__":
    run()
