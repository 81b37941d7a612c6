"""Calls per route and trigger: DynamoDB, S3, Step Functions, Secrets Manager and MemOS, counted in one run.

The real handlers run in-process on moto (provisioned from template.yaml, with ``memmy_local.aws.dynamodb``'s
patches) and the MemOS emulator, through the test suite's ``Service`` (the template's routes, its IAM
check included). Every botocore ``_make_api_call`` is recorded with its answer, and every MemOS request
from the emulator's counters. Each route runs once warm: a first pass with other users fills the
handlers' caches (clients, the MemOS key), as a warm Lambda container has them; the counted pass follows.

DynamoDB request units are estimated from the recorded requests and answers with DynamoDB's rules
(reads: 4 KB units, half for eventually consistent reads; writes: 1 KB units; transactions: twice; an
item's size from its attribute names and values), so they are close to, not exactly, what AWS bills (``bench.dynamodb_units``),
and kept per operation and kind of item too (``Calls.by_kind``: the ``PRINT#`` Query, the ``FILE#`` BatchGetItem).
A cleanup is the state machine's work for one deletion: its CleanUp task (the cleanup function, invoked
until it says done) and its DeleteOutbox task (one DynamoDB DeleteItem by Step Functions); its state
transitions are CleanUp and Finished? per round, then DeleteOutbox.

``python -m bench.route_calls``
"""

from __future__ import annotations

import contextlib
import hashlib
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

from bench.dynamodb_units import item_bytes, item_kind, request_units, touched_items
from bench.recall_scale import quiet_environment

MEMOS_KEY = "bench-memos-key"
DOCUMENT = (
    "# 产品手册\nMemOS 开源版和商业版的区别：开源版免费自部署，商业版提供托管、SLA 和企业支持。\n".encode()
)
QUERY = "MemOS 开源版和商业版有什么区别"
# The file's next version: the replace's rows.
REVISED = DOCUMENT + "商业版另提供私有化部署。\n".encode()

# The rows, in the order the table prints them.
ROUTES = (
    "create KB",
    "list KBs",
    "share",
    "toggle recall",
    "request upload",
    "ingest (S3 trigger)",
    "recall",
    "empty-scope recall",
    "mcp search",
    "revoke",
    "request replace",
    "ingest (replace)",
    "delete file",
    "cleanup (file)",
    "delete KB",
    "cleanup (KB)",
    "reconcile run",
)


@dataclass
class Units:
    """The DynamoDB calls of one operation on one kind of item (the sort key's prefix: ``PRINT#``, ``FILE#``)."""

    calls: int = 0
    rru: float = 0.0
    wru: float = 0.0
    items: int = 0  # items read or written
    bytes: int = 0  # their size, as DynamoDB counts it
    binary: int = 0  # of which their binary attributes' values (a PRINT# item's fingerprints)


@dataclass
class Calls:
    """What one route or trigger did, once."""

    invocations: int = 1  # Lambda invocations
    operations: Counter[tuple[str, str]] = field(default_factory=Counter)  # (service, operation) -> calls
    memos: Counter[str] = field(default_factory=Counter)  # MemOS path -> calls
    rru: float = 0.0
    wru: float = 0.0
    transitions: int = 0  # Step Functions state transitions
    function: str = ""  # the template's logical id of the function that ran
    by_kind: dict[tuple[str, str], Units] = field(default_factory=dict)  # (operation, item kind) -> units

    def units(self, operation: str, kind: str) -> Units:
        """The counted ``operation`` calls on ``kind`` items (``PRINT#``, ``FILE#``...), none when there were none."""
        return self.by_kind.get((operation, kind), Units())

    def count(self, service: str) -> int:
        return sum(n for (s, _), n in self.operations.items() if s == service)

    def describe(self, service: str) -> str:
        """``3 (GetItem 2, Query 1)``, or ``0``."""
        ops = {op: n for (s, op), n in sorted(self.operations.items()) if s == service}
        if not ops:
            return "0"
        return f"{sum(ops.values())} ({', '.join(f'{op} {n}' for op, n in ops.items())})"

    def s3_requests(self) -> tuple[int, int]:
        """(PUT/COPY/POST/LIST-class requests, GET/HEAD-class requests); S3 does not bill DELETE."""
        put_class = get_class = 0
        for (service, op), n in self.operations.items():
            if service != "s3":
                continue
            if op in ("GetObject", "HeadObject"):
                get_class += n
            elif op not in ("DeleteObject", "DeleteObjects", "AbortMultipartUpload"):
                put_class += n
        return put_class, get_class


