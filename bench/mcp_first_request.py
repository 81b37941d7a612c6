"""The ``mcp`` handler's cold import and first ``search``, next to recall's, by ``bench.import_time``'s rules.

In one run of ``import_time``'s rounds (a fresh Python 3.12 per sample, the layer built as ``sam build``
builds it, CPU time less a bare interpreter's, the medians of per-round costs and ratios to ``import
boto3``): the ``recall`` and ``mcp`` handlers' ``import app``, recall's import plus one ``POST /recall``
(``import_time.FIRST_RECALL``), and the mcp handler's import plus one ``search`` through ``POST /mcp``
for the same caller and scope against the same loopback stubs. The search comes from a client already
connected (the stub's DynamoDB answers the connection's GetItem with an active connection, used just
now), with a token signed by a key whose JWKS is served on 127.0.0.1: the first token of a container
fetches the JWKS (httpx) and loads PyJWT and cryptography, so all of that is in its figure.

``python -m bench.mcp_first_request [--rounds N]``
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
import time
from io import BytesIO
from pathlib import Path
from typing import Any

from bench import import_time

# One tools/call of ``search`` as API Gateway sends it to the mcp function; it must answer one result per KB.
FIRST_SEARCH = """
import json, app
class Context:
    function_name = "memmy-bench-mcp"; memory_limit_in_mb = 512; aws_request_id = "bench"
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:memmy-bench-mcp"
    log_group_name = "/aws/lambda/memmy-bench-mcp"; log_stream_name = "bench"
    def get_remaining_time_in_millis(self): return 6000
headers = {"content-type": "application/json", "accept": "application/json, text/event-stream",
           "mcp-protocol-version": "2025-06-18", "authorization": "Bearer " + TOKEN}
call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "search", "arguments": {"query": "how do I start it?"}}}
event = {"version": "2.0", "routeKey": "POST /mcp", "rawPath": "/mcp", "rawQueryString": "", "headers": headers,
         "isBase64Encoded": False, "body": json.dumps(call),
         "requestContext": {"http": {"method": "POST", "path": "/mcp"}, "routeKey": "POST /mcp",
                            "requestId": "bench", "stage": "$default", "domainName": "bench.example"}}
answer = app.lambda_handler(event, Context())
body = json.loads(answer["body"])
assert answer["statusCode"] == 200 and len(body["result"]["structuredContent"]["results"]) == KBS, answer
"""
USER = "user-1"  # import_time's stub grants are this user's


def build_function_packages(root: Path, python: str, name: str) -> Path:
    """``build/bench-function-<name>``: the function's own ``requirements.txt``, pinned, installed for this
    machine's processor, as ``sam build`` installs them into the function's package (for arm64)."""
    requirements = root / "functions" / name / "requirements.txt"
    target = root / "build" / f"bench-function-{name}"
    stamp = target / "requirements.sha256"
    digest = hashlib.sha256(requirements.read_bytes()).hexdigest()
    if stamp.is_file() and stamp.read_text() == digest:
        return target
    install = [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--upgrade"]
    cache = str(root / "build" / "pip-cache")
    subprocess.run(  # noqa: S603 - pip with the function's pins
        [*install, "--no-deps", "--only-binary=:all:", "--cache-dir", cache, "--target", str(target),
         "-r", str(requirements)],
        check=True,
    )  # fmt: skip
    stamp.write_text(digest)
    return target


def _connection(key: dict[str, Any]) -> dict[str, Any]:
    """The caller's connection, active and used just now (so the search writes no ``last_used``)."""
    from tests.support.mcp_tokens import CLIENT_ID

    now = {"N": str(int(time.time()))}
    return {
        **key, "type": {"S": "mcp_connection"}, "user_id": {"S": USER}, "connection_id": key["SK"],
        "client_id": {"S": CLIENT_ID}, "client_name": {"S": "Claude"}, "scope": {"L": [{"S": "kb.search"}]},
        "since": now, "last_used": now, "state": {"S": "active"}, "revoked_at": {"NULL": True},
        "authorized_at": now,
    }  # fmt: skip


class McpStub(import_time.StubBackend):
    """``import_time``'s stubs, and the GetItem of an MCP connection answered with one."""

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        request = json.loads(raw or b"{}")
        if self.headers.get("x-amz-target") == "DynamoDB_20120810.GetItem" and request.get("Key", {}).get(
            "PK", {}
        ).get("S", "").startswith("MCPCONN#"):
            data = json.dumps({"Item": _connection(request["Key"])}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/x-amz-json-1.0")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        self.rfile = BytesIO(raw)
        super().do_POST()


def run(rounds: int = import_time.ROUNDS) -> dict[str, tuple[float, float]]:
    """(ms, ratio to ``import boto3``) of ``import boto3`` and, for recall and mcp, the handler's import
    and its import plus first request; medians of ``rounds`` per-round figures."""
    from memmy_local.lambdas.handlers import repo_root
    from tests.support.mcp_tokens import ISSUER, RESOURCE, JwksServer, jwks_of, mcp_token, signing_key

    root = repo_root()
    python = import_time.python312(root)
    layer = import_time.build_layer(root).resolve()
    runtime = import_time.build_runtime(root, python)
    packages = {"recall": [], "mcp": [build_function_packages(root, python, "mcp")]}
    kbs = import_time.FIRST_RECALL_KBS
    with tempfile.TemporaryDirectory() as folder:
        key = signing_key(Path(folder))
        with JwksServer(jwks_of(key)).serving() as jwks, import_time.stub_backend(McpStub) as backend:
            mcp = {"MCP_TOKEN_ISSUER": ISSUER, "MCP_JWKS_URL": jwks.url, "MCP_RESOURCE_URL": RESOURCE}
            snippets: dict[str, tuple[str, Path, list[Path], dict[str, str]]] = {
                "python (nothing)": ("pass", root, [runtime], {}),
                "import boto3": ("import boto3", root, [runtime], {}),
            }
            for name, code in (
                ("recall", f"KBS = {kbs}\n{import_time.FIRST_RECALL}"),
                ("mcp", f"KBS = {kbs}\nTOKEN = {mcp_token(key, USER)!r}\n{FIRST_SEARCH}"),
            ):
                task = root / "functions" / name
                extra = {"LAMBDA_TASK_ROOT": str(task), "AWS_LAMBDA_FUNCTION_NAME": f"memmy-bench-{name}"}
                # As Lambda's path: the function's package (its own requirements), the layer, the runtime.
                path = [task, *packages[name], layer, runtime]
                snippets[f"{name} handler"] = ("import app", task, path, extra)
                snippets[f"{name} + first request"] = (code, task, path, {**extra, **backend, **mcp})
            samples: dict[str, list[float]] = {name: [] for name in snippets}
            for _ in range(rounds):  # each round times every snippet once, in turn
                for name, (code, cwd, path, environment) in snippets.items():
                    samples[name].append(import_time.once(python, code, cwd, path, environment))
    costs = import_time.summarise(samples)
    print(
        f"cold import and first request, built layer ({layer}), {rounds} rounds, medians ({kbs} KBs, stubs):"
    )
    for name, (ms, ratio) in costs.items():
        print(f"  {name}: {ms:.0f} ms, {ratio:.2f}x import boto3")
    return costs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=import_time.ROUNDS)
    run(parser.parse_args(argv).rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
