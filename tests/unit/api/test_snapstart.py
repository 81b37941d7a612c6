"""SnapStart's hooks: registered only inside Lambda; priming captures nothing unique to an environment; two
environments restored from one primed process share no randomness, connection, secret or rate history.

The snapshot is a fork (as in bench/restore_time.py): a process primed as the recall handler's
before-snapshot hook primes it, forked twice, each child running the after-restore hooks. A fork is kinder
than a snapshot in two ways: Python reseeds its shared generator in the child (undone here, so the test
sees what a restore would) and OpenSSL 3 notices the new process id and reseeds (which cannot be undone:
the OpenSSL check shows the hook does no harm, the code review that it runs). The priming
runs in fresh interpreters set up as Lambda runs the handler (its folder first on the path, the layer's
sources after it, ``AWS_EXECUTION_ENV`` naming a Lambda runtime).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import snapshot_restore_py

from memmy_kb.api import snapstart

REPO_ROOT = Path(__file__).resolve().parents[3]
RECALL = REPO_ROOT / "functions" / "recall"

LAMBDA_ENVIRONMENT = {
    "AWS_EXECUTION_ENV": "AWS_Lambda_python3.12",
    "AWS_REGION": "us-east-1",
    "AWS_DEFAULT_REGION": "us-east-1",
    "TABLE_NAME": "memmy-test",
    "MEMOS_API_KEY_SECRET": "arn:aws:secretsmanager:us-east-1:123456789012:secret:memmy-test",
    "POWERTOOLS_SERVICE_NAME": "memmy-kb",
    "POWERTOOLS_METRICS_NAMESPACE": "Memmy",
}

# Prime as the runtime runs the before-snapshot hooks (last registered first).
_PRIME = """
import json, sys
import app
from snapshot_restore_py import get_after_restore, get_before_snapshot
hooks = get_before_snapshot()
assert len(hooks) == 2 and len(get_after_restore()) == 1, (hooks, get_after_restore())
PLANT
while hooks:
    func, args, kwargs = hooks.pop()
    func(*args, **kwargs)
"""

# Module-level state of memmy_kb (and the handler) after priming: every primitive value reachable from the
# modules' globals, their classes' attributes and the composition root's cached values, by path.
_FINGERPRINT = """
import datetime, random, uuid
from memmy_kb import composition
LEAVES = (str, bytes, int, float, bool, type(None), datetime.datetime, datetime.date, uuid.UUID)
found = {}
seen = set()

def ours(obj):
    return (getattr(type(obj), "__module__", "") or "").startswith(("memmy_kb", "app"))

def walk(obj, path, depth):
    if isinstance(obj, LEAVES):
        found[path] = repr(obj)
        return
    if isinstance(obj, random.Random) and not isinstance(obj, random.SystemRandom):
        found[path] = "Random state " + str(hash(obj.getstate()))
        return
    if depth > 5 or id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, dict):
        for key, value in obj.items():
            walk(value, f"{path}[{key!r}]", depth + 1)
    elif isinstance(obj, (list, tuple)):
        for i, value in enumerate(obj):
            walk(value, f"{path}[{i}]", depth + 1)
    elif isinstance(obj, (set, frozenset)):
        found[path] = repr(sorted(map(repr, obj)))
    elif isinstance(obj, type) and obj.__module__.startswith(("memmy_kb", "app")):
        for key, value in vars(obj).items():
            if not key.startswith("__") and not callable(value):
                walk(value, f"{path}.{key}", depth + 1)
    elif ours(obj):
        state = dict(getattr(obj, "__dict__", {}))
        for slot in getattr(type(obj), "__slots__", ()):
            if hasattr(obj, slot):
                state[slot] = getattr(obj, slot)
        for key, value in state.items():
            walk(value, f"{path}.{key}", depth + 1)

for name, module in sorted(sys.modules.items()):
    if name.startswith("memmy_kb") or name == "app":
        for key, value in vars(module).items():
            if not key.startswith("__") and not isinstance(value, type(sys)) and not callable(value) or isinstance(value, type):
                walk(value, f"{name}.{key}", 0)
