"""Cold import cost of each handler, from the built layer, next to ``import boto3`` alone.

Cost is the CPU time (user + system) of a fresh interpreter, less a bare one's: the machine is shared,
and wall clock on a busy box measures the neighbours. A run is 11 rounds (``--rounds``); each round times
a bare interpreter, ``import boto3`` and every handler once, in turn, and gives each handler's ratio to
that round's ``import boto3``. A handler's figure is the median of its 11 per-round ratios (and of its
per-round costs in ms), so a busy spell slows a round's boto3 and handlers together and its ratio stays put.

As on Lambda: a fresh Python 3.12 per sample, the function's folder as ``LAMBDA_TASK_ROOT`` and working
directory, ``import app``, with the layer's ``python/`` and then the runtime's boto3 on the path, the
template's Powertools settings in the environment, and no bytecode written (layers are read-only, so
only the bytecode built into the layer helps). The layer is built by its own Makefile
(``make build-CoreLayer``, as ``sam build`` runs it) into ``build/bench-layer`` when it is missing or
older than its sources, for this machine's processor: wheels with compiled code (pydantic-core) must run
here, everything else is what arm64 gets. The runtime's boto3 is the version pyproject.toml pins,
installed once into ``build/bench-runtime``. Interpreters start with ``-S``: the build machine's
site-packages hooks must not touch the layer, and the runtime's add nothing a handler imports.

``python -m bench.import_time --layer DIR --functions DIR`` times another layer and handlers (before and
after a change, say). Targets: recall at most 1.2x ``import boto3``, every other handler 1.5x.

``--first-request`` (``make bench`` sets it) also times the recall handler's import plus one ``POST /recall``
(``FIRST_RECALL_KBS`` grants with recall on, so as many concurrent MemOS searches, one hit each) against
loopback stubs of DynamoDB, Secrets Manager and MemOS: the CPU a cold recall really spends before it
answers, boto3, the clients, the MemOS key and httpx included. Target: at most 2x ``import boto3``. The
stubs speak plain HTTP: the TLS set-up of the AWS clients' connections is not counted (httpx's CA bundle,
loaded when its client is built, is).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import threading
import tomllib
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from memmy_local.lambdas.handlers import repo_root

LAYER_SOURCE = Path("layers/core/python")
TARGETS = {"recall": 1.2, "recall + first request": 2.0}
DEFAULT_TARGET = 1.5
# Rounds of a run: each times every snippet once; the figures are the medians over the rounds.
ROUNDS = 11

# What template.yaml's Globals give every function (references as placeholders) and what Lambda sets.
ENVIRONMENT = {
    "AWS_REGION": "us-east-1",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EXECUTION_ENV": "AWS_Lambda_python3.12",
    "_HANDLER": "app.lambda_handler",
    "POWERTOOLS_SERVICE_NAME": "memmy-kb",
    "POWERTOOLS_METRICS_NAMESPACE": "Memmy",
    "POWERTOOLS_LOG_LEVEL": "INFO",
    "TABLE_NAME": "memmy-bench-Table",
    "MEMOS_BASE_URL": "https://memos.example/api/openmem/v1",
    "MEMOS_API_KEY_SECRET": "arn:aws:secretsmanager:us-east-1:123456789012:secret:memmy-bench",
    "ACTIVITY_RETENTION_DAYS": "180",
    "PYTHONDONTWRITEBYTECODE": "1",
}


def python312(root: Path) -> str:
    """The Python 3.12 the layer's Makefile compiles with (the Lambda runtime's version); without one,
    stop with the Makefile's one line on how to get one."""
    found = subprocess.run(  # noqa: S603 - our own Makefile
        ["make", "-s", "-C", str(root / LAYER_SOURCE), "print-python"],  # noqa: S607
        check=True,
        capture_output=True,
        text=True,
    )
    if not found.stdout.strip():
        raise SystemExit(found.stderr.strip())
    return found.stdout.strip()


