"""The MCP bench's request claims, at a small size (``bench.mcp_endpoint``): a warm ``search`` through
``POST /mcp`` makes recall's DynamoDB requests plus the connection's GetItem and the PutItem of its hits,
and the same one MemOS search; and both views of its latency are measured."""

from __future__ import annotations

from collections import Counter

import pytest

from bench import mcp_endpoint


def test_a_warm_search_costs_recall_s_requests_plus_the_connection_read_and_the_hits_write(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(mcp_endpoint, "KBS", 2)
    monkeypatch.setattr(mcp_endpoint, "WARM_UP", 1)
    monkeypatch.setattr(mcp_endpoint, "MEMOS_MS", 100)
    monkeypatch.setattr(mcp_endpoint, "DYNAMODB_MS", 5.0)

    warm = mcp_endpoint.warm(pairs=3)

    recall, search = warm.recall.per_call(), warm.search.per_call()
    assert (warm.recall.calls, warm.search.calls) == (6, 6)  # three pairs in each of the two views
    assert Counter(search) - Counter(recall) == Counter({"GetItem": 1, "PutItem": 1})
    assert Counter(recall) - Counter(search) == Counter()
    assert sum(search.values()) == sum(recall.values()) + 2
    assert warm.recall.memos == warm.search.memos == 6  # one MemOS search each
    assert [len(view.search_ms) for view in warm.latencies] == [3, 3]
    held = warm.latencies[1]
    # The second view's calls wait for MemOS's search and for each of their DynamoDB requests.
    assert min(held.recall_ms) >= 100 + 5 * sum(recall.values())
    assert min(held.search_ms) >= 100 + 5 * sum(search.values())
