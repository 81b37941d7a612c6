"""Recall with 100, 10,000 and 100,000 KBs in the table: latency, table reads and MemOS calls per recall.

The real recall handler runs in-process on moto (provisioned from template.yaml) against the MemOS
emulator. The caller has a few KBs with documents; every other KB in the table (META + its owner's
grant) belongs to someone else and is written directly with batch writes. The design says a recall costs
two table reads and one MemOS call whatever the table holds.

moto's Query walks and sorts every item of the table before picking the key's partition (DynamoDB reads
only the partition), so on plain moto recall latency grows with the table for moto's sake, not ours.
The main figures therefore run with the local stack's patch that gives moto's Query DynamoDB's access
path (``memmy_local.aws.dynamodb.partition_queries``, which ``make run`` installs too); the items each Query
read (``ScannedCount``) are counted from the responses, and plain moto's figures (smallest and largest
table) are printed too, for the record.
"""

from __future__ import annotations

import contextlib
import statistics
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypedDict

CALLER = "bench-caller"
CALLER_KBS = 5
QUERY = "MemOS 开源版和商业版有什么区别"
EXCERPT = "MemOS 开源版和商业版的区别：开源版免费自部署，商业版提供托管、SLA 和企业支持。"
MEMOS_KEY = "bench-memos-key"
_BATCH = 25


def quiet_environment() -> dict[str, str]:
    return {
        "AWS_ACCESS_KEY_ID": "bench",
        "AWS_SECRET_ACCESS_KEY": "bench",
        "AWS_DEFAULT_REGION": "us-east-1",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_METRICS_DISABLED": "true",
        # One log line per recall would drown the figures.
        "POWERTOOLS_LOG_LEVEL": "WARNING",
        # Each bench's caller recalls back to back, far past a person's per-user limit (docs/limits.md):
        # the figures are the recall's own, so the limit is out of reach here.
        "RECALL_BURST": "1000000",
        "RECALL_RATE_PER_SECOND": "1000000",
    }


def kb_items(kb_id: str, owner: str, memos_kb_id: str) -> list[dict[str, Any]]:
    """META and the owner's grant of one KB, as the service writes them."""
    now = datetime.now(UTC).isoformat()
    meta = {
        "PK": {"S": f"KB#{kb_id}"},
        "SK": {"S": "META"},
        "type": {"S": "kb"},
        "kb_id": {"S": kb_id},
        "name": {"S": f"资料 {kb_id}"},
        "owner_id": {"S": owner},
        "memos_kb_id": {"S": memos_kb_id},
        "member_count": {"N": "0"},
        "created_at": {"S": now},
    }
    grant = {
        "PK": {"S": f"USER#{owner}"},
        "SK": {"S": f"KB#{kb_id}"},
        "GSI1PK": {"S": f"KB#{kb_id}"},
        "GSI1SK": {"S": f"USER#{owner}"},
        "type": {"S": "grant"},
        "user_id": {"S": owner},
        "kb_id": {"S": kb_id},
        "role": {"S": "owner"},
        "recall": {"BOOL": True},
        "memos_kb_id": {"S": memos_kb_id},
        "owner_id": {"S": owner},
        "granted_at": {"S": now},
    }
    return [meta, grant]


def write_items(client: Any, table: str, items: list[dict[str, Any]]) -> None:
    """``items`` put in ``table`` by batches, unprocessed items retried."""
    for start in range(0, len(items), _BATCH):
        request = {table: [{"PutRequest": {"Item": item}} for item in items[start : start + _BATCH]]}
        while request:
            request = client.batch_write_item(RequestItems=request).get("UnprocessedItems") or {}


@dataclass
class _Reads:
    operations: Counter[str] = field(default_factory=Counter)
    items: int = 0


@contextlib.contextmanager
def _counting(client: Any) -> Iterator[_Reads]:
    """Counts the DynamoDB operations ``client`` makes and the items its Queries read."""
    reads = _Reads()

    def before(model: Any, **_: Any) -> None:
        reads.operations[model.name] += 1

    def after(http_response: Any, parsed: dict[str, Any], model: Any, **_: Any) -> None:
        reads.items += int(parsed.get("ScannedCount", 0))

    client.meta.events.register("before-call.dynamodb", before)
    client.meta.events.register("after-call.dynamodb", after)
    try:
        yield reads
    finally:
        client.meta.events.unregister("before-call.dynamodb", before)
        client.meta.events.unregister("after-call.dynamodb", after)


class _Measured(TypedDict):
    """One size's recalls: latency, and per recall the table's operations, items read, MemOS calls."""

    median_ms: float
    p95_ms: float
    operations: dict[str, float]
    items_read: float
    memos_calls: float
    excerpts: int


