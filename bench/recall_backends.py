"""Recall with the caller's scope on one MemOS backend vs spread over two: latency, as a ratio.

The real recall (``memmy_kb.domain.recall.turn``, attributed per KB) runs in-process with the real pool of
MemOS clients (``MemosBackends``, a ``MemosClient`` per backend, as the recall function builds them)
against the MemOS emulator holding two projects, each with its own key. The caller's four KBs, one
document each, are either all in project 1 or two in each; the grants and names come from memory (the
table's cost is ``bench/recall_scale.py``'s). Both scopes make four searches at once: the second backend
costs a second client and its connections, which this measures.

Run: ``python -m bench.recall_backends``.
"""

from __future__ import annotations

import contextlib
import io
import statistics
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memmy_kb.domain.ports.engines import KnowledgeEngines
    from memmy_kb.domain.ports.team_shares import Reach
    from memmy_kb.records import GrantRecord, KnowledgeBaseRecord, ProfileRecord
    from memmy_local.memos_emulator.server import MemosEmulator

KEYS = {"p1": "bench-key-p1", "p2": "bench-key-p2"}
QUERY = "MemOS 开源版和商业版有什么区别"
EXCERPT = "MemOS 开源版和商业版的区别：开源版免费自部署，商业版提供托管、SLA 和企业支持。{n}"
KBS = 4
ROUNDS = 60


class _Grants:
    """The caller's grants and their KBs' names, from memory (``RecallSources``)."""

    def __init__(self, grants: list[GrantRecord], kbs: dict[str, KnowledgeBaseRecord]) -> None:
        self._grants, self._kbs = grants, kbs

    def query_grants(self, user_id: str) -> list[GrantRecord]:
        return list(self._grants)

    def get_grant(self, user_id: str, kb_id: str) -> GrantRecord | None:
        return next((g for g in self._grants if g.kb_id == kb_id), None)

    def read_reach(self, user_id: str, *, with_grants: bool) -> Reach:
        from memmy_kb.domain.ports.team_shares import Reach

        return Reach(list(self._grants) if with_grants else [])

    def batch_get_kbs_and_profiles(
        self, kb_ids: Iterable[str], user_ids: Iterable[str]
    ) -> tuple[dict[str, KnowledgeBaseRecord], dict[str, ProfileRecord]]:
        return {k: self._kbs[k] for k in kb_ids}, {}


def _key(key: str) -> Callable[[bool], str]:
    """A MemOS client's key provider that always gives ``key``."""
    return lambda _refresh: key


def _scope(emulator: MemosEmulator, placement: list[str]) -> _Grants:
    """KBs ``kb0``... on the backends ``placement`` names, a document each, searchable."""
    from memmy_kb.adapters.memos.client import MemosClient
    from memmy_kb.domain.engine import FileInput
    from memmy_kb.records import GrantRecord, KnowledgeBaseRecord

    now = datetime.now(UTC)
    grants, kbs = [], {}
    for n, backend in enumerate(placement):
        with MemosClient(emulator.base_url, _key(KEYS[backend])) as client:
            memos_kb = client.create_knowledgebase(f"memmy:kb{n}")
            (added,) = client.add_knowledgebase_files(
                memos_kb,
                [
                    FileInput.from_bytes(
                        EXCERPT.format(n=n).encode(), name="区别.md", mime_type="text/markdown"
                    )
                ],
            )
            while client.get_knowledgebase_files([added.id])[0].status.value != "available":
                time.sleep(0.05)
        kb_id = f"kb-{backend}-{n}-{len(placement)}-{placement.count('p2')}"
        grants.append(
            GrantRecord(
                user_id="bench",
                kb_id=kb_id,
                role="owner",
                recall=True,
                memos_kb_id=memos_kb,
                memos_backend=backend,
                owner_id="bench",
                granted_at=now,
            )
        )
        kbs[kb_id] = KnowledgeBaseRecord(
            kb_id=kb_id,
            name=f"资料{n}",
            owner_id="bench",
            memos_kb_id=memos_kb,
            memos_backend=backend,
            created_at=now,
        )
    return _Grants(grants, kbs)


def _pool(base_url: str) -> KnowledgeEngines:
    """The recall function's pool: a one-attempt client per backend (``adapters.memos.recall_pool.recall_engines``)."""
    from memmy_kb.adapters.memos.key import MemosBackendConfig
    from memmy_kb.adapters.memos.recall_pool import recall_engines

    configs = [MemosBackendConfig(b, base_url, key, max_kbs=100) for b, key in KEYS.items()]
    return recall_engines(lambda _refresh: configs, budget=2.5, max_searches=KBS)


def _median_ms(grants: _Grants, pool: KnowledgeEngines) -> float:
    from memmy_kb.domain.recall.config import RecallQuestion
    from memmy_kb.domain.recall.turn import recall

    timings = []
    # The per-backend metrics' EMF lines are printed as on Lambda (their cost counts), not shown here.
    with contextlib.redirect_stdout(io.StringIO()):
        for _ in range(ROUNDS):
            started = time.perf_counter()
            result = recall(grants, pool, RecallQuestion("bench", QUERY, limit=5))
            timings.append((time.perf_counter() - started) * 1000)
            assert result.block.excerpts, "recall found nothing"
    return statistics.median(timings[5:])  # the first rounds open the connections


def run() -> dict[str, float]:
    """Median recall latency (ms) with the scope on one backend and on two, and their ratio."""
    import os

    from memmy_local.memos_emulator.config import EmulatorConfig
    from memmy_local.memos_emulator.server import MemosEmulator

    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "Bench")
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    config = EmulatorConfig(port=0, api_keys={key: b for b, key in KEYS.items()}, processing_delay=0)
    with MemosEmulator(config) as emulator:
        one = _scope(emulator, ["p1"] * KBS)
        two = _scope(emulator, ["p1", "p2"] * (KBS // 2))
        one_ms = _median_ms(one, _pool(emulator.base_url))
        two_ms = _median_ms(two, _pool(emulator.base_url))
    figures = {"one_backend_ms": one_ms, "two_backends_ms": two_ms, "ratio": two_ms / one_ms}
    print(
        f"recall, {KBS} KBs in scope: one backend {one_ms:.1f} ms, two backends {two_ms:.1f} ms"
        f" (median of {ROUNDS - 5}); ratio {figures['ratio']:.2f}",
        flush=True,
    )
    return figures


if __name__ == "__main__":
    run()
