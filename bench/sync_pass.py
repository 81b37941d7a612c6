"""A folder sync's pass over 1,000 files (``memmy_kb_client.sync``): with nothing changed, and with 10
changed. The KB is the test suite's in-memory one (``tests.support.fake_kb``), which counts every call, so
the figures are the pass's API calls and its own time on this machine (stat, the hash cache, the plan),
set against reading and hashing the 1,000 files once, which is what a pass without the cache would do.
Each figure is the least of seven runs (the machine is shared).

``python -m bench.sync_pass``
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

from memmy_kb_client.storage_post import file_sha256
from memmy_kb_client.sync.run import run_pass
from memmy_kb_client.sync.store import SyncStore
from tests.support.fake_kb import FakeKb

FILES = 1000
FOLDERS = 10
FILE_BYTES = 64 * 1024
CHANGED = 10
RUNS = 7


def _folder(root: Path) -> list[Path]:
    paths = []
    settled = time.time_ns() - 3600 * 10**9
    for index in range(FILES):
        path = root / f"part-{index % FOLDERS}" / f"note-{index:04d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes((f"# note {index}\n".encode() + b"x" * FILE_BYTES)[:FILE_BYTES])
        os.utime(path, ns=(settled, settled))  # written an hour ago: its hash is kept (local.MTIME_SLACK_NS)
        paths.append(path)
    return paths


def _timed_pass(kb: FakeKb, store: SyncStore, root: Path, locks: Path) -> tuple[float, Any]:
    kb.calls.clear()
    started = time.perf_counter()
    result = run_pass(kb, store, kb.kb_id, root, lock_dir=locks, send=kb.send)
    return (time.perf_counter() - started) * 1000, result


def run() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as scratch:
        root, locks = Path(scratch) / "folder", Path(scratch) / "locks"
        paths = _folder(root)
        kb, store = FakeKb(), SyncStore(Path(scratch) / "state" / "sync.sqlite3")
        _timed_pass(kb, store, root, locks)
        kb.ingest()
        _timed_pass(kb, store, root, locks)  # records the files the uploads became
        hashing = []
        for _ in range(RUNS):
            started = time.perf_counter()
            for path in paths:
                file_sha256(path)
            hashing.append((time.perf_counter() - started) * 1000)
        unchanged = [_timed_pass(kb, store, root, locks) for _ in range(RUNS)]
        calls = dict(kb.calls)
        _, last = unchanged[-1]
        changes = []
        for run_index in range(RUNS):
            for path in paths[:CHANGED]:
                path.write_bytes(f"# changed {run_index}\n".encode() + path.read_bytes()[12:])
            changes.append(_timed_pass(kb, store, root, locks))
            changed_calls = dict(kb.calls)
            kb.ingest()
        changed_ms, changed = min(changes, key=lambda c: c[0])
        store.close()
    return {
        "hash_once_ms": min(hashing),
        "unchanged_ms": min(ms for ms, _ in unchanged),
        "unchanged_calls": calls,
        "unchanged_hashed": last.hashed,
        "unchanged_changes": last.plan.changes,
        "changed_ms": changed_ms,
        "changed_calls": changed_calls,
        "changed_hashed": changed.hashed,
        "replaced": len(changed.plan.replaces),
    }


def rows() -> list[tuple[str, str, str]]:
    r = run()
    label = f"folder sync, {FILES:,} files ({FILE_BYTES // 1024} KB each, {FOLDERS} sub-folders)"
    calls = sum(r["unchanged_calls"].values())
    sent = r["changed_calls"]
    return [
        (
            label,
            "a pass with nothing changed",
            f"{calls} API calls ({r['unchanged_calls'].get('list_files', 0)} listings, 1 KB read), "
            f"{r['unchanged_changes']} uploads, {r['unchanged_hashed']} files hashed; {r['unchanged_ms']:.0f} ms "
            f"vs {r['hash_once_ms']:.0f} ms to hash them once (ratio {r['unchanged_ms'] / r['hash_once_ms']:.2f})",
        ),
        (
            label,
            f"a pass with {CHANGED} changed",
            f"{sum(v for k, v in sent.items() if k != 'send')} API calls ({sent.get('request_replacement', 0)} "
            f"replacements, {sent.get('list_files', 0)} listings, 1 KB read) and {sent.get('send', 0)} POSTs to "
            f"storage, {r['changed_hashed']} files hashed; {r['changed_ms']:.0f} ms",
        ),
    ]


if __name__ == "__main__":
    for row in rows():
        print(" | ".join(row))
