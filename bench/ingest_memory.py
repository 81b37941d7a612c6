"""Peak memory of the ingest for a 100 MB file next to a 1 MB file, in one run.

Both go through the real path (``memmy_kb.domain.uploads.delivery.ingest_object``): HEAD, size and ownership checks,
UTF-8 verification (the 1 MB file read once into memory and sent inline as a data URL; the 100 MB file
streamed, copied server-side and sent as a presigned GET URL), the MemOS client's add call (answered by an
in-memory transport: MemOS's memory is not ours) and the DynamoDB transaction. S3 and DynamoDB are moto
in server mode in a *separate process*, so that moto's own buffers do not count as the ingest's.

Figures: the tracemalloc peak (Python allocations) and the peak RSS growth (VmHWM, reset before each
run through ``/proc/self/clear_refs``; Linux only, else "n/a").
"""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

MB = 1024 * 1024
LINE = "MemOS 是面向大模型的记忆操作系统。Memory for agents, line by line.\n".encode()


class RepeatedLines(io.RawIOBase):
    """A read-only file of ``size`` bytes of repeated UTF-8 lines, generated as it is read (the last,
    partial line is padded with spaces, so no character is cut)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.whole = size - size % len(LINE)
        self.position = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        n = min(len(buffer), self.size - self.position)
        if n <= 0:
            return 0
        start, end = self.position, self.position + n
        lines_end = min(end, self.whole)
        piece = b""
        if start < lines_end:
            offset = start % len(LINE)
            piece = (LINE * ((lines_end - start) // len(LINE) + 2))[offset : offset + lines_end - start]
        piece += b" " * (n - len(piece))
        buffer[:n] = piece
        self.position = end
        return n


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def spawn_moto(argv: Callable[[int], list[str]], timeout: float) -> tuple[subprocess.Popen[bytes], str]:
    """``argv(port)`` in a process of its own on a free port, returned once moto answers there."""
    port = _free_port()
    process = subprocess.Popen(  # noqa: S603 - our callers' own moto commands
        argv(port),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            httpx.get(f"{url}/moto-api/", timeout=1)
            return process, url
        except httpx.HTTPError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("moto server did not start")


def _start_moto() -> tuple[subprocess.Popen[bytes], str]:
    """moto's own server script from this venv."""
    server = Path(sys.executable).with_name("moto_server")
    return spawn_moto(lambda port: [str(server), "-H", "127.0.0.1", "-p", str(port)], timeout=30)


def status_kib(field: str, pid: int | str = "self") -> int | None:
    """``field`` (``VmRSS``, ``VmHWM``) of ``/proc/<pid>/status`` in KiB (Linux); None elsewhere."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def _reset_peak_rss() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def _measure(run: Callable[[], Any]) -> tuple[Any, int, int | None, float]:
    """``run()``'s result, its tracemalloc peak (bytes), its peak RSS growth (KiB) and wall time."""
    rss_tracked = _reset_peak_rss()
    rss_before = status_kib("VmRSS")
    tracemalloc.start()
    tracemalloc.reset_peak()
    started = time.perf_counter()
    try:
        result = run()
    finally:
        elapsed = time.perf_counter() - started
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    hwm = status_kib("VmHWM")
    growth = hwm - rss_before if rss_tracked and hwm is not None and rss_before is not None else None
    return result, peak, growth, elapsed


def _memos_transport(request: httpx.Request) -> httpx.Response:
    body = json.loads(request.content)
    files = [{"id": os.urandom(16).hex(), "name": f.get("name"), "status": "running"} for f in body["file"]]
    return httpx.Response(200, json={"code": 0, "data": files, "message": "ok"})


@contextmanager
def _moto_credentials() -> Iterator[None]:
    """The credentials moto takes (any), set for the run and put back after."""
    names = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION")
    saved = {k: os.environ.get(k) for k in names}
    os.environ.update(
        AWS_ACCESS_KEY_ID="bench",
        AWS_SECRET_ACCESS_KEY="bench",  # noqa: S106 - moto accepts any key
        AWS_DEFAULT_REGION="us-east-1",
    )
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@dataclass
class _World:
    kbs: Any
    contents: Any
    storage: Any
    memos: Any
    s3: Any
    bucket: str
    kb_id: str
    now: datetime


