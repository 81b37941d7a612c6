"""The remote MCP endpoint's ports, on the fakes and on DynamoDB alike: connections (each write on its
condition, the log newest first) and the hits of a search (gone once expired)."""

from __future__ import annotations

from dataclasses import replace

from memmy_kb.domain.ports.connections import Connection, ConnectionActivity, ConnectionEvent
from memmy_kb.domain.ports.mcp_hits import StoredHit
from tests.support.store_contract import McpStores

NOW = 1_800_000_000
CONN = Connection("alice", "conn_1", "client-1", "Claude", ("kb.search",), since=NOW, last_used=NOW, authorized_at=NOW - 60)


def added(kind: ConnectionEvent = "connection_added", at: int = NOW, name: str = "Claude") -> ConnectionActivity:
    return ConnectionActivity(kind, "conn_1", name, at)


def test_a_connection_is_added_once_and_read_back(mcp_stores: McpStores) -> None:
    store = mcp_stores.connections

    assert store.add_connection(CONN, added()) is True
    assert store.add_connection(replace(CONN, client_name="Other"), added()) is False

    assert store.get_connection("alice", "conn_1") == CONN
    assert store.get_connection("bob", "conn_1") is None
    assert store.list_connections("alice") == [CONN]
    assert store.list_connections("bob") == []


def test_last_used_is_touched_only_when_older_than_asked(mcp_stores: McpStores) -> None:
    store = mcp_stores.connections
    store.add_connection(CONN, added())

    assert store.touch_connection("alice", "conn_1", NOW + 400, older_than=NOW - 1) is False
    assert store.touch_connection("alice", "conn_1", NOW + 400, older_than=NOW + 100) is True
    assert store.get_connection("alice", "conn_1").last_used == NOW + 400
    assert store.touch_connection("alice", "conn_unknown", NOW + 400, older_than=NOW + 500) is False


def test_revoke_then_reactivate_only_from_the_revocation_read(mcp_stores: McpStores) -> None:
    store = mcp_stores.connections
    store.add_connection(CONN, added())

    revoked = store.revoke_connection("alice", "conn_1", added("connection_revoked", NOW + 10))
    assert (revoked.state, revoked.revoked_at) == ("revoked", NOW + 10)
    again = store.revoke_connection("alice", "conn_1", added("connection_revoked", NOW + 20))
    assert again.revoked_at == NOW + 10, "revoked already: unchanged"
    assert store.revoke_connection("alice", "conn_unknown", added("connection_revoked", NOW + 20)) is None

    stale = replace(revoked, state="active", revoked_at=NOW + 5, last_used=NOW + 30, authorized_at=NOW + 25)
    assert store.reactivate_connection(stale, added(at=NOW + 30)) is False
    back = replace(stale, revoked_at=NOW + 10, client_name="Claude 2")
    assert store.reactivate_connection(back, added(at=NOW + 30, name="Claude 2")) is True
    found = store.get_connection("alice", "conn_1")
    assert (found.state, found.client_name, found.authorized_at, found.last_used) == ("active", "Claude 2", NOW + 25, NOW + 30)
    assert store.reactivate_connection(back, added(at=NOW + 40)) is False, "active: nothing to reactivate"

    log = store.list_connection_activity("alice", limit=50, now=NOW + 50)
    assert [(a.kind, a.at) for a in log] == [
        ("connection_added", NOW + 30),
        ("connection_revoked", NOW + 10),
        ("connection_added", NOW),
    ]
    assert len(store.list_connection_activity("alice", limit=2, now=NOW + 50)) == 2
    assert store.list_connection_activity("bob", limit=50, now=NOW + 50) == []


def test_hits_are_read_back_until_they_expire(mcp_stores: McpStores) -> None:
    hits = [
        StoredHit("报销.md", "差旅报销需要发票", {"knowledge_base": {"id": "kb_1", "name": "资料"}, "file": None}, ("kb_1",)),
        StoredHit("资料", "text", {"knowledge_base": None}, ("kb_1", "kb_2")),
    ]
    mcp_stores.hits.put_hits("alice", "s1", hits, expires_at=NOW + 3600)

    assert mcp_stores.hits.get_hits("alice", "s1", now=NOW) == hits
    assert mcp_stores.hits.get_hits("bob", "s1", now=NOW) is None
    assert mcp_stores.hits.get_hits("alice", "s2", now=NOW) is None
    assert mcp_stores.hits.get_hits("alice", "s1", now=NOW + 3600) is None