def _measure(
    handler: Callable[[], dict[str, Any]], client: Any, searches: Callable[[], int], rounds: int
) -> _Measured:
    for _ in range(3):  # warm: the first call builds clients and fetches the MemOS key
        handler()
    timings, excerpts = [], 0
    before = searches()
    with _counting(client) as reads:
        for _ in range(rounds):
            started = time.perf_counter()
            reply = handler()
            timings.append(time.perf_counter() - started)
            assert reply["statusCode"] == 200, reply
            excerpts = reply["body"].count('"title"')
    # The machine is shared: a burst of other work can slow one stretch of recalls. The figure is the
    # lowest median of four consecutive blocks, so one such burst does not decide a ratio.
    block = max(1, len(timings) // 4)
    blocks = [timings[start : start + block] for start in range(0, len(timings) - block + 1, block)]
    return {
        "median_ms": min(statistics.median(b) for b in blocks) * 1000,
        "p95_ms": sorted(timings)[min(len(timings) - 1, int(len(timings) * 0.95))] * 1000,
        "operations": {op: n / rounds for op, n in sorted(reads.operations.items())},
        "items_read": reads.items / rounds,
        "memos_calls": (searches() - before) / rounds,
        "excerpts": excerpts,
    }


def _seed_caller(emulator: Any, dynamodb: Any, table: str) -> None:
    """The caller's KBs, each a real MemOS KB with one indexed excerpt."""
    from memmy_kb.adapters.memos.client import MemosClient
    from memmy_kb.adapters.memos.key import StaticApiKeyProvider

    caller_items = []
    with MemosClient(emulator.base_url, StaticApiKeyProvider(MEMOS_KEY)) as memos:
        for i in range(CALLER_KBS):
            memos_id = memos.create_knowledgebase(f"memmy:kb_caller{i}")
            file = emulator.store.add_file(
                memos_id, name="f.md", type_="document", size_bytes=1, content=b"", url=None,
                ready_at=time.time() + 3600,
            )  # fmt: skip
            emulator.store.complete_file(file.id, [(f"MemOS 开源VS商业化 {i}", EXCERPT)])
            caller_items += kb_items(f"kb_caller{i}", CALLER, memos_id)
    write_items(dynamodb, table, caller_items)


def _report(results: dict[Any, Any], sizes: tuple[int, ...], rounds: int, moto_rounds: int) -> None:
    """Each size's figures printed; the latency ratios added to ``results``."""
    small, large = sizes[0], sizes[-1]
    for size in sizes:
        figures = results[size]
        operations = ", ".join(f"{op} x{n:g}" for op, n in figures["operations"].items())
        print(
            f"recall, {size:,} KBs in the table (caller has {CALLER_KBS}), {rounds} recalls: median (best of 4 blocks) "
            f"{figures['median_ms']:.1f} ms, p95 {figures['p95_ms']:.1f} ms; per recall: DynamoDB {operations} "
            f"reading {figures['items_read']:g} items, MemOS /search/memory x{figures['memos_calls']:g}, "
            f"{figures['excerpts']} excerpts returned (table filled in {figures['fill_s']:.0f} s)"
        )
    results["ratios"] = {size: results[size]["median_ms"] / results[small]["median_ms"] for size in sizes}
    ratio = results["ratios"][large]
    plain = results[("plain moto", large)]["median_ms"] / results[("plain moto", small)]["median_ms"]
    results["ratio"], results["plain_moto_ratio"] = ratio, plain
    print(
        "recall median latency ratio vs "
        + f"{small:,} KBs: "
        + ", ".join(f"{size:,} KBs {results['ratios'][size]:.2f}" for size in sizes[1:])
    )
    print(
        f"  (plain moto, whose Query walks the whole table: {results[('plain moto', small)]['median_ms']:.0f} "
        f"vs {results[('plain moto', large)]['median_ms']:.0f} ms, ratio {plain:.1f}, "
        f"median of {moto_rounds}; DynamoDB reads only the partition)"
    )


def run(
    sizes: tuple[int, ...] = (100, 10_000, 100_000), rounds: int = 40, moto_rounds: int = 3
) -> dict[Any, Any]:
    from moto import mock_aws

    from memmy_local.aws.dynamodb import partition_queries
    from memmy_local.lambdas.handlers import load_function_module, overlaid_environment
    from memmy_local.memos_emulator.config import EmulatorConfig
    from memmy_local.memos_emulator.server import MemosEmulator
    from memmy_local.provision.resources import provision
    from memmy_local.template import function_environment, load_template
    from tests.support.events import FakeLambdaContext, claims_for, http_event

    template = load_template()
    config = EmulatorConfig(port=0, api_keys={MEMOS_KEY: "memmy"}, processing_delay=0)
    results: dict[Any, Any] = {}
    with MemosEmulator(config) as emulator, overlaid_environment(quiet_environment()), mock_aws():
        resources = provision(
            template,
            endpoint_url=None,
            memos_api_key=MEMOS_KEY,
            parameters={"MemosBaseUrl": emulator.base_url, "JwtIssuer": "bench", "JwtAudience": "bench"},
        )
        environment = {
            **function_environment(template, "RecallFunction", resources.refs),
            **quiet_environment(),
        }
        with overlaid_environment(environment):
            from memmy_kb.composition import dynamodb_client, reset_composition

            reset_composition()  # and the MemOS key cached by Parameters, when it is loaded
            dynamodb = dynamodb_client()
            table = resources.refs["Table"]

            _seed_caller(emulator, dynamodb, table)

            module = load_function_module("functions/recall/", "app.lambda_handler")
            event = http_event("POST", "/recall", claims=claims_for(CALLER), body={"query": QUERY})

            def handler() -> dict[str, Any]:
                reply: dict[str, Any] = module.lambda_handler(event, FakeLambdaContext())
                return reply

            def searches() -> int:
                return int(emulator.state()["calls"].get("/search/memory", 0))

            present = CALLER_KBS
            for size in sizes:
                started = time.perf_counter()
                write_items(
                    dynamodb,
                    table,
                    [
                        item
                        for n in range(present, size)
                        for item in kb_items(f"kb_other{n:06d}", f"user{n:06d}", f"memos-other-{n:06d}")
                    ],
                )
                present = max(present, size)
                fill_s = time.perf_counter() - started
                with partition_queries():
                    results[size] = {**_measure(handler, dynamodb, searches, rounds), "fill_s": fill_s}
                if size in (sizes[0], sizes[-1]):
                    results[("plain moto", size)] = _measure(handler, dynamodb, searches, moto_rounds)
            reset_composition()

    _report(results, sizes, rounds, moto_rounds)
    return results


if __name__ == "__main__":
    run()
