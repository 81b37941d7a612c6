"""Cold import cost of the handler modules next to ``import boto3`` alone, each in fresh interpreters."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

from memmy_local.handlers import repo_root

_LOAD = (
    "import importlib.util as u; s = u.spec_from_file_location('app', 'functions/{name}/app.py');"
    " s.loader.exec_module(u.module_from_spec(s))"
)
_SNIPPETS = {
    "python (nothing)": "pass",
    "import boto3": "import boto3",
    "create_kb handler": _LOAD.format(name="create_kb"),
    "manage_kb handler": _LOAD.format(name="manage_kb"),
    "recall handler": _LOAD.format(name="recall"),
}


def _once(code: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, cwd=repo_root())  # noqa: S603 - our own snippets
    return time.perf_counter() - started


def run(rounds: int = 7) -> dict[str, float]:
    # Interleave the snippets so that machine noise hits them alike.
    samples: dict[str, list[float]] = {name: [] for name in _SNIPPETS}
    for _ in range(rounds):
        for name, code in _SNIPPETS.items():
            samples[name].append(_once(code))
    base = statistics.median(samples["python (nothing)"])
    costs = {
        name: (statistics.median(s) - base) * 1000
        for name, s in samples.items()
        if name != "python (nothing)"
    }
    boto = costs["import boto3"]
    for name, ms in costs.items():
        print(
            f"import cost, median of {rounds} fresh interpreters: {name}: {ms:.0f} ms ({ms / boto:.2f}x boto3)"
        )
    return costs
