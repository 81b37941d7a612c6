"""Recall within the fleet's MemOS budget: a backend granted no search is skipped (the answer partial),
a scope granted none is a 503 with ``Retry-After`` and MemOS is not called, and a refused search is
tried again only with a token of its own. The budget on an in-process item (``MemoryFleetItems``), the
recall on the fakes of tests/support/recall.py."""

from __future__ import annotations

import pytest

from memmy_kb.domain.recall.fleet_budget import Bucket, FleetBudget, MemoryFleetItems
from memmy_kb.domain.recall.rate_governor import RateGovernor
from memmy_kb.errors import RecallUnavailable
from tests.support.clock import FakeClock
from tests.support.recall import Repository, engines, kb_of, placed_grant, rate_limited, run


def governed(clock: FakeClock, *, spent: dict[str, int]) -> RateGovernor:
    """A governor whose fleet budget holds ``spent[backend]`` tokens for each backend named, filled up
    to a minute from now (nothing more comes during the test)."""
    items = MemoryFleetItems()
    for backend, tokens in spent.items():
        assert items.swap(backend, None, Bucket(1, float(tokens), clock.now() + 60).item()) is None
    return RateGovernor(clock.now, fleet=FleetBudget(items, clock.now))


def test_a_backend_granted_no_search_is_skipped_and_the_answer_is_partial():
    clock = FakeClock()
    repo = Repository([[placed_grant("kb1", "a"), placed_grant("kb2", "default")]])
    pool = engines({"kb1": "a", "kb2": "default"})

    result = run(repo, pool, governor=governed(clock, spent={"default": 0}))

    assert [kb_of(i) for i in result.items] == ["kb1"]
    assert result.partial is True
    assert pool["default"].calls["search_memory"] == 0


def test_a_scope_granted_no_search_is_a_503_with_retry_after_and_memos_is_not_called():
    clock = FakeClock()
    repo = Repository([[placed_grant("kb1", "a"), placed_grant("kb2", "default")]])
    pool = engines({"kb1": "a", "kb2": "default"})

    with pytest.raises(RecallUnavailable) as raised:
        run(repo, pool, governor=governed(clock, spent={"a": 0, "default": 0}))

    assert raised.value.retry_after is not None
    assert raised.value.retry_after >= 1
    assert raised.value.details == {"retry_after_seconds": raised.value.retry_after}
    assert pool["a"].calls["search_memory"] == pool["default"].calls["search_memory"] == 0


def test_a_refused_search_is_not_retried_without_a_token_of_its_own():
    clock = FakeClock()  # stands still: the bucket fills by nothing during the recall
    repo = Repository([[placed_grant("kb1", "a")]])
    pool = engines({"kb1": "a"})
    pool["a"].fail("search_memory", rate_limited(), times=1)

    with pytest.raises(RecallUnavailable):
        run(repo, pool, governor=governed(clock, spent={"a": 1}))  # one token: the first search's

    assert pool["a"].calls["search_memory"] == 1
