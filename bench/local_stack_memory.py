"""RSS of the local stack's moto server after 1,000 and after 10,000 writes of the kind the service makes.

moto runs in server mode in a process of its own, with ``memmy_local.aws.dynamodb``'s patches exactly as
``make run`` installs them (``--plain``: without them, for the record), provisioned from template.yaml.
The table holds a few hundred KBs (META, the owner's grant, the reader's profile). Each write is one
transaction as the service sends it: a share (the reader's grant, META's count and reader set, and a
ConditionCheck that the reader has not blocked the owner), the matching revoke, or, about one in nine, a
share of a grant that exists (cancelled: ConditionalCheckFailed); every fifth write is followed by a recall's
read of the reader's grants (a Query). The data set stays the same size, so the server's memory should
too: the figure is RSS after 10,000 writes / RSS after 1,000.

``python -m bench.local_stack_memory [--plain] [--writes 1000 10000]``
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

from bench.ingest_memory import spawn_moto, status_kib
from bench.recall_scale import kb_items, write_items

KBS = 200
READER = "bench-reader"
_SERVE = """
import sys, threading
from moto.moto_server.threaded_moto_server import ThreadedMotoServer
from memmy_local.aws.dynamodb import local_dynamodb
import contextlib
patched = sys.argv[2] == "patched"
with local_dynamodb() if patched else contextlib.nullcontext():
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=int(sys.argv[1]), verbose=False)
    server.start()
    threading.Event().wait()
"""


def start_server(patched: bool) -> tuple[subprocess.Popen[bytes], str]:
    """moto in server mode in its own process (patched as ``make run`` patches it, or plain)."""
    mode = "patched" if patched else "plain"
    return spawn_moto(lambda port: [sys.executable, "-c", _SERVE, str(port), mode], timeout=60)


def rss_mib(pid: int) -> float | None:
    """VmRSS of ``pid`` in MiB (Linux); None elsewhere."""
    kib = status_kib("VmRSS", pid)
    return kib / 1024 if kib is not None else None


def _s(value: str) -> dict[str, str]:
    return {"S": value}


def _seed(client: Any, table: str) -> None:
    items = [{"PK": _s(f"USER#{READER}"), "SK": _s("PROFILE"), "type": _s("profile"), "user_id": _s(READER)}]
    for n in range(KBS):
        items += kb_items(f"kb_bench{n:05d}", f"owner{n:05d}", f"memos{n:027d}")
    write_items(client, table, items)


def _share(table: str, n: int) -> list[dict[str, Any]]:
    kb, owner = f"kb_bench{n:05d}", f"owner{n:05d}"
    grant = {
        "PK": _s(f"USER#{READER}"), "SK": _s(f"KB#{kb}"), "GSI1PK": _s(f"KB#{kb}"), "GSI1SK": _s(f"USER#{READER}"),
        "type": _s("grant"), "user_id": _s(READER), "kb_id": _s(kb), "role": _s("reader"), "recall": {"BOOL": True},
        "memos_kb_id": _s(f"memos{n:027d}"), "owner_id": _s(owner), "granted_at": _s("2026-01-02T00:00:00+00:00"),
    }  # fmt: skip
    return [
        {"Put": {"TableName": table, "Item": grant, "ConditionExpression": "attribute_not_exists(PK)"}},
        {
            "Update": {
                "TableName": table,
                "Key": {"PK": _s(f"KB#{kb}"), "SK": _s("META")},
                "UpdateExpression": "SET member_count = if_not_exists(member_count, :zero) + :one"
                " ADD readers :reader, member_version :one",
                "ConditionExpression": "attribute_exists(PK) AND owner_id = :owner"
                " AND (attribute_not_exists(member_count) OR member_count < :cap)",
                "ExpressionAttributeValues": {
                    ":zero": {"N": "0"},
                    ":one": {"N": "1"},
                    ":owner": _s(owner),
                    ":cap": {"N": "100"},
                    ":reader": {"SS": [READER]},
                },
            }
        },
        {
            "ConditionCheck": {
                "TableName": table,
                "Key": {"PK": _s(f"USER#{READER}"), "SK": _s("PROFILE")},
                "ConditionExpression": "NOT contains(blocked, :owner)",
                "ExpressionAttributeValues": {":owner": _s(owner)},
            }
        },
    ]


def _revoke(table: str, n: int) -> list[dict[str, Any]]:
    kb = f"kb_bench{n:05d}"
    return [
        {
            "Delete": {
                "TableName": table,
                "Key": {"PK": _s(f"USER#{READER}"), "SK": _s(f"KB#{kb}")},
                "ConditionExpression": "attribute_exists(PK) AND #role = :reader",
                "ExpressionAttributeNames": {"#role": "role"},
                "ExpressionAttributeValues": {":reader": _s("reader")},
            }
        },
        {
            "Update": {
                "TableName": table,
                "Key": {"PK": _s(f"KB#{kb}"), "SK": _s("META")},
                "UpdateExpression": "SET member_count = member_count - :one DELETE readers :reader ADD member_version :one",
                "ConditionExpression": "attribute_exists(PK)",
                "ExpressionAttributeValues": {":one": {"N": "1"}, ":reader": {"SS": [READER]}},
            }
        },
    ]


def _transactions(table: str) -> Iterator[tuple[list[dict[str, Any]], bool]]:
    """Share, revoke, KB after KB, with a share of a KB already shared (cancelled) every 10th write:
    (actions, whether they are a refused share)."""
    cycle = 0
    while True:
        for n in range(KBS):
            yield _share(table, n), False
            if (n + cycle) % 4 == 0:
                yield _share(table, n), True
            yield _revoke(table, n), False
        cycle += 1


class _Writer:
    """Sends the transactions of ``_transactions`` and a recall's Query every 5th write."""

    def __init__(self, client: Any, table: str) -> None:
        self.client, self.table, self.done, self.cancelled = client, table, 0, 0
        self._next = _transactions(table)

    def write(self, count: int) -> None:
        from botocore.exceptions import ClientError

        for _ in range(count):
            actions, refused = next(self._next)
            try:
                self.client.transact_write_items(TransactItems=actions)
                assert not refused, "a share of an existing grant was accepted"
            except ClientError as error:
                if not refused or error.response["Error"]["Code"] != "TransactionCanceledException":
                    raise
                self.cancelled += 1
            self.done += 1
            if self.done % 5 == 0:
                self.client.query(
                    TableName=self.table,
                    KeyConditionExpression="PK = :pk AND begins_with(SK, :kb)",
                    ExpressionAttributeValues={":pk": _s(f"USER#{READER}"), ":kb": _s("KB#")},
                    ConsistentRead=True,
                )