# ------------------------------------------------------------------------------------- recording


@contextlib.contextmanager
def recording() -> Iterator[Callable[[], Calls]]:
    """Records every AWS call made meanwhile; the callable takes what was recorded since its last call."""
    from botocore.client import BaseClient

    original = vars(BaseClient)["_make_api_call"]  # private: botocore's stubs do not name it
    pending: list[tuple[str, str, dict[str, Any], dict[str, Any]]] = []

    def record(self: Any, operation: str, params: dict[str, Any]) -> Any:
        try:
            response = original(self, operation, params)
        except Exception as error:
            response = getattr(error, "response", {}) or {}
            pending.append((self.meta.service_model.service_name, operation, params, response))
            raise
        pending.append((self.meta.service_model.service_name, operation, params, response))
        return response

    def take() -> Calls:
        calls = Calls()
        for service, operation, params, response in pending:
            calls.operations[(service, operation)] += 1
            if service == "dynamodb":
                rru, wru = request_units(operation, params, response)
                calls.rru += rru
                calls.wru += wru
                units = calls.by_kind.setdefault((operation, item_kind(operation, params, response)), Units())
                items = touched_items(operation, params, response)
                units.calls += 1
                units.rru += rru
                units.wru += wru
                units.items += len(items)
                units.bytes += sum(item_bytes(item) for item in items)
                units.binary += sum(len(v["B"]) for item in items for v in item.values() if "B" in v)
        pending.clear()
        return calls

    with mock.patch.object(BaseClient, "_make_api_call", record):
        yield take


# -------------------------------------------------------------------------------------- the run


