"""Recall as the tests ask for it: one call with the question's fields and the configuration's as keyword
arguments, split into the ``RecallQuestion`` and the ``RecallConfig`` the domain takes; and the world the
recall tests run it in: bob's grants (``grant``, ``own``, ``placed_grant`` on a MemOS backend), a
``Repository`` answering one snapshot of them per read, MemOS as ``FakeKnowledgeEngine`` (``engine``) or
several backends of them (``engines``), and ``run``, which answers as the API would."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from typing import Any

from memmy_kb.api.models.recall import RecallResponse
from memmy_kb.domain.engine import MemosRateLimited
from memmy_kb.domain.ports.team_shares import Reach
from memmy_kb.domain.recall.config import RecallConfig, RecallQuestion
from memmy_kb.domain.recall.turn import RecallResult, recall
from memmy_kb.records import GrantRecord, KnowledgeBaseRecord, ProfileRecord
from tests.support.fakes import FakeEngines, FakeKnowledgeEngine, FakeMemosKnowledgeBase

_QUESTION = {f.name for f in fields(RecallQuestion)}
_CONFIG = {f.name for f in fields(RecallConfig)}


def recall_with(grants: Any, memos: Any, **asked: Any) -> RecallResult:
    """``recall`` with ``user_id``, ``query``, ``limit``... and ``attribution``, ``max_searches``... as
    keywords; ``clock``, ``governor``, ``files`` and ``prints`` passed on as they are.

    ``attribution`` is ``per_kb`` unless given: the worlds here hold no fingerprints, and the per-KB plan
    is the one that names their KBs without them (``test_recall_files.py`` tests ``by_file``)."""
    asked.setdefault("attribution", "per_kb")
    question = RecallQuestion(**{k: v for k, v in asked.items() if k in _QUESTION})
    config = RecallConfig(**{k: v for k, v in asked.items() if k in _CONFIG})
    rest = {k: v for k, v in asked.items() if k not in _QUESTION | _CONFIG}
    return recall(grants, memos, question, config, **rest)


QUERY = "差旅报销需要哪些发票"
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def grant(kb: str, *, role: str = "reader", owner: str = "alice", recall: bool = True) -> GrantRecord:
    return GrantRecord(
        user_id="bob",
        kb_id=kb,
        role=role,
        recall=recall,
        memos_kb_id=f"m-{kb}",
        owner_id=owner,
        granted_at=NOW,
    )


def own(kb: str) -> GrantRecord:
    return grant(kb, role="owner", owner="bob")


@dataclass
class Repository:
    """Each ``query_grants`` answers the next snapshot (the last repeats); names and profiles as stored."""

    snapshots: list[list[GrantRecord]]
    profiles: dict[str, ProfileRecord] = field(default_factory=dict)
    file_counts: dict[str, int] = field(default_factory=dict)  # META's file_count per KB (default 0)
    reads: int = 0
    batch_reads: int = 0

    def query_grants(self, user_id: str) -> list[GrantRecord]:
        snapshot = self.snapshots[min(self.reads, len(self.snapshots) - 1)]
        self.reads += 1
        return snapshot

    def read_reach(self, user_id: str, *, with_grants: bool) -> Reach:
        """The caller's partition: their grants (as ``query_grants``), no team."""
        return Reach(self.query_grants(user_id) if with_grants else [])

    def batch_get_kbs_and_profiles(
        self, kb_ids: Any, user_ids: Any
    ) -> tuple[dict[str, KnowledgeBaseRecord], dict[str, ProfileRecord]]:
        self.batch_reads += 1
        owners = {g.kb_id: g.owner_id for s in self.snapshots for g in s}
        kbs = {
            k: KnowledgeBaseRecord(
                kb_id=k,
                name=f"{k} 的资料",
                owner_id=owners[k],
                memos_kb_id=f"m-{k}",
                created_at=NOW,
                file_count=self.file_counts.get(k, 0),
            )
            for k in kb_ids
        }
        return kbs, {u: self.profiles[u] for u in user_ids if u in self.profiles}


def engine(*kbs: str, per_kb: int = 1, scores: dict[str, float] | None = None) -> FakeKnowledgeEngine:
    memos = FakeKnowledgeEngine()
    for kb in kbs:
        memos.knowledge_bases[f"m-{kb}"] = FakeMemosKnowledgeBase(id=f"m-{kb}", name=f"m-{kb}")
        for i in range(per_kb):
            base = (scores or {}).get(kb, 0.5)
            memos.add_memory(f"m-{kb}", f"{kb}-doc{i}", f"{kb} 的第{i}段 MARK-{kb}-{i}", base - i * 0.01)
    return memos


def run(repo: Repository, memos: FakeKnowledgeEngine, **kwargs: Any) -> RecallResponse:
    result = recall_with(repo, memos, user_id="bob", query=QUERY, **kwargs)
    return RecallResponse.from_result(result)


def kb_of(item: Any) -> str:
    """The id of the KB an answer's excerpt names."""
    kb_id: str = item.knowledge_base.id
    return kb_id


def placed_grant(kb: str, backend: str | None, *, role: str = "reader") -> GrantRecord:
    return GrantRecord(
        user_id="bob",
        kb_id=kb,
        role=role,
        recall=True,
        memos_kb_id=f"m-{kb}",
        memos_backend=backend,
        owner_id="bob" if role == "owner" else "alice",
        granted_at=NOW,
    )


def engines(placed: dict[str, str]) -> FakeEngines:
    """Backends ``a`` and ``default``, each KB of ``placed`` (kb -> backend) with one memory there."""
    pool = FakeEngines(a=10, default=10)
    for kb, backend in placed.items():
        pool[backend].knowledge_bases[f"m-{kb}"] = FakeMemosKnowledgeBase(id=f"m-{kb}", name=kb)
        pool[backend].add_memory(f"m-{kb}", f"{kb}-doc", f"{kb} MARK-{kb}", 0.6)
    return pool


def rate_limited() -> MemosRateLimited:
    return MemosRateLimited("slow down", endpoint="/search/memory", code=40309)