def run(writes: tuple[int, ...] = (1_000, 10_000), patched: bool = True) -> dict[str, Any]:
    """RSS (MiB) of the moto server after each count of ``writes``; ``ratio``: last / first."""
    import boto3

    from memmy_local.lambdas.handlers import overlaid_environment
    from memmy_local.provision.resources import provision
    from memmy_local.template import load_template

    fake = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench", "AWS_DEFAULT_REGION": "us-east-1"}
    with overlaid_environment(fake):
        process, url = start_server(patched)
        try:
            # An issuer of our own, as the local stack names: the template's default (none) would mean its
            # Cognito user pool, which is not provisioned locally.
            login = {"JwtIssuer": "bench", "JwtAudience": "bench"}
            refs = provision(load_template(), endpoint_url=url, memos_api_key="bench", parameters=login).refs
            client = boto3.client("dynamodb", endpoint_url=url)
            table = refs["Table"]
            _seed(client, table)
            writer = _Writer(client, table)
            rss: dict[int, float | None] = {0: rss_mib(process.pid)}
            started = time.perf_counter()
            for target in writes:
                writer.write(target - writer.done)
                rss[target] = rss_mib(process.pid)
            elapsed = time.perf_counter() - started
        finally:
            process.terminate()
            process.wait(timeout=10)
    first, last = rss[writes[0]], rss[writes[-1]]
    ratio = last / first if first and last else None
    label = "patched as make run runs it" if patched else "plain moto 5.2.5"
    figures = ", ".join(
        f"{n:,} writes {mib:.0f} MiB" if mib else f"{n:,} writes n/a" for n, mib in rss.items()
    )
    print(
        f"local stack's moto server ({label}), {KBS} KBs, share/revoke transactions ({writer.cancelled} cancelled) "
        f"and a recall Query every 5th, {elapsed:.0f} s: RSS after {figures}"
        + (f"; ratio {writes[-1]:,}/{writes[0]:,} = {ratio:.2f}" if ratio else "")
    )
    return {"rss_mib": rss, "ratio": ratio, "patched": patched, "writes": writes, "seconds": elapsed}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--plain", action="store_true", help="moto without memmy_local.aws.dynamodb's patches"
    )
    parser.add_argument("--writes", type=int, nargs="+", default=[1_000, 10_000])
    args = parser.parse_args(argv)
    run(tuple(args.writes), patched=not args.plain)
    return 0


if __name__ == "__main__":
    sys.exit(main())