class _Scenario:
    """Every route and trigger once, for an owner and a reader named after ``tag``."""

    def __init__(
        self, service: Any, emulator: Any, take: Callable[[], Calls], mcp_token: Callable[[str], str]
    ) -> None:
        self.service, self.emulator, self.take = service, emulator, take
        self.mcp_token = mcp_token
        self.function = ""

    def _mcp(self, user: str, method: str, params: dict[str, Any] | None = None) -> Any:
        """One JSON-RPC call of ``user``'s MCP client to ``POST /mcp`` (``tests.support.mcp_world``)."""
        from tests.support.mcp_world import answered

        self.function = "McpFunction"
        return answered(self.service, self.mcp_token(user), method, params)

    def _memos_calls(self) -> Counter[str]:
        return Counter(self.emulator.state()["calls"])

    @contextlib.contextmanager
    def _measure(self, results: dict[str, Calls] | None, name: str) -> Iterator[Calls]:
        before = self._memos_calls()
        self.take()  # what the harness did before this step is not the route's
        holder = Calls()
        yield holder
        calls = self.take()
        calls.memos = self._memos_calls() - before
        calls.invocations = holder.invocations
        calls.transitions = holder.transitions
        calls.operations.update(holder.operations)
        calls.wru += holder.wru
        calls.function, self.function = self.function, ""
        if results is not None:
            results[name] = calls

    def _call(self, method: str, path: str, user: str, expect: int, **kwargs: Any) -> Any:
        _, module, _ = self.service._match(method, path)
        self.function = self.service._functions[module]
        reply = self.service.call(method, path, user, **kwargs)
        if reply.status != expect:
            raise RuntimeError(f"{method} {path} as {user}: {reply.status} {reply.body}")
        return reply.body

    def _cleanup(self, results: dict[str, Calls] | None, name: str, cleanup_id: str) -> None:
        with self._measure(results, name) as extra:
            rounds, self.function = 0, "CleanupFunction"
            for rounds in range(1, 11):  # noqa: B007 - the count is the figure
                if self.service.invoke("CleanupFunction", {"cleanup_id": cleanup_id})["done"]:
                    break
            else:
                raise RuntimeError(f"cleanup {cleanup_id} not done after 10 rounds")
            extra.invocations = rounds
            extra.transitions = 2 * rounds + 1  # CleanUp and Finished? per round, then DeleteOutbox
            extra.operations[("dynamodb", "DeleteItem (state machine)")] += 1
            extra.wru += 1

    def run(self, tag: str, results: dict[str, Calls] | None) -> None:
        from tests.support.events import claims_for

        owner, reader, loner = f"owner-{tag}", f"reader-{tag}", f"loner-{tag}"
        # The reader's verified phone, one per pass: the share below names them by it, the costliest form.
        phone = f"+86 138 0013 {len(tag):04d}"
        for user in (owner, reader, loner):
            claims = claims_for(user, name=user, phone=phone if user == reader else None)
            self._call("PUT", "/me", user, 200, claims=claims)
        key = {"Idempotency-Key": f"create-{tag}"}
        with self._measure(results, "create KB"):
            # A login token that carries the user's name, so the create reads no profile for it.
            kb_id = self._call(
                "POST",
                "/knowledge-bases",
                owner,
                201,
                body={"name": f"资料 {tag}"},
                headers=key,
                claims=claims_for(owner, name=owner),
            )["id"]
        with self._measure(results, "share"):
            self._call("POST", f"/knowledge-bases/{kb_id}/members", owner, 201, body={"identifier": phone})
        with self._measure(results, "list KBs"):
            self._call("GET", "/knowledge-bases", reader, 200)
        with self._measure(results, "toggle recall"):
            self._call("PUT", f"/knowledge-bases/{kb_id}/recall", reader, 200, body={"enabled": True})
        size = len(DOCUMENT)
        with self._measure(results, "request upload"):
            ticket = self._call(
                "POST", f"/knowledge-bases/{kb_id}/uploads", owner, 201,
                body={"filename": "手册.md", "size_bytes": size}, headers={"Idempotency-Key": f"upload-{tag}"},
            )  # fmt: skip
        self._ingest(results, "ingest (S3 trigger)", ticket, DOCUMENT)
        with self._measure(results, "recall"):
            self._call("POST", "/recall", reader, 200, body={"query": QUERY})
        with self._measure(results, "empty-scope recall"):
            self._call("POST", "/recall", loner, 200, body={"query": QUERY})
        # The remote MCP endpoint's search, from a client already connected (its first call adds it).
        self._mcp(reader, "tools/list")
        with self._measure(results, "mcp search"):
            self._mcp(reader, "tools/call", {"name": "search", "arguments": {"query": QUERY}})
        with self._measure(results, "revoke"):
            self._call("DELETE", f"/knowledge-bases/{kb_id}/members/{reader}", owner, 204)
        files = self._call("GET", f"/knowledge-bases/{kb_id}/files", owner, 200)["files"]
        if not files:
            raise RuntimeError(f"no file in the listing of {kb_id}")
        file_id = files[0]["id"]
        with self._measure(results, "request replace"):
            ticket = self._call(
                "POST", f"/knowledge-bases/{kb_id}/files/{file_id}/replacements", owner, 201,
                body={"size_bytes": len(REVISED), "sha256": hashlib.sha256(REVISED).hexdigest(), "if_version": 1},
                headers={"Idempotency-Key": f"replace-{tag}"},
            )  # fmt: skip
        self._ingest(results, "ingest (replace)", ticket, REVISED)
        with self._measure(results, "delete file"):
            cleanup_id = self._call("DELETE", f"/knowledge-bases/{kb_id}/files/{file_id}", owner, 202)[
                "cleanup_id"
            ]
        self._cleanup(results, "cleanup (file)", cleanup_id)
        # The KB's cleanup removes one file too: a second upload, seeded as the ingest leaves it.
        from tests.support import seed

        seed.add_file(self.service, kb_id, owner, "路线图.md", DOCUMENT)
        with self._measure(results, "delete KB"):
            cleanup_id = self._call("DELETE", f"/knowledge-bases/{kb_id}", owner, 202)["cleanup_id"]
        self._cleanup(results, "cleanup (KB)", cleanup_id)
        with self._measure(results, "reconcile run"):
            self.function = "ReconcileFunction"
            self.service.invoke(
                "ReconcileFunction", {"source": "aws.events", "detail-type": "Scheduled Event"}
            )

    def _ingest(
        self, results: dict[str, Calls] | None, name: str, ticket: dict[str, Any], data: bytes
    ) -> None:
        """POST ``data`` with ``ticket``, then the ingest on the one S3 event it makes, counted as ``name``."""
        from memmy_local.lambdas.runners import sqs_event
        from tests.support.uploads import post_file
        from tests.support.uploads import sqs as sqs_client

        response = post_file(ticket, data, "手册.md")
        if response.status_code != 204:
            raise RuntimeError(f"the POST of {name}: {response.status_code} {response.text}")
        sqs = sqs_client(self.service)
        queue_url, queue_arn = self.service.refs["UploadQueue"], self.service.refs["UploadQueue.Arn"]
        messages = []
        for message in sqs.receive_message(
            QueueUrl=queue_url, MaxNumberOfMessages=10, MessageSystemAttributeNames=["All"]
        ).get("Messages", []):
            if '"Records"' in message["Body"]:
                messages.append(message)
            else:  # S3's test event when the notification was configured
                sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
        if len(messages) != 1:
            raise RuntimeError(f"expected the one S3 event of {name} in the queue, got {len(messages)}")
        with self._measure(results, name):
            self.function = "IngestFunction"
            result = self.service.invoke("IngestFunction", sqs_event(messages, queue_arn, "us-east-1"))
        if result.get("batchItemFailures"):
            raise RuntimeError(f"{name} failed: {result}")
        sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=messages[0]["ReceiptHandle"])


