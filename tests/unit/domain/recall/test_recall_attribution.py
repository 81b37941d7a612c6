"""Attributed recall on the fakes: one search per KB at once, merge, caps, groups, partial failure, re-check.

MemOS is ``FakeKnowledgeEngine`` (its KBs hold their own memories, so a search of one KB finds only
that KB's); the grants are snapshots, one per read of the scope, as in ``test_recall_logic.py``.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from memmy_kb.domain.engine import MemosNotFound, MemosUnavailable, SearchHit
from memmy_kb.domain.recall import turn as recall_logic
from memmy_kb.domain.recall.search import plan
from memmy_kb.records import GrantRecord, ProfileRecord
from memmy_kb.settings import get_settings
from tests.support.recall import NOW, Repository, engine, grant, kb_of, own, run


def profile(user: str, name: str, *, phone: str | None = None, email: str | None = None) -> ProfileRecord:
    return ProfileRecord(user_id=user, display_name=name, phone=phone, email=email, updated_at=NOW)


# -------------------------------------------------------------------------------------- per KB


def test_each_kb_is_searched_alone_and_at_once():
    repo = Repository([[own("kb1"), grant("kb2")]])
    memos = engine("kb1", "kb2")
    both_in_flight = threading.Barrier(2, timeout=5)
    # Each search waits for the other to have started: only concurrent searches get past it
    memos.during_search = lambda ids: both_in_flight.wait()

    result = run(repo, memos)

    assert sorted(s.kb_ids for s in memos.searches) == [("m-kb1",), ("m-kb2",)]
    assert {s.user_id for s in memos.searches} == {"kb-reader-bob"}
    assert sorted(kb_of(i) for i in result.items) == ["kb1", "kb2"]
    assert (result.discarded, result.partial, result.scope_size) == (False, False, 2)
    # The scope twice (before and once after every search) and the names once
    assert (repo.reads, repo.batch_reads) == (2, 1)


def test_every_excerpt_names_its_kb_and_a_share_its_owner_with_the_masked_contact():
    repo = Repository(
        [[own("kb1"), grant("kb2", owner="alice")]], profiles={"alice": profile("Alice", "爱丽丝", phone="+8613800138000")}
    )
    result = run(repo, engine("kb1", "kb2"))

    by_kb = {kb_of(i): i for i in result.items}
    assert by_kb["kb1"].knowledge_base.name == "kb1 的资料"
    assert by_kb["kb1"].owner is None
    assert (by_kb["kb2"].owner.name, by_kb["kb2"].owner.contact) == ("爱丽丝", "138****8000")
    assert all(i.knowledge_bases is None for i in result.items)
    section = result.context.split("MARK-kb2-0")[0].rsplit("<excerpt-", 1)[1]
    assert "「kb2 的资料」" in section
    assert "爱丽丝, 138****8000" in section


def test_hits_are_merged_by_score_within_the_limit_and_at_most_max_per_kb_from_one_kb():
    repo = Repository([[own("kb1"), grant("kb2"), grant("kb3")]])
    memos = engine("kb1", "kb2", "kb3", per_kb=6, scores={"kb1": 0.9, "kb2": 0.8, "kb3": 0.3})

    result = run(repo, memos, limit=7, max_per_kb=3)

    assert [kb_of(i) for i in result.items] == ["kb1"] * 3 + ["kb2"] * 3 + ["kb3"]
    scores = [i.score for i in result.items]
    assert scores == sorted(scores, reverse=True)
    # No search asks MemOS for more than one KB may give
    assert {s.limit for s in memos.searches} == {3}


def test_past_max_searches_the_rest_are_searched_as_one_group_named_by_its_excerpts():
    shares = [grant(f"kb{i:02d}") for i in range(7)]
    owned = [own(f"kb{i:02d}") for i in range(7, 10)]
    repo = Repository([shares + owned])
    memos = engine(*(g.kb_id for g in shares + owned), per_kb=1)

    result = run(repo, memos, limit=25, max_searches=4, max_per_kb=2)

    assert len(memos.searches) == 4
    searched = sorted((s.kb_ids for s in memos.searches), key=len)
    # Shares first: the first three shares alone, the other seven KBs together
    assert searched[:3] == [("m-kb00",), ("m-kb01",), ("m-kb02",)]
    assert sorted(searched[3]) == [f"m-kb{i:02d}" for i in range(3, 10)]
    assert len(result.items) == 10
    for item in result.items:
        mark = item.content.split("MARK-")[1].split("-")[0]
        if item.knowledge_base is not None:
            assert item.knowledge_base.id == mark
        else:
            group = [kb.id for kb in item.knowledge_bases]
            assert mark in group
            assert len(group) == 7
            owners = {kb.id: kb.owner for kb in item.knowledge_bases}
            assert owners["kb03"].name == "alice"
            assert owners["kb09"] is None
    assert "知识库（其中之一）Knowledge base (one of):" in result.context


def test_the_plan_never_exceeds_max_searches():
    grants = [grant(f"kb{i}") for i in range(10)]
    assert [len(s.grants) for s in plan(grants, 1)] == [10]
    assert [len(s.grants) for s in plan(grants, 4)] == [1, 1, 1, 7]
    assert [len(s.grants) for s in plan(grants[:4], 4)] == [1, 1, 1, 1]


# ------------------------------------------------------------------------------------- failures


def test_some_searches_failing_gives_the_others_excerpts_flagged_partial():
    repo = Repository([[own("kb1"), grant("kb2")]])
    memos = engine("kb1", "kb2")
    memos.fail_search_of("m-kb2", MemosUnavailable("down", endpoint="/search/memory"))

    result = run(repo, memos)

    assert [kb_of(i) for i in result.items] == ["kb1"]
    assert (result.partial, result.discarded) == (True, False)
    assert "MARK-kb2" not in result.model_dump_json()


def test_every_search_failing_is_503_without_reading_the_scope_again():
    repo = Repository([[own("kb1"), grant("kb2")]])
    memos = engine("kb1", "kb2")
    for kb in ("m-kb1", "m-kb2"):
        memos.fail_search_of(kb, MemosUnavailable("down", endpoint="/search/memory"))
    with pytest.raises(recall_logic.RecallUnavailable) as raised:
        run(repo, memos)
    assert (raised.value.status, raised.value.code) == (503, "recall_unavailable")
    assert repo.reads == 1


def test_a_search_past_the_budget_counts_as_failed():
    repo = Repository([[own("kb1"), grant("kb2")]])
    memos = engine("kb1", "kb2")
    release = threading.Event()
    memos.during_search = lambda ids: release.wait(5) if ids == ("m-kb2",) else None
    started = time.monotonic()
    try:
        result = run(repo, memos, search_seconds=0.3)
    finally:
        release.set()
    assert time.monotonic() - started < 2
    assert [kb_of(i) for i in result.items] == ["kb1"]
    assert result.partial


def test_an_unexpected_error_in_one_search_is_no_partial_reply_but_the_500_of_a_bug():
    # docs/architecture.md, "Errors": an unexpected failure is a 500 with its stack trace, not a MemOS
    # failure to hide behind the others' excerpts
    repo = Repository([[own("kb1"), grant("kb2")]])
    memos = engine("kb1", "kb2")
    memos.fail_search_of("m-kb2", KeyError("memory_detail_list"))
    with pytest.raises(KeyError):
        run(repo, memos)


# ------------------------------------------------------------------------------------- re-check


def test_the_recheck_drops_the_excerpts_of_a_kb_that_left_the_scope_and_keeps_the_others():
    # bob's share kb2 is revoked while MemOS searches: its excerpts go, kb1's stay
    repo = Repository([[own("kb1"), grant("kb2")], [own("kb1")]])
    result = run(repo, engine("kb1", "kb2"))
    assert [kb_of(i) for i in result.items] == ["kb1"]
    assert (result.discarded, result.partial) == (True, False)
    assert "MARK-kb2" not in result.model_dump_json()
    assert repo.reads == 2


def test_a_group_is_dropped_whole_when_one_of_its_kbs_left_the_scope():
    before = [grant(f"kb{i}") for i in range(4)]
    repo = Repository([before, before[:3]])  # kb3 (in the group with kb2) left
    result = run(repo, engine(*(g.kb_id for g in before)), max_searches=3)
    assert sorted(kb_of(i) for i in result.items) == ["kb0", "kb1"]
    assert result.discarded


def test_kb_not_found_for_a_kb_that_left_the_scope_is_no_failure():
    repo = Repository([[own("kb1"), grant("kb2")], [own("kb1")]])
    memos = engine("kb1", "kb2")
    memos.fail_search_of("m-kb2", MemosNotFound("gone", endpoint="/search/memory", code=50120))
    result = run(repo, memos)
    assert [kb_of(i) for i in result.items] == ["kb1"]
    assert (result.discarded, result.partial) == (True, False)


def test_kb_not_found_for_every_kb_with_one_gone_and_one_still_in_scope_is_503():
    repo = Repository([[own("kb1"), grant("kb2")], [own("kb1")]])
    memos = engine("kb1", "kb2")
    for kb in ("m-kb1", "m-kb2"):
        memos.fail_search_of(kb, MemosNotFound("gone", endpoint="/search/memory", code=50120))
    with pytest.raises(recall_logic.RecallUnavailable):
        run(repo, memos)


def test_a_kb_shared_during_the_search_does_not_drop_the_others():
    repo = Repository([[own("kb1")], [own("kb1"), grant("kb2")]])
    result = run(repo, engine("kb1", "kb2"))
    assert [kb_of(i) for i in result.items] == ["kb1"]
    assert not result.discarded


# ------------------------------------------------------------------------------------- combined


def test_combined_keeps_one_search_and_names_no_kb():
    repo = Repository([[own("kb1"), grant("kb2")]])
    memos = engine("kb1", "kb2")
    result = run(repo, memos, attribution="combined")
    assert [s.kb_ids for s in memos.searches] == [("m-kb1", "m-kb2")]
    assert len(result.items) == 2
    assert all(i.knowledge_base is None and i.knowledge_bases is None for i in result.items)
    assert "Knowledge base:" not in result.context
    assert repo.batch_reads == 0


def test_an_unknown_attribution_is_refused():
    with pytest.raises(ValueError, match="attribution"):
        run(Repository([[own("kb1")]]), engine("kb1"), attribution="per_file")


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, ("by_file", 4, 5)),
        ({"RECALL_ATTRIBUTION": "per_kb"}, ("per_kb", 4, 5)),
        ({"RECALL_ATTRIBUTION": "Combined", "RECALL_MAX_SEARCHES": "2", "RECALL_MAX_PER_KB": "9"}, ("combined", 2, 9)),
    ],
)
def test_the_settings(monkeypatch, env, expected):
    monkeypatch.setenv("TABLE_NAME", "t")
    for name in ("RECALL_ATTRIBUTION", "RECALL_MAX_SEARCHES", "RECALL_MAX_PER_KB"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    get_settings.cache_clear()
    try:
        settings = get_settings()
        assert (settings.recall_attribution, settings.recall_max_searches, settings.recall_max_per_kb) == expected
        monkeypatch.setenv("RECALL_ATTRIBUTION", "per_file")
        get_settings.cache_clear()
        with pytest.raises(ValueError, match="RECALL_ATTRIBUTION"):
            get_settings()
    finally:
        get_settings.cache_clear()


# ------------------------------------------------------------------------------------- one search


def test_a_single_search_that_hangs_is_bounded_by_the_budget():
    # One KB in scope: its search must end with the budget like any other, not when MemOS gives up
    repo = Repository([[own("kb1")]])
    memos = engine("kb1")
    release = threading.Event()
    memos.during_search = lambda ids: release.wait(5)
    started = time.monotonic()
    try:
        with pytest.raises(recall_logic.RecallUnavailable):
            run(repo, memos, search_seconds=0.3)
    finally:
        release.set()
    assert time.monotonic() - started < 2


class NamesMeetTheSearch(Repository):
    """The names' read waits for a search to be in flight: only a read made during the search gets past."""

    def __init__(self, snapshots: list[list[GrantRecord]], barrier: threading.Barrier) -> None:
        super().__init__(snapshots)
        self.barrier = barrier

    def batch_get_kbs_and_profiles(self, kb_ids: Any, user_ids: Any) -> Any:
        self.barrier.wait()
        return super().batch_get_kbs_and_profiles(kb_ids, user_ids)