for factory in composition._CACHED_FACTORIES:
    if factory.cache_info().currsize:
        walk(factory(), f"composition.{factory.__name__}()", 0)
print(json.dumps(found))
"""

# Two environments restored from one primed process; each reports what must be its own.
_RESTORE_TWICE = """
import gc, os, random, ssl, uuid
from snapshot_restore_py import get_after_restore
from memmy_kb import composition

def report():
    from aws_lambda_powertools.utilities.parameters import base as parameters
    gc.unfreeze()  # what priming built was frozen (memmy_kb.cold_start): get_objects() lists no frozen object
    generators = sorted(
        str(hash(obj.getstate())) for obj in gc.get_objects()
        if isinstance(obj, random.Random) and not isinstance(obj, random.SystemRandom)
    )
    cached = sorted(
        f.__name__ for f in composition._CACHED_FACTORIES
        if f.cache_info().currsize and f not in composition._SHAREABLE_FACTORIES
    )
    return {
        "random": [random.random() for _ in range(3)],
        "openssl": ssl.RAND_bytes(16).hex(),
        "uuid": uuid.uuid4().hex,
        "generators": generators,
        "cached": cached,
        "parameters": len(parameters.DEFAULT_PROVIDERS),
        "governor": repr(composition.get_rate_governor()),
    }