def _world(moto_url: str) -> _World:
    """The template provisioned on moto, a MemOS answering in memory, and one KB owned by alice."""
    import boto3
    from botocore.config import Config

    from memmy_kb.adapters.dynamodb.contents import DynamoContentStore
    from memmy_kb.adapters.dynamodb.knowledge_bases import DynamoKnowledgeBaseStore
    from memmy_kb.adapters.dynamodb.table import DynamoTable
    from memmy_kb.adapters.memos.backends import MemosBackends
    from memmy_kb.adapters.memos.client import MemosClient
    from memmy_kb.adapters.memos.key import MemosBackendConfig
    from memmy_kb.adapters.s3 import UploadStorage
    from memmy_kb.records import GrantRecord, KnowledgeBaseRecord
    from memmy_local.provision.resources import provision
    from memmy_local.template import load_template

    # An issuer of our own, as the local stack names: the template's default (none) would mean its
    # Cognito user pool, which is not provisioned locally.
    login = {"JwtIssuer": "bench", "JwtAudience": "bench"}
    refs = provision(load_template(), endpoint_url=moto_url, memos_api_key="bench", parameters=login).refs
    s3 = boto3.client("s3", endpoint_url=moto_url, config=Config(signature_version="s3v4"))
    table = DynamoTable(refs["Table"], boto3.client("dynamodb", endpoint_url=moto_url))
    client = MemosClient(
        "http://memos.invalid",
        lambda _: "key",
        http=httpx.Client(transport=httpx.MockTransport(_memos_transport)),
    )
    backend = MemosBackendConfig("default", "http://memos.invalid", "key", max_kbs=100)
    world = _World(
        kbs=DynamoKnowledgeBaseStore(table),
        contents=DynamoContentStore(table),
        storage=UploadStorage(refs["UploadBucket"], s3),
        memos=MemosBackends(lambda _refresh: [backend], lambda _url, _key: client),
        s3=s3,
        bucket=refs["UploadBucket"],
        kb_id="kb_" + "0" * 24,
        now=datetime.now(UTC),
    )
    kb_id, now = world.kb_id, world.now
    world.kbs.put_kb_with_owner_grant(
        KnowledgeBaseRecord(
            kb_id=kb_id, name="bench", owner_id="alice", memos_kb_id="m" * 32, created_at=now
        ),
        GrantRecord(
            user_id="alice",
            kb_id=kb_id,
            role="owner",
            recall=True,
            memos_kb_id="m" * 32,
            owner_id="alice",
            granted_at=now,
        ),
        max_owned=1,
        request=None,
    )
    return world


def _ingest_one(world: _World, config: Any, index: int, size: int) -> tuple[int, int | None]:
    """One file of ``size`` bytes uploaded and ingested; its tracemalloc peak and RSS growth, printed."""
    from memmy_kb.domain.storage import upload_object_key
    from memmy_kb.domain.uploads.delivery import ingest_object
    from memmy_kb.records import UploadRecord

    upload_id = f"up_{index:024x}"
    key = upload_object_key(world.kb_id, upload_id)
    world.contents.put_upload(
        UploadRecord(
            kb_id=world.kb_id,
            upload_id=upload_id,
            owner_id="alice",
            object_key=key,
            filename=f"bench-{size // MB}mb.txt",
            size_bytes=size,
            content_type="text/plain",
            created_at=world.now,
            expires_at=int(world.now.timestamp()) + 86400,
        ),
        capacity=config.capacity,
    )
    with tempfile.TemporaryDirectory():
        world.s3.upload_fileobj(io.BufferedReader(RepeatedLines(size), 1 * MB), world.bucket, key)
    outcome, peak, rss, elapsed = _measure(
        lambda: ingest_object(world.kbs, world.contents, world.storage, world.memos, key, config=config)
    )
    assert outcome.result == "submitted", outcome
    path = "inline data URL" if size <= config.inline_max_bytes else "stream + presigned GET"
    rss_text = f"{rss / 1024:.1f} MB" if rss is not None else "n/a"
    print(f"{size // MB:>5} MB  {path:<22}  {peak / MB:>13.1f} MB  {rss_text:>15}  {elapsed:>6.2f}s")
    return peak, rss


def run(sizes: tuple[int, ...] = (1 * MB, 100 * MB)) -> dict[int, tuple[int, int | None]]:
    from memmy_kb.domain.uploads.ingest import IngestConfig
    from memmy_kb.records import KbCapacity

    process, moto_url = _start_moto()
    try:
        with _moto_credentials():
            world = _world(moto_url)
            # A cap no file size here reaches: the ingest holds it as in production, without refusing.
            config = IngestConfig(
                inline_max_bytes=5 * MB,
                get_url_ttl_seconds=900,
                capacity=KbCapacity(max_files=10_000, max_bytes=2**50),
                activity_retention_days=1,
            )
            print(
                "Ingest peak memory (S3/DynamoDB: moto server in another process; MemOS: in-memory transport)"
            )
            print(
                f"{'file':>8}  {'path':<22}  {'tracemalloc peak':>16}  {'peak RSS growth':>15}  {'time':>7}"
            )
            figures = {size: _ingest_one(world, config, index, size) for index, size in enumerate(sizes)}
    finally:
        process.terminate()
        process.wait(timeout=10)
    small, large = figures[sizes[0]], figures[sizes[-1]]
    print(
        f"ratio {sizes[-1] // MB} MB / {sizes[0] // MB} MB: tracemalloc peak {large[0] / small[0]:.2f}x"
        + (
            f", peak RSS growth {large[1] / max(small[1], 1):.2f}x"
            if small[1] and large[1] is not None
            else ""
        )
        + f" (file size {sizes[-1] / sizes[0]:.0f}x)"
    )
    return figures


if __name__ == "__main__":
    run()
