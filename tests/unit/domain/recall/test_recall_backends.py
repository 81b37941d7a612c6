"""Recall over several MemOS backends: each KB searched on its own backend under the one budget, groups
never across backends, a rate-limited search tried once more (``memmy_kb.domain.recall.search``)."""

from __future__ import annotations

import math
import threading
import time

import pytest

from memmy_kb.domain.engine import SearchHit
from memmy_kb.domain.recall import search as recall_search
from memmy_kb.domain.recall.search import plan
from memmy_kb.domain.recall.turn import RecallUnavailable
from tests.support.recall import Repository, engines, kb_of, rate_limited, run
from tests.support.recall import placed_grant as grant


def test_a_scope_on_two_backends_is_searched_on_each_kbs_own_backend() -> None:
    # Given KBs on backend a, and one recorded before backends existed (the default one)
    repo = Repository([[grant("kb1", "a"), grant("kb2", None, role="owner"), grant("kb3", "a")]])
    pool = engines({"kb1": "a", "kb2": "default", "kb3": "a"})

    result = run(repo, pool)

    assert sorted(kb_of(i) for i in result.items) == ["kb1", "kb2", "kb3"]
    assert sorted(s.kb_ids for s in pool["a"].searches) == [("m-kb1",), ("m-kb3",)]
    assert [s.kb_ids for s in pool["default"].searches] == [("m-kb2",)]


def test_past_max_searches_groups_only_kbs_of_one_backend() -> None:
    grants = [grant(f"kb{i}", "a" if i % 2 else "b") for i in range(8)]

    searches = plan(grants, 4)

    assert len(searches) == 4
    for search in searches:
        assert len({g.memos_backend for g in search.grants}) == 1
    assert sorted(len(s.grants) for s in searches) == [1, 1, 3, 3]


def test_a_scope_on_more_backends_than_searches_gets_one_search_per_backend() -> None:
    grants = [grant(f"kb{i}", f"p{i % 3}") for i in range(6)]

    searches = plan(grants, 2)

    assert sorted(s.backend for s in searches) == ["p0", "p1", "p2"]


def test_combined_attribution_searches_each_backend_once_and_merges_by_score() -> None:
    repo = Repository([[grant("kb1", "a"), grant("kb2", None), grant("kb3", "a")]])
    pool = engines({"kb1": "a", "kb2": "default", "kb3": "a"})

    result = run(repo, pool, attribution="combined")

    assert [sorted(s.kb_ids) for s in pool["a"].searches] == [["m-kb1", "m-kb3"]]
    assert [s.kb_ids for s in pool["default"].searches] == [("m-kb2",)]
    assert len(result.items) == 3


def test_combined_attribution_searches_the_backends_at_once() -> None:
    repo = Repository([[grant("kb1", "a"), grant("kb2", None)]])
    pool = engines({"kb1": "a", "kb2": "default"})
    both_in_flight = threading.Barrier(2, timeout=2)
    for backend in ("a", "default"):
        pool[backend].during_search = lambda ids: both_in_flight.wait()

    result = run(repo, pool, attribution="combined")

    assert len(result.items) == 2


def test_combined_attribution_ranks_a_score_that_is_no_number_last() -> None:
    repo = Repository([[grant("kb1", "a"), grant("kb2", None), grant("kb3", None)]])
    pool = engines({"kb1": "a", "kb2": "default", "kb3": "default"})
    pool["a"].knowledge_bases["m-kb1"].memories[0] = SearchHit(title="kb1-doc", content="MARK-kb1", score=math.nan)
    pool["default"].knowledge_bases["m-kb2"].memories[0] = SearchHit(title="kb2-doc", content="MARK-kb2", score=0.2)
    pool["default"].knowledge_bases["m-kb3"].memories[0] = SearchHit(title="kb3-doc", content="MARK-kb3", score=0.9)

    result = run(repo, pool, attribution="combined")

    assert [i.content for i in result.items] == ["MARK-kb3", "MARK-kb2", "MARK-kb1"]


def test_combined_attribution_on_two_hanging_backends_ends_with_the_one_budget() -> None:
    repo = Repository([[grant("kb1", "a"), grant("kb2", None)]])
    pool = engines({"kb1": "a", "kb2": "default"})
    release = threading.Event()
    for backend in ("a", "default"):
        pool[backend].during_search = lambda ids: release.wait(5)
    started = time.monotonic()
    try:
        with pytest.raises(RecallUnavailable):
            run(repo, pool, attribution="combined", search_seconds=0.3)
    finally:
        release.set()
    assert time.monotonic() - started < 2


def test_a_rate_limited_search_is_tried_once_more_and_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(recall_search, "RATE_LIMIT_PAUSE", (0.0, 0.01))
    repo = Repository([[grant("kb1", "a"), grant("kb2", None)]])
    pool = engines({"kb1": "a", "kb2": "default"})
    pool["a"].fail("search_memory", rate_limited(), times=1)

    result = run(repo, pool)

    assert sorted(kb_of(i) for i in result.items) == ["kb1", "kb2"]
    assert result.partial is False
    assert pool["a"].calls["search_memory"] == 2


def test_a_search_rate_limited_twice_fails_alone_and_the_others_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(recall_search, "RATE_LIMIT_PAUSE", (0.0, 0.01))
    repo = Repository([[grant("kb1", "a"), grant("kb2", None)]])
    pool = engines({"kb1": "a", "kb2": "default"})
    pool["a"].fail("search_memory", rate_limited())

    result = run(repo, pool)

    assert [kb_of(i) for i in result.items] == ["kb2"]
    assert result.partial is True
    assert pool["a"].calls["search_memory"] == 2  # once more, never a third time


def test_no_retry_when_the_budget_has_no_room_for_the_pause() -> None:
    repo = Repository([[grant("kb1", "a"), grant("kb2", None)]])
    pool = engines({"kb1": "a", "kb2": "default"})
    pool["a"].fail("search_memory", rate_limited())

    result = run(repo, pool, search_seconds=0.2)  # the pause may be up to 0.25 s: no room

    assert pool["a"].calls["search_memory"] == 1
    assert result.partial is True
