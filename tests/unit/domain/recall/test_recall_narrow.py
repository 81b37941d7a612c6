"""Recall narrowed by ``knowledge_base_ids`` on the fakes: scope ∩ ids, never wider, in both attribution modes.

An id outside the caller's recall scope is one 422 (``knowledge_base_not_in_scope``) whether the KB is
unknown, not the caller's, or has recall off: no existence oracle. Helpers from ``test_recall_attribution``.
"""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from memmy_kb.api.models.recall import RecallRequest
from memmy_kb.errors import InvalidInput
from tests.support.recall import QUERY, Repository, engine, grant, own, recall_with, run

MODES = ["per_kb", "combined"]


@pytest.mark.parametrize("attribution", MODES)
def test_narrowing_to_one_of_two_kbs_searches_only_that_kb(attribution):
    repo = Repository([[own("kb1"), grant("kb2")]])
    memos = engine("kb1", "kb2")

    result = run(repo, memos, attribution=attribution, knowledge_base_ids=["kb2"])

    assert [s.kb_ids for s in memos.searches] == [("m-kb2",)]
    assert result.scope_size == 1
    assert (result.discarded, result.partial) == (False, False)
    assert "MARK-kb2-0" in result.context
    assert "MARK-kb1" not in result.context


@pytest.mark.parametrize("attribution", MODES)
def test_absent_ids_search_the_whole_scope(attribution):
    repo = Repository([[own("kb1"), grant("kb2")]])
    memos = engine("kb1", "kb2")

    result = run(repo, memos, attribution=attribution, knowledge_base_ids=None)

    assert result.scope_size == 2
    assert "MARK-kb1-0" in result.context
    assert "MARK-kb2-0" in result.context


def refusal(repo: Repository, ids: list[str], attribution: str) -> InvalidInput:
    memos = engine("kb1", "kb2", "kb3")
    with pytest.raises(InvalidInput) as caught:
        recall_with(
            repo, memos, user_id="bob", query=QUERY, attribution=attribution, knowledge_base_ids=ids
        )
    assert memos.searches == []  # refused before any search
    return caught.value


@pytest.mark.parametrize("attribution", MODES)
def test_an_id_outside_the_scope_is_the_same_refusal_whether_or_not_the_kb_exists(attribution):
    # kb2: readable but recall off; kb3: exists (in MemOS, someone else's) with no grant; kb_nope: no KB at all
    repo = Repository([[own("kb1"), grant("kb2", recall=False)]])

    refusals = {kb: refusal(repo, ["kb1", kb], attribution) for kb in ("kb2", "kb3", "kb_nope")}

    for kb, err in refusals.items():
        assert (err.status, err.code) == (422, "knowledge_base_not_in_scope")
        assert err.details == {"knowledge_base_ids": [kb]}
    assert len({err.message for err in refusals.values()}) == 1


def test_an_id_outside_an_empty_scope_is_refused_too():
    err = refusal(Repository([[grant("kb1", recall=False)]]), ["kb1"], "per_kb")
    assert err.code == "knowledge_base_not_in_scope"


def test_a_change_outside_the_narrowed_set_during_the_search_discards_nothing():
    # combined: the re-read scope loses kb1, which was not asked for (kb3 stays, also not asked for)
    repo = Repository([[own("kb1"), grant("kb2"), grant("kb3")], [grant("kb2"), grant("kb3")]])
    memos = engine("kb1", "kb2", "kb3")

    result = run(repo, memos, attribution="combined", knowledge_base_ids=["kb2"])

    assert result.discarded is False
    assert "MARK-kb2-0" in result.context


@pytest.mark.parametrize("attribution", MODES)
def test_a_narrowed_kb_leaving_the_scope_during_the_search_is_dropped(attribution):
    repo = Repository([[own("kb1"), grant("kb2")], [own("kb1")]])
    memos = engine("kb1", "kb2")

    result = run(repo, memos, attribution=attribution, knowledge_base_ids=["kb2"])

    assert result.discarded is True
    assert (result.items, result.context) == ([], "")


@pytest.mark.parametrize(
    "ids",
    [
        ["kb_1", "kb_1"],  # duplicates
        [f"kb_{i}" for i in range(51)],  # too many
        [""],
        ["kb/../x"],
        ["k" * 65],
    ],
)
def test_invalid_id_lists_are_refused_by_the_request_model(ids):
    with pytest.raises(ValidationError):
        RecallRequest.model_validate({"query": "报销", "knowledge_base_ids": ids})


def test_fifty_distinct_ids_and_null_are_accepted():
    ids = [f"kb_{i}" for i in range(50)]
    assert RecallRequest.model_validate({"query": "报销", "knowledge_base_ids": ids}).knowledge_base_ids == ids
    assert RecallRequest.model_validate({"query": "报销", "knowledge_base_ids": None}).knowledge_base_ids is None