def _sources_digest(root: Path) -> str:
    digest = hashlib.sha256(platform.machine().encode())
    source = root / LAYER_SOURCE
    for path in sorted(p for p in source.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(str(path.relative_to(source)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def make_layer(
    root: Path, artifacts: Path, variables: dict[str, str] | None = None, **run: Any
) -> subprocess.CompletedProcess[Any]:
    """The layer's Makefile's ``build-CoreLayer`` (as ``sam build`` runs it) into ``artifacts``, with pip's
    downloads cached in ``build/pip-cache`` and ``variables`` (``LAYER_PLATFORM``) in its environment;
    ``run`` goes to ``subprocess.run``."""
    environment = {
        **os.environ,
        "ARTIFACTS_DIR": str(artifacts),
        "PIP_CACHE_DIR": str(root / "build" / "pip-cache"),
        **(variables or {}),
    }
    return subprocess.run(  # noqa: S603 - our own Makefile
        ["make", "-s", "-C", str(root / LAYER_SOURCE), "build-CoreLayer"],  # noqa: S607
        env=environment,
        **run,
    )


def build_layer(root: Path) -> Path:
    """``build/bench-layer/python``, rebuilt by the layer's Makefile when its sources changed."""
    artifacts = root / "build" / "bench-layer"
    stamp = artifacts / "sources.sha256"
    digest = _sources_digest(root)
    if (artifacts / "python").is_dir() and stamp.is_file() and stamp.read_text() == digest:
        return artifacts / "python"
    stamp.unlink(missing_ok=True)
    make_layer(root, artifacts, {"LAYER_PLATFORM": f"manylinux2014_{platform.machine()}"}, check=True)
    stamp.write_text(digest)
    return artifacts / "python"


def build_runtime(root: Path, python: str) -> Path:
    """``build/bench-runtime``: boto3 at pyproject's pin, compiled, as the Lambda runtime provides it."""
    pins = tomllib.loads((root / "pyproject.toml").read_text())["project"]["dependencies"]
    boto3 = next(pin for pin in pins if pin.startswith("boto3=="))
    target = root / "build" / "bench-runtime"
    stamp = target / "boto3.pin"
    if stamp.is_file() and stamp.read_text() == boto3:
        return target
    install = [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--upgrade"]
    cache = str(root / "build" / "pip-cache")
    subprocess.run(  # noqa: S603 - pip with our pin
        [*install, "--cache-dir", cache, "--target", str(target), boto3],
        check=True,
    )
    stamp.write_text(boto3)
    return target


def once(python: str, code: str, cwd: Path, path: list[Path], extra: dict[str, str]) -> float:
    """CPU seconds (user + system) of one fresh interpreter running ``code``."""
    environment = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        **ENVIRONMENT,
        **extra,
        "PYTHONPATH": os.pathsep.join(str(p) for p in path),
    }
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    # os._exit: a Lambda process is never torn down after its init, so interpreter teardown is not timed.
    script = f"{code}\nimport os\nos._exit(0)"
    subprocess.run(  # noqa: S603 - our own snippets
        [python, "-S", "-c", script], check=True, cwd=cwd, env=environment, stdout=subprocess.DEVNULL
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


# One POST /recall as API Gateway sends it, and a Lambda context; the handler must answer 200 with the hit.
FIRST_RECALL = """
import json, app
class Context:
    function_name = "memmy-bench-recall"; memory_limit_in_mb = 512; aws_request_id = "bench"
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:memmy-bench-recall"
    log_group_name = "/aws/lambda/memmy-bench-recall"; log_stream_name = "bench"
    def get_remaining_time_in_millis(self): return 6000
claims = {"sub": "user-1", "iss": "bench", "aud": "memmy-kb"}
event = {"version": "2.0", "routeKey": "POST /recall", "rawPath": "/recall", "rawQueryString": "",
         "headers": {"content-type": "application/json"}, "isBase64Encoded": False,
         "body": json.dumps({"query": "how do I start it?"}),
         "requestContext": {"http": {"method": "POST", "path": "/recall"}, "routeKey": "POST /recall",
                            "requestId": "bench", "stage": "$default", "authorizer": {"jwt": {"claims": claims}}}}
answer = app.lambda_handler(event, Context())
body = json.loads(answer["body"])
assert answer["statusCode"] == 200 and body["scope_size"] == KBS and len(body["items"]) == KBS, answer
"""
# The caller's scope on a cold recall: as many KBs as the cost model's typical scope (bench.cost_model).
FIRST_RECALL_KBS = 3


def _grant(n: int) -> dict[str, dict[str, object]]:
    return {
        "PK": {"S": "USER#user-1"}, "SK": {"S": f"KB#kb_{n}"}, "user_id": {"S": "user-1"}, "kb_id": {"S": f"kb_{n}"},
        "role": {"S": "owner"}, "recall": {"BOOL": True}, "memos_kb_id": {"S": f"memos-{n}"},
        "owner_id": {"S": "user-1"}, "granted_at": {"S": "2026-01-01T00:00:00+00:00"},
    }  # fmt: skip


def _meta(key: dict[str, dict[str, str]]) -> dict[str, dict[str, object]]:
    kb_id = key["PK"]["S"].removeprefix("KB#")
    return {
        "PK": {"S": f"KB#{kb_id}"}, "SK": {"S": "META"}, "type": {"S": "kb"}, "kb_id": {"S": kb_id},
        "name": {"S": f"Guide {kb_id}"}, "owner_id": {"S": "user-1"}, "memos_kb_id": {"S": f"memos-{kb_id}"},
        "member_count": {"N": "0"}, "created_at": {"S": "2026-01-01T00:00:00+00:00"},
    }  # fmt: skip


class StubBackend(BaseHTTPRequestHandler):
    """DynamoDB's Query (the grants), BatchGetItem (the KBs' names), UpdateItem (the per-user recall limit's
    counter), GetItem and PutItem (the fleet's MemOS budget), Secrets Manager's GetSecretValue (the key)
    and MemOS's search (one hit per KB searched)."""

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
        target = self.headers.get("x-amz-target", "")
        if target == "DynamoDB_20120810.Query":
            grants = [_grant(n) for n in range(FIRST_RECALL_KBS)]
            reply: dict[str, object] = {"Items": grants, "Count": len(grants), "ScannedCount": len(grants)}
        elif target == "DynamoDB_20120810.BatchGetItem":
            asked = {
                table: [_meta(key) for key in keys["Keys"]] for table, keys in request["RequestItems"].items()
            }
            reply = {"Responses": asked, "UnprocessedKeys": {}}
        elif target == "DynamoDB_20120810.UpdateItem":
            # The per-user recall limit's counter: the first recall of this window.
            window = request["ExpressionAttributeNames"]["#cur"]
            reply = {"Attributes": {**request["Key"], window: {"N": "1"}}}
        elif target == "DynamoDB_20120810.GetItem":
            reply = {}  # the fleet's MemOS budget: no bucket item yet
        elif target == "DynamoDB_20120810.PutItem":
            reply = {}  # the fleet's budget: the new bucket item, written on its condition
        elif target == "secretsmanager.GetSecretValue":
            reply = {"ARN": "arn:bench", "Name": "bench", "SecretString": "bench-key", "VersionId": "1"}
        elif self.path.endswith("/search/memory"):
            hits = [
                {
                    "memory_key": f"Guide {kb}",
                    "memory_value": "Press the red button twice.",
                    "relativity": 0.9,
                }
                for kb in request.get("knowledgebase_ids", [])
            ]
            reply = {"code": 0, "message": "ok", "data": {"memory_detail_list": hits}}
        else:
            self.send_error(404)
            return
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("content-type", "application/x-amz-json-1.0" if target else "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@contextmanager
def stub_backend(handler: type[StubBackend] = StubBackend) -> Iterator[dict[str, str]]:
    """The environment that points a recall handler at the stubs (``handler``'s; fake credentials: nothing
    leaves the box)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield {
            "AWS_ENDPOINT_URL_DYNAMODB": url,
            "AWS_ENDPOINT_URL_SECRETS_MANAGER": url,
            "AWS_ACCESS_KEY_ID": "bench",
            "AWS_SECRET_ACCESS_KEY": "bench",
            "MEMOS_BASE_URL": f"{url}/api/openmem/v1",
        }
    finally:
        server.shutdown()
        server.server_close()


def summarise(samples: dict[str, list[float]]) -> dict[str, tuple[float, float]]:
    """Per snippet of ``samples`` (CPU seconds per round, with ``python (nothing)`` and ``import boto3``
    among them): its cost in ms and its ratio to ``import boto3``, each the median over the rounds of that
    round's figure, with the round's bare interpreter taken off. A round times every snippet once, one
    after another, so its ratio compares samples taken under the same load of the machine."""
    bare, boto = samples["python (nothing)"], samples["import boto3"]
    summary = {}
    for name, times in samples.items():
        if name == "python (nothing)":
            continue
        costs = [t - b for t, b in zip(times, bare, strict=True)]
        ratios = [cost / (o - b) for cost, o, b in zip(costs, boto, bare, strict=True)]
        summary[name] = (statistics.median(costs) * 1000, statistics.median(ratios))
    return summary


def run(
    rounds: int = ROUNDS,
    layer: Path | None = None,
    functions: Path | None = None,
    *,
    first_request: bool = False,
    handlers: list[str] | None = None,
) -> dict[str, tuple[float, float]]:
    """Per ``import boto3`` and ``<name> handler``: the import cost (ms, less a bare interpreter's) and its
    ratio to ``import boto3``'s, medians of ``rounds`` per-round figures (``summarise``)."""
    root = repo_root()
    python = python312(root)
    layer = (layer or build_layer(root)).resolve()
    runtime = build_runtime(root, python)
    functions = (functions or root / "functions").resolve()
    names = sorted(
        p.parent.name for p in functions.glob("*/app.py") if not handlers or p.parent.name in handlers
    )
    # (code, working directory, sys.path, environment) per sample; the handlers run as Lambda loads them.
    snippets: dict[str, tuple[str, Path, list[Path], dict[str, str]]] = {
        "python (nothing)": ("pass", root, [runtime], {}),
        "import boto3": ("import boto3", root, [runtime], {}),
    }
    for name in names:
        task = functions / name
        extra = {"LAMBDA_TASK_ROOT": str(task), "AWS_LAMBDA_FUNCTION_NAME": f"memmy-bench-{name}"}
        snippets[name] = ("import app", task, [task, layer, runtime], extra)
    stubs: AbstractContextManager[dict[str, str]] = stub_backend() if first_request else nullcontext({})
    with stubs as backend:
        if first_request and "recall" in names:
            _, task, path, extra = snippets["recall"]
            code = f"KBS = {FIRST_RECALL_KBS}\n{FIRST_RECALL}"
            snippets["recall + first request"] = (code, task, path, {**extra, **backend})
        # A round times each snippet once, in turn, so that machine noise hits them alike.
        samples: dict[str, list[float]] = {name: [] for name in snippets}
        for _ in range(rounds):
            for name, (code, cwd, path, extra) in snippets.items():
                samples[name].append(once(python, code, cwd, path, extra))
    summary = summarise(samples)
    costs = {
        name if name == "import boto3" else f"{name} handler": figures for name, figures in summary.items()
    }
    print(
        f"import cost (CPU time) from the built layer ({layer}), fresh Python 3.12 interpreters, {rounds} rounds;"
        " per round each snippet once, less a bare interpreter; medians of the rounds' costs and ratios:"
    )
    print(f"  import boto3 (the runtime's): {costs['import boto3'][0]:.0f} ms")
    for name in names:
        ms, ratio = costs[f"{name} handler"]
        target = TARGETS.get(name, DEFAULT_TARGET)
        verdict = "ok" if ratio <= target else "OVER"
        print(f"  {name} handler: {ms:.0f} ms, {ratio:.2f}x boto3 (target {target}x: {verdict})")
    if "recall + first request handler" in costs:
        ms, ratio = costs["recall + first request handler"]
        target = TARGETS["recall + first request"]
        verdict = "ok" if ratio <= target else "OVER"
        print(
            f"  recall handler + one POST /recall ({FIRST_RECALL_KBS} KBs, stubs): {ms:.0f} ms, {ratio:.2f}x boto3"
            f" (target {target}x: {verdict})"
        )
    return costs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--layer", type=Path, help="a built layer's python/ folder (default: build it)")
    parser.add_argument("--functions", type=Path, help="the folder of the functions' app.py (default: ours)")
    parser.add_argument(
        "--first-request", action="store_true", help="also time recall's import plus one POST /recall (stubs)"
    )
    parser.add_argument(
        "--handlers", nargs="+", help="time only these handlers (folder names under functions/)"
    )
    args = parser.parse_args(argv)
    run(args.rounds, args.layer, args.functions, first_request=args.first_request, handlers=args.handlers)
    return 0


if __name__ == "__main__":
    sys.exit(main())