def _drop_metrics() -> None:
    """The handlers' metrics are not flushed here (the benchmarks after this one would print them)."""
    from aws_lambda_powertools import Metrics

    Metrics().clear_metrics()


@contextlib.contextmanager
def in_process_stack(extra_environment: dict[str, str] | None = None) -> Iterator[tuple[Any, Any]]:
    """(the test suite's ``Service``, the MemOS emulator): template.yaml's functions in-process on moto with
    the local stack's DynamoDB patches, every function's environment set (and ``extra_environment`` over
    it); template.yaml's permissions are not checked (the tests check them)."""
    from moto import mock_aws

    from memmy_local.aws.dynamodb import local_dynamodb
    from memmy_local.lambdas.handlers import overlaid_environment
    from memmy_local.memos_emulator.config import EmulatorConfig
    from memmy_local.memos_emulator.server import MemosEmulator
    from memmy_local.provision.resources import provision
    from memmy_local.template import function_environment, load_template
    from tests.support.aws import Service, _reset_caches
    from tests.support.emulator import EmulatorHandle

    template = load_template()
    config = EmulatorConfig(port=0, api_keys={MEMOS_KEY: "memmy"}, processing_delay=0)
    no_executions: Any = {"stepfunctions": {"execute_state_machine": False}, "lambda": {"use_docker": False}}
    with (
        MemosEmulator(config) as emulator,
        overlaid_environment(quiet_environment()),
        local_dynamodb(),
        mock_aws(config=no_executions),
    ):
        resources = provision(
            template,
            endpoint_url=None,
            memos_api_key=MEMOS_KEY,
            parameters={"MemosBaseUrl": emulator.base_url, "JwtIssuer": "bench", "JwtAudience": "bench"},
        )
        environment: dict[str, str] = {}
        for name, resource in sorted(template["Resources"].items()):
            if resource["Type"] == "AWS::Serverless::Function":
                environment.update(function_environment(template, name, resources.refs))
        with overlaid_environment({**environment, **quiet_environment(), **(extra_environment or {})}):
            _reset_caches()
            handle = EmulatorHandle(emulator, api_key=MEMOS_KEY)
            service = Service(template=template, refs=dict(resources.refs), memos=handle)
            with mock.patch("tests.support.aws.missing_permissions", return_value=[]):
                yield service, emulator
            _reset_caches()


def run(verbose: bool = True) -> dict[str, Calls]:
    """Each route and trigger once (warm), counted; prints one line per route."""
    results: dict[str, Calls] = {}
    from tests.support.mcp_tokens import serving_mcp_tokens

    with serving_mcp_tokens() as (settings, token), in_process_stack(settings) as (service, emulator), recording() as take:
        scenario = _Scenario(service, emulator, take, token)
        scenario.run("warm", None)
        scenario.run("counted", results)
    _drop_metrics()
    if verbose:
        for name in ROUTES:
            calls = results[name]
            print(
                f"{name}: Lambda x{calls.invocations}; DynamoDB {calls.describe('dynamodb')} ≈ {calls.rru:g} RRU, "
                f"{calls.wru:g} WRU; S3 {calls.describe('s3')}; Step Functions {calls.describe('stepfunctions')}"
                f" ({calls.transitions} transitions); Secrets {calls.describe('secretsmanager')}; MemOS "
                f"{sum(calls.memos.values())} ({', '.join(f'{p} {n}' for p, n in sorted(calls.memos.items())) or '-'})"
            )
    return results


if __name__ == "__main__":
    run()
    sys.exit(0)