# What a snapshot could hold cached (priming forgets its own; a later hook or import might not): the MemOS
# key provider and a rate history. A restore must not trust either.
composition.memos_api_key()
composition.get_rate_governor().allowances({"p1": 4}, {})
reports = []
snapshot = random.getstate()
for _ in range(2):
    read, write = os.pipe()
    child = os.fork()
    if child == 0:
        try:
            # Python reseeds its shared generator in a forked child; a restored snapshot gets no such help.
            random.setstate(snapshot)
            os.close(read)
            if RESTORE:
                for func, args, kwargs in get_after_restore():
                    func(*args, **kwargs)
            os.write(write, json.dumps(report()).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        reports.append(json.loads(pipe.read()))
    os.waitpid(child, 0)
print(json.dumps(reports))
"""


def _run(code: str) -> object:
    return json.loads(_stdout(code).strip().splitlines()[-1])


def _stdout(code: str) -> str:
    """What ``code`` prints, run in a fresh interpreter set up as Lambda runs the recall handler."""
    environment = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        **LAMBDA_ENVIRONMENT,
        # No table here: the governor keeps its own rate history only (the fleet budget's state is in the
        # table, shared on purpose; what an environment took of it goes with its governor).
        "RECALL_FLEET_BUDGET": "off",
        "PYTHONPATH": os.pathsep.join([str(RECALL), str(REPO_ROOT / "layers" / "core" / "python"), *sys.path]),
    }
    done = subprocess.run(  # noqa: S603 - our own snippet, run by this interpreter
        [sys.executable, "-c", code], cwd=RECALL, env=environment, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _fingerprint(plant: str = "") -> dict[str, str]:
    found = _run(_PRIME.replace("PLANT", plant) + _FINGERPRINT)
    assert isinstance(found, dict)
    return found


@pytest.fixture
def registry() -> Iterator[None]:
    """snapshot_restore_py's registry as it was, after the test."""
    before = list(snapshot_restore_py.get_before_snapshot())
    after = list(snapshot_restore_py.get_after_restore())
    yield
    snapshot_restore_py.get_before_snapshot()[:] = before
    snapshot_restore_py.get_after_restore()[:] = after


def test_outside_lambda_no_hook_is_registered(monkeypatch: pytest.MonkeyPatch, registry: None) -> None:
    monkeypatch.delenv("AWS_EXECUTION_ENV", raising=False)
    before = len(snapshot_restore_py.get_before_snapshot())

    assert snapstart.register(lambda: None) is False

    assert len(snapshot_restore_py.get_before_snapshot()) == before


def test_inside_lambda_priming_runs_first_then_the_collector_is_released(
    monkeypatch: pytest.MonkeyPatch, registry: None
) -> None:
    monkeypatch.setenv("AWS_EXECUTION_ENV", "AWS_Lambda_python3.12")
    snapshot_restore_py.get_before_snapshot().clear()
    snapshot_restore_py.get_after_restore().clear()
    ran: list[str] = []
    monkeypatch.setattr(snapstart, "release_collector", lambda: ran.append("release"))

    assert snapstart.register(lambda: ran.append("prime")) is True

    hooks = snapshot_restore_py.get_before_snapshot()
    while hooks:  # as the runtime runs them: last registered first
        func, args, kwargs = hooks.pop()
        func(*args, **kwargs)
    assert ran == ["prime", "release"]
    assert [func for func, _, _ in snapshot_restore_py.get_after_restore()] == [snapstart.after_restore]


def test_priming_captures_no_value_unique_to_an_environment() -> None:
    # Given two interpreters primed independently, as two versions' snapshots would be
    first, second = _fingerprint(), _fingerprint()

    # Then every module-level value of ours is the same in both: no id, nonce, generator state or clock
    # reading was made before the snapshot (each would differ between two runs)
    assert first.keys() == second.keys()
    assert {path for path in first if first[path] != second[path]} == set()
    # (the walk reached the primed composition root: an empty comparison would pass for the wrong reason)
    assert "composition.get_settings().table_name" in first


def test_priming_writes_no_log_line_and_leaves_no_metric_to_publish() -> None:
    # The primed recall is no traffic: no "recall: served" line, no EMF document (MemosSearches), and
    # nothing buffered that the first real invocation's flush would publish
    buffered = "from memmy_kb.observability import metrics\nprint(json.dumps([metrics.metric_set, metrics.dimension_set]))"

    out = _stdout(_PRIME.replace("PLANT", "") + buffered)

    assert out.strip().splitlines() == ["[{}, {}]"]


def test_the_fingerprint_does_see_a_per_environment_value_made_before_the_snapshot() -> None:
    # A module-level id made at import or priming time: the comparison above must catch it
    plant = "import uuid, memmy_kb.settings\nmemmy_kb.settings.ENVIRONMENT_ID = uuid.uuid4().hex"
    first, second = _fingerprint(plant), _fingerprint(plant)

    assert {path for path in first if first[path] != second[path]} == {"memmy_kb.settings.ENVIRONMENT_ID"}


def _restore_twice(restore: bool) -> list[dict[str, object]]:
    reports = _run(_PRIME.replace("PLANT", "") + f"RESTORE = {restore}\n" + _RESTORE_TWICE)
    assert isinstance(reports, list)
    assert len(reports) == 2
    return reports


def test_two_environments_restored_from_one_snapshot_share_nothing_that_must_be_their_own() -> None:
    first, second = _restore_twice(restore=True)

    assert first["random"] != second["random"]  # Python's shared generator reseeded
    assert first["openssl"] != second["openssl"]  # OpenSSL's generator mixed with fresh entropy
    assert first["uuid"] != second["uuid"]
    # No generator anywhere in the process (the random module's among them) carries the same state in both
    assert first["generators"]
    assert second["generators"]
    assert set(first["generators"]) & set(second["generators"]) == set()  # type: ignore[arg-type]
    # No client (connection pool, credentials), MemOS key or secret value survives the restore
    assert first["cached"] == second["cached"] == []
    assert first["parameters"] == second["parameters"] == 0
    assert first["governor"] == second["governor"] == "RateGovernor(backends=[])"


def test_without_the_after_restore_hooks_two_environments_would_draw_the_same_numbers() -> None:
    # The control: the fork really is a snapshot, so the test above can fail
    first, second = _restore_twice(restore=False)

    assert first["random"] == second["random"]
    assert set(first["generators"]) & set(second["generators"])  # type: ignore[arg-type]
    # and what was cached when the snapshot was taken would serve both
    assert first["cached"] == second["cached"] == ["get_rate_governor", "memos_api_key"]
    assert first["governor"] == second["governor"] == "RateGovernor(backends=['p1'])"
