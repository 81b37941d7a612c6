"""Recall's rules with fakes for the table and MemOS: scope, search arguments, re-check, failing closed.

Tests of the single search over the whole scope pass ``attribution="combined"``; the per-KB searches
(the default) are in ``test_recall_attribution.py``. The rest hold in both modes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest

from memmy_kb.adapters.memos.models import MemosMemory
from memmy_kb.api.models.recall import RecallResponse
from memmy_kb.domain.engine import (
    MemosApiKeyError,
    MemosAuthError,
    MemosNotFound,
    MemosUnavailable,
    SearchHit,
)
from memmy_kb.domain.ports.team_shares import Reach
from memmy_kb.domain.recall import turn as recall_logic
from memmy_kb.records import GrantRecord
from tests.support.recall import recall_with

QUERY = "MemOS 开源版和商业版有什么区别"
SECRET_TEXT = "商业版提供私有化部署与SLA保障"


def grant(kb: str, *, recall: bool = True, memos: str | None = None, role: str = "reader") -> GrantRecord:
    return GrantRecord(
        user_id="bob",
        kb_id=kb,
        role=role,
        recall=recall,
        memos_kb_id=memos or f"m-{kb}",
        owner_id="alice",
        granted_at=datetime(2026, 1, 1, tzinfo=UTC),
    )


@dataclass
class FakeRepository:
    """Answers each ``query_grants`` with the next snapshot (the last one repeats)."""

    snapshots: list[list[GrantRecord]]
    reads: int = 0

    def query_grants(self, user_id: str) -> list[GrantRecord]:
        snapshot = self.snapshots[min(self.reads, len(self.snapshots) - 1)]
        self.reads += 1
        return snapshot

    def read_reach(self, user_id: str, *, with_grants: bool) -> Reach:
        """The caller's partition: their grants (as ``query_grants``), no team."""
        return Reach(self.query_grants(user_id) if with_grants else [])

    def batch_get_kbs_and_profiles(self, kb_ids: Any, user_ids: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        return {}, {}


@dataclass
class FakeMemos:
    hits: list[dict[str, Any]] = field(default_factory=list)
    error: Exception | None = None
    calls: list[dict[str, Any]] = field(default_factory=list)

    def engine(self, backend_id: str) -> FakeMemos:
        """As a pool of one backend: every KB here is on the default one."""
        return self

    def search_memory(self, user_id: str, query: str, kb_ids: Sequence[str], *, limit: int = 9) -> list[SearchHit]:
        self.calls.append({"user_id": user_id, "query": query, "kb_ids": list(kb_ids), "limit": limit})
        if self.error is not None:
            raise self.error
        return [MemosMemory.model_validate(hit).to_search_hit() for hit in self.hits]


def hit(title: str, text: str, score: float = 0.8) -> dict[str, Any]:
    return {"memory_key": title, "memory_value": text, "relativity": score, "tags": ["multimodal:file"]}


def run(repo: FakeRepository, memos: FakeMemos, **kwargs: Any) -> RecallResponse:
    """Recall as the route answers it (the domain's result in the API's body)."""
    result = recall_with(repo, memos, user_id="bob", query=QUERY, **kwargs)
    return RecallResponse.from_result(result)


def test_an_empty_scope_returns_nothing_without_calling_memos():
    # Given grants that all have recall off
    repo = FakeRepository([[grant("kb1", recall=False)]])
    memos = FakeMemos(hits=[hit("x", "y")])

    result = run(repo, memos)

    assert (result.items, result.context, result.scope_size, result.discarded) == ([], "", 0, False)
    assert memos.calls == []
    assert repo.reads == 1


def test_the_search_is_exactly_the_scope_as_the_reader_id_with_the_limit():
    # Given two KBs on (one of them reaching MemOS id "m-a" through two grants is impossible, but ids
    # are deduplicated anyway) and one off
    repo = FakeRepository(
        [[grant("kb2", memos="m-b"), grant("kb1", memos="m-a"), grant("kb3", recall=False)]]
    )
    memos = FakeMemos(hits=[hit("MemOS 开源VS商业化", SECRET_TEXT, 0.91)])

    result = run(repo, memos, limit=5, attribution="combined")

    assert memos.calls == [{"user_id": "kb-reader-bob", "query": QUERY, "kb_ids": ["m-a", "m-b"], "limit": 5}]
    assert [(i.title, i.content, i.score) for i in result.items] == [
        ("MemOS 开源VS商业化", SECRET_TEXT, 0.91)
    ]
    assert SECRET_TEXT in result.context
    assert "《MemOS 开源VS商业化》" in result.context
    assert (result.scope_size, result.discarded) == (2, False)
    assert repo.reads == 2


@pytest.mark.parametrize(
    "after",
    [
        pytest.param([grant("kb1")], id="revoked"),
        pytest.param([grant("kb1"), grant("kb2", recall=False)], id="toggled-off"),
        pytest.param([grant("kb1"), grant("kb2"), grant("kb3")], id="shared-during-search"),
        pytest.param([grant("kb1"), grant("kb2", memos="m-other")], id="memos-id-changed"),
    ],
)
def test_any_scope_change_during_the_search_discards_the_whole_result(after):
    repo = FakeRepository([[grant("kb1"), grant("kb2")], after])
    memos = FakeMemos(hits=[hit("机密", SECRET_TEXT)])

    result = run(repo, memos, attribution="combined")

    assert (result.items, result.context, result.discarded, result.scope_size) == ([], "", True, 2)
    assert SECRET_TEXT not in result.model_dump_json()


def test_the_same_scope_in_another_order_is_not_a_change():
    repo = FakeRepository([[grant("kb1"), grant("kb2")], [grant("kb2"), grant("kb1")]])
    result = run(repo, FakeMemos(hits=[hit("t", "内容")]), attribution="combined")
    assert not result.discarded
    assert len(result.items) == 1


@pytest.mark.parametrize(
    "error",
    [
        MemosUnavailable("timed out", endpoint="/search/memory"),
        MemosAuthError("bad key", endpoint="/search/memory", code=40130),
        MemosNotFound("not linked", endpoint="/search/memory", code=50123),
        MemosApiKeyError("the MemOS API key is empty"),
    ],
)
@pytest.mark.parametrize("attribution", ["per_kb", "combined"])
def test_memos_failures_fail_closed_as_recall_unavailable(error, attribution):
    repo = FakeRepository([[grant("kb1")]])
    with pytest.raises(recall_logic.RecallUnavailable) as raised:
        run(repo, FakeMemos(error=error), attribution=attribution)
    assert (raised.value.status, raised.value.code) == (503, "recall_unavailable")
    # Only "not found" makes recall look at the scope again (and here nothing left it)
    assert repo.reads == (2 if isinstance(error, MemosNotFound) else 1)


@pytest.mark.parametrize(
    "after",
    [
        pytest.param([grant("kb2")], id="kb-deleted"),
        pytest.param([grant("kb1", recall=False), grant("kb2")], id="toggled-off"),
        pytest.param([], id="everything-gone"),
    ],
)
def test_kb_not_found_after_a_kb_left_the_scope_is_a_discarded_empty_result(after):
    # Given a KB deleted while MemOS searched it: MemOS answers "knowledge base does not exist"
    repo = FakeRepository([[grant("kb1"), grant("kb2")], after])
    memos = FakeMemos(error=MemosNotFound("knowledge base does not exist", endpoint="/search/memory", code=50120))

    result = run(repo, memos, attribution="combined")

    assert (result.items, result.context, result.discarded, result.scope_size) == ([], "", True, 2)
    assert repo.reads == 2
    assert len(memos.calls) == 1


@pytest.mark.parametrize(
    "after",
    [
        pytest.param([grant("kb1"), grant("kb2")], id="unchanged"),
        pytest.param([grant("kb1"), grant("kb2"), grant("kb3")], id="only-a-kb-added"),
    ],
)
def test_kb_not_found_with_every_kb_still_in_scope_stays_recall_unavailable(after):
    repo = FakeRepository([[grant("kb1"), grant("kb2")], after])
    memos = FakeMemos(error=MemosNotFound("knowledge base does not exist", endpoint="/search/memory", code=50120))
    with pytest.raises(recall_logic.RecallUnavailable) as raised:
        run(repo, memos)
    assert (raised.value.status, raised.value.code) == (503, "recall_unavailable")


def test_another_failure_after_a_kb_left_the_scope_stays_recall_unavailable():
    # Only "not found" is explained by a deletion; a timeout says nothing about the scope
    repo = FakeRepository([[grant("kb1"), grant("kb2")], [grant("kb2")]])
    with pytest.raises(recall_logic.RecallUnavailable):
        run(repo, FakeMemos(error=MemosUnavailable("timed out", endpoint="/search/memory")))
    assert repo.reads == 1


def test_hits_without_text_are_dropped_and_the_rest_sanitised():
    repo = FakeRepository([[grant("kb1")]])
    memos = FakeMemos(hits=[hit("空", "\u200b\u200b"), hit("报\u202e销", "正文\u200b内容")])
    result = run(repo, memos)
    assert [(i.title, i.content) for i in result.items] == [("报销", "正文内容")]


def test_the_context_cap_is_applied():
    repo = FakeRepository([[grant("kb1")]])
    memos = FakeMemos(hits=[hit(f"t{i}", "字" * 1500) for i in range(9)])
    result = run(repo, memos, max_context_chars=4000)
    assert len(result.context) <= 4000
    assert 1 <= len(result.items) < 9


def test_neither_the_query_nor_the_excerpts_are_logged(caplog):
    caplog.set_level("DEBUG")
    repo = FakeRepository([[grant("kb1")], [grant("kb1")], [grant("kb1")], []])
    memos = FakeMemos(hits=[hit("机密标题", SECRET_TEXT)])
    run(repo, memos)
    memos.error = MemosUnavailable("down", endpoint="/search/memory")
    with pytest.raises(recall_logic.RecallUnavailable):
        run(repo, memos)
    run(FakeRepository([[grant("kb1")], []]), FakeMemos(hits=[hit("机密标题", SECRET_TEXT)]))
    # Every record with all its extra fields, as the JSON formatter would write them
    logged = "\n".join(f"{r.getMessage()} {vars(r)}" for r in caplog.records)
    assert logged.count("scope_size") == 3
    for secret in (QUERY, SECRET_TEXT, "机密标题"):
        assert secret not in logged
