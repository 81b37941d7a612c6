"""SnapStart's restore plus the first recall, next to the cold start's and to ``import boto3``.

What a recall environment restored from a SnapStart snapshot spends before it answers, as near as one
machine can show it: a fresh Python 3.12 loads the recall handler from the built layer exactly as
``bench.import_time`` does (same layer, runtime, environment and loopback stubs), runs the before-snapshot
hooks as Lambda's runtime does (``snapshot_restore_py``'s registry, last registered first: the priming of
``memmy_kb.api.priming``, then the collector's release), and forks: the fork is the snapshot. The child
runs the after-restore hooks and one ``POST /recall`` over ``import_time.FIRST_RECALL_KBS`` KBs against
the stubs, and exits; its CPU time (user + system, from ``wait4``) is the sample. Not counted, as Lambda
does not bill it either: restoring the microVM itself (Lambda's "Restore Duration" covers it with the
hooks; the hooks are all that runs of ours).

In the same run and interleaved: ``import boto3`` and the cold row (``import app`` plus the same recall,
``bench.import_time``'s "cold import + first recall"), so the three figures come from one machine state.
Target: restore + first recall at most 0.5x ``import boto3``.

``python -m bench --only restore`` (or ``python -m bench.restore_time``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

from bench import import_time
from memmy_local.lambdas.handlers import repo_root

TARGET = 0.5

# In the handler's interpreter: prime as Lambda's runtime runs the before-snapshot hooks, fork, and in
# the child the after-restore hooks and the first recall; the parent prints the child's CPU seconds.
_RESTORE = """
import os, app
from snapshot_restore_py import get_after_restore, get_before_snapshot
hooks = get_before_snapshot()
assert hooks, "the recall handler registered no before-snapshot hook"
while hooks:
    func, args, kwargs = hooks.pop()
    func(*args, **kwargs)
child = os.fork()
if child == 0:
    try:
        for func, args, kwargs in get_after_restore():
            func(*args, **kwargs)
{recall}
    except BaseException:
        import traceback; traceback.print_exc()
        os._exit(1)
    os._exit(0)
_, status, usage = os.wait4(child, 0)
assert status == 0, f"the restored child failed ({{status}})"
print(usage.ru_utime + usage.ru_stime)
"""


def _restore_snippet() -> str:
    recall = "\n".join(f"        {line}" for line in import_time.FIRST_RECALL.strip().splitlines())
    return f"KBS = {import_time.FIRST_RECALL_KBS}\n" + _RESTORE.format(recall=recall)


def _restore_once(python: str, cwd: Path, path: list[Path], extra: dict[str, str]) -> float:
    """CPU seconds of the restored child: the after-restore hooks and one recall."""
    environment = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        **import_time.ENVIRONMENT,
        **extra,
        "PYTHONPATH": os.pathsep.join(str(p) for p in path),
    }
    done = subprocess.run(  # noqa: S603 - our own snippet
        [python, "-S", "-c", _restore_snippet()],
        check=True,
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
    )
    return float(done.stdout.strip().splitlines()[-1])


def run(rounds: int = 7) -> dict[str, float]:
    """Median CPU (ms) of ``import boto3``, the cold first recall and the restored first recall."""
    root = repo_root()
    python = import_time.python312(root)
    layer = import_time.build_layer(root).resolve()
    runtime = import_time.build_runtime(root, python)
    task = (root / "functions" / "recall").resolve()
    extra = {"LAMBDA_TASK_ROOT": str(task), "AWS_LAMBDA_FUNCTION_NAME": "memmy-bench-recall"}
    path = [task, layer, runtime]
    samples: dict[str, list[float]] = {"bare": [], "boto3": [], "cold": [], "restore": []}
    with import_time.stub_backend() as backend:
        cold = f"KBS = {import_time.FIRST_RECALL_KBS}\n{import_time.FIRST_RECALL}"
        for _ in range(rounds):
            samples["bare"].append(import_time.once(python, "pass", root, [runtime], {}))
            samples["boto3"].append(import_time.once(python, "import boto3", root, [runtime], {}))
            samples["cold"].append(import_time.once(python, cold, task, path, {**extra, **backend}))
            samples["restore"].append(_restore_once(python, task, path, {**extra, **backend}))
    base = statistics.median(samples["bare"])
    costs = {
        "import boto3": (statistics.median(samples["boto3"]) - base) * 1000,
        "cold": (statistics.median(samples["cold"]) - base) * 1000,
        # The restored child is a fork of a running interpreter: no interpreter start to take off.
        "restore": statistics.median(samples["restore"]) * 1000,
    }
    boto = costs["import boto3"]
    print(f"SnapStart restore vs cold start (CPU time), median of {rounds}, layer {layer}:")
    print(f"  import boto3: {boto:.0f} ms")
    print(f"  cold import + first recall: {costs['cold']:.0f} ms, {costs['cold'] / boto:.2f}x boto3")
    verdict = "ok" if costs["restore"] / boto <= TARGET else "OVER"
    print(
        f"  restore + first recall: {costs['restore']:.0f} ms, {costs['restore'] / boto:.2f}x boto3"
        f" (target {TARGET}x: {verdict})"
    )
    return costs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    run(parser.parse_args(argv).rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