def test_a_single_search_runs_while_the_names_are_read():
    together = threading.Barrier(2, timeout=2)
    repo = NamesMeetTheSearch([[grant("kb1")]], together)
    memos = engine("kb1")
    memos.during_search = lambda ids: together.wait()
    result = run(repo, memos)
    assert [kb_of(i) for i in result.items] == ["kb1"]


@pytest.mark.parametrize("odd", [float("nan"), float("inf")])
def test_a_score_that_is_no_number_ranks_as_no_score_and_leaves_the_order_of_the_others(odd):
    repo = Repository([[grant(f"kb{i}") for i in range(5)]])
    memos = engine(*(f"kb{i}" for i in range(5)), scores={"kb0": 0.5, "kb2": 0.9, "kb3": 0.7, "kb4": 0.2})
    memos.knowledge_bases["m-kb1"].memories[0] = SearchHit(title="kb1-doc0", content="kb1 MARK-kb1-0", score=odd)
    result = run(repo, memos, limit=3, max_searches=5)
    assert [kb_of(i) for i in result.items] == ["kb2", "kb3", "kb0"]


class NamedAtCreation(Repository):
    """The KBs' META items keep the owner's name from when the KB was made."""

    def batch_get_kbs_and_profiles(self, kb_ids: Any, user_ids: Any) -> Any:
        kbs, owners = super().batch_get_kbs_and_profiles(kb_ids, user_ids)
        return {k: kb.model_copy(update={"owner_name": "旧名字"}) for k, kb in kbs.items()}, owners


@pytest.mark.parametrize("display_name", ["", "\u200b\u2060", "  ", "爱丽丝", None])
@pytest.mark.parametrize("store", [Repository, NamedAtCreation])
def test_a_sharer_is_named_as_the_shared_with_me_list_names_them(display_name, store):
    from memmy_kb.api.models.knowledge_bases import KnowledgeBase
    from memmy_kb.domain.knowledge_bases.manage import list_knowledge_bases

    # None: the owner has no profile
    profiles = {} if display_name is None else {"alice": profile("alice", display_name, phone="+8613800138000")}
    repo = store([[grant("kb2", owner="alice")]], profiles=profiles)
    (item,) = run(repo, engine("kb2")).items
    (listed,) = [KnowledgeBase.from_view(v) for v in list_knowledge_bases(repo, "bob")]  # type: ignore[arg-type]
    assert item.owner is not None
    assert (item.owner.name, item.owner.contact) == (listed.owner.display_name, listed.owner.contact)
