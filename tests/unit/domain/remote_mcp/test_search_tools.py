"""``search`` and ``fetch`` on fakes (``memmy_kb.domain.remote_mcp.search``): what a result names, what it is
stored with, and what ``fetch`` re-checks, including a search that names no KB (``combined``)."""

from __future__ import annotations

import pytest

from memmy_kb.domain.recall.config import RecallConfig
from memmy_kb.domain.recall.user_limit import RecallLimiter, RecallLimits
from memmy_kb.domain.remote_mcp.hits import HITS_TTL_SECONDS
from memmy_kb.domain.remote_mcp.search import RecallPorts, fetch, search
from memmy_kb.errors import NotFound
from tests.support.factories import kb_record, owner_grant_for, reader_grant_for
from tests.support.fakes import FakeHitStore, FakeKnowledgeEngine, FakeStores

NOW = 1_800_000_000.0


@pytest.fixture
def world(stores: FakeStores, memos: FakeKnowledgeEngine) -> dict[str, str]:
    """alice owns kb_a and shares it with bob; bob owns kb_b. One excerpt in each."""
    ids = {}
    for kb_id, owner, text in (("kb_a", "alice", "A 的报销规定"), ("kb_b", "bob", "B 的报销规定")):
        memos_id = memos.create_knowledgebase(kb_id)
        record = kb_record(kb_id, owner_id=owner, name=f"{kb_id} 资料", memos_kb_id=memos_id)
        stores.table.seed(record, owner_grant_for(record))
        memos.add_memory(memos_id, f"{kb_id} 标题", text)
        ids[kb_id] = memos_id
    stores.table.seed(reader_grant_for(kb_record("kb_a", owner_id="alice", memos_kb_id=ids["kb_a"]), "bob"))
    return ids


def ports(stores: FakeStores, memos: FakeKnowledgeEngine, hits: FakeHitStore, attribution: str) -> RecallPorts:
    limits = RecallLimits(burst=100, per_second=100.0, window_seconds=10)
    return RecallPorts(
        kbs=stores.kbs, memos=memos, config=RecallConfig(attribution=attribution), limiter=RecallLimiter(limits),
        counters=stores.counters, hits=hits,
    )  # fmt: skip


@pytest.mark.usefixtures("world")
def test_each_result_names_its_kb_and_is_stored_for_an_hour(stores: FakeStores, memos: FakeKnowledgeEngine) -> None:
    hits = FakeHitStore()

    results = search(ports(stores, memos, hits, "per_kb"), "bob", "报销", None, NOW)["results"]

    assert {r["knowledge_base"]["id"] for r in results} == {"kb_a", "kb_b"}
    assert {r["title"] for r in results} == {"kb_a 资料", "kb_b 资料"}
    ((stored, expires),) = hits.items.values()
    assert expires == int(NOW) + HITS_TTL_SECONDS
    assert {h.kb_ids for h in stored} == {("kb_a",), ("kb_b",)}
    assert hits.get_hits("bob", results[0]["id"].split(".")[0], now=int(NOW) + HITS_TTL_SECONDS) is None


@pytest.mark.usefixtures("world")
def test_a_combined_search_stores_its_results_with_the_whole_scope_searched(
    stores: FakeStores, memos: FakeKnowledgeEngine
) -> None:
    hits = FakeHitStore()
    results = search(ports(stores, memos, hits, "combined"), "bob", "报销", None, NOW)["results"]
    assert results
    assert all(r["knowledge_base"] is None for r in results)
    assert {h.kb_ids for h in next(iter(hits.items.values()))[0]} == {("kb_a", "kb_b")}

    assert fetch(stores.kbs, hits, "bob", results[0]["id"], NOW)["text"] == results[0]["text"]
    del stores.table.grants[("bob", "kb_a")]  # alice revoked bob: the result may be from kb_a
    with pytest.raises(NotFound):
        fetch(stores.kbs, hits, "bob", results[0]["id"], NOW)


@pytest.mark.usefixtures("world")
def test_fetch_refuses_a_malformed_unknown_or_out_of_range_id(stores: FakeStores, memos: FakeKnowledgeEngine) -> None:
    hits = FakeHitStore()
    results = search(ports(stores, memos, hits, "per_kb"), "bob", "报销", None, NOW)["results"]
    search_id = results[0]["id"].split(".")[0]

    for hid in ("nonsense", f"{search_id}.{len(results)}", "s" + "0" * 24 + ".0"):
        with pytest.raises(NotFound, match="search again"):
            fetch(stores.kbs, hits, "bob", hid, NOW)
