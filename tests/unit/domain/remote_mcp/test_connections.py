"""The connection rules of each call through ``/mcp`` (``memmy_kb.domain.remote_mcp.connections``): added on
first use, refused once disconnected until a newer sign-in, ``last_used`` written at most every 5 minutes."""

from __future__ import annotations

from dataclasses import replace

import pytest

from memmy_kb.domain.ports.connections import Connection, ConnectionActivity
from memmy_kb.domain.remote_mcp.connections import (
    admit_connection,
    connection_id,
    list_connections,
    revoke_connection,
)
from memmy_kb.domain.remote_mcp.tokens import McpCaller, TokenRefused
from memmy_kb.errors import NotFound
from tests.support.fakes import FakeConnectionStore

NOW = 1_800_000_000
SIGNED_IN = NOW - 3600


def caller(auth_time: int = SIGNED_IN, name: str = "Claude") -> McpCaller:
    return McpCaller("alice", "https://claude.ai/client.json", name, ("kb.search",), auth_time)


def test_the_connection_id_is_the_clients_hash_and_the_same_for_every_token() -> None:
    assert connection_id("client-1") == connection_id("client-1") != connection_id("client-2")
    assert connection_id("client-1").startswith("conn_")
    assert len(connection_id("client-1")) == 25


def test_a_first_call_adds_the_connection_and_logs_it_once() -> None:
    store = FakeConnectionStore()

    first = admit_connection(store, caller(), NOW)
    again = admit_connection(store, caller(), NOW + 10)

    assert (first.state, first.since, first.last_used, first.authorized_at) == ("active", NOW, NOW, SIGNED_IN)
    assert again == first
    assert [a.kind for a in store.log["alice"]] == ["connection_added"]


def test_last_used_is_rewritten_only_when_older_than_five_minutes() -> None:
    store = FakeConnectionStore()
    admit_connection(store, caller(), NOW)
    writes = store.writes

    admit_connection(store, caller(), NOW + 300)
    assert store.writes == writes

    admit_connection(store, caller(), NOW + 301)
    assert store.writes == writes + 1
    assert store.get_connection("alice", connection_id(caller().client_id)).last_used == NOW + 301


def test_a_disconnected_client_is_refused_with_its_old_grant_even_refreshed() -> None:
    store = FakeConnectionStore()
    conn = admit_connection(store, caller(), NOW)
    revoke_connection(store, "alice", conn.connection_id, NOW + 100)

    with pytest.raises(TokenRefused, match="disconnected"):
        admit_connection(store, caller(), NOW + 200)
    # A sign-in in the same second as the disconnect is not newer than it.
    with pytest.raises(TokenRefused):
        admit_connection(store, caller(auth_time=NOW + 100), NOW + 200)


def test_a_new_sign_in_and_consent_after_the_disconnect_makes_it_active_again() -> None:
    store = FakeConnectionStore()
    conn = admit_connection(store, caller(), NOW)
    revoke_connection(store, "alice", conn.connection_id, NOW + 100)

    back = admit_connection(store, caller(auth_time=NOW + 150, name="Claude (new)"), NOW + 200)

    assert (back.state, back.authorized_at, back.client_name, back.since) == ("active", NOW + 150, "Claude (new)", NOW)
    kinds = [a.kind for a in store.log["alice"]]
    assert kinds == ["connection_added", "connection_revoked", "connection_added"]


def test_a_disconnect_landing_between_the_read_and_the_reconnect_wins() -> None:
    class RevokedAgainMeanwhile(FakeConnectionStore):
        def reactivate_connection(self, connection: Connection, activity: ConnectionActivity) -> bool:
            # Reconnected and disconnected again by another call first: a newer revoked_at.
            key = (connection.user_id, connection.connection_id)
            self.connections[key] = replace(self.connections[key], revoked_at=NOW + 190)
            return super().reactivate_connection(connection, activity)

    store = RevokedAgainMeanwhile()
    conn = admit_connection(store, caller(), NOW)
    revoke_connection(store, "alice", conn.connection_id, NOW + 100)

    with pytest.raises(TokenRefused):
        admit_connection(store, caller(auth_time=NOW + 150), NOW + 200)


def test_revoking_an_unknown_connection_is_not_found_and_revoking_twice_changes_nothing() -> None:
    store = FakeConnectionStore()
    conn = admit_connection(store, caller(), NOW)

    with pytest.raises(NotFound) as raised:
        revoke_connection(store, "alice", "conn_unknown", NOW)
    assert raised.value.code == "connection_not_found"
    with pytest.raises(NotFound):
        revoke_connection(store, "bob", conn.connection_id, NOW)  # someone else's

    first = revoke_connection(store, "alice", conn.connection_id, NOW + 5)
    second = revoke_connection(store, "alice", conn.connection_id, NOW + 50)
    assert first.revoked_at == second.revoked_at == NOW + 5
    assert [a.kind for a in store.log["alice"]] == ["connection_added", "connection_revoked"]


def test_the_list_shows_revoked_connections_and_the_log_newest_first() -> None:
    store = FakeConnectionStore()
    one = admit_connection(store, caller(), NOW)
    admit_connection(store, McpCaller("alice", "other", "Codex", ("kb.search",), SIGNED_IN), NOW + 1000)
    revoke_connection(store, "alice", one.connection_id, NOW + 2000)

    found, log = list_connections(store, "alice", NOW + 3000)

    assert [c.client_name for c in found] == ["Codex", "Claude"]
    assert [c.state for c in found] == ["active", "revoked"]
    assert [(a.kind, a.client_name) for a in log] == [
        ("connection_revoked", "Claude"),
        ("connection_added", "Codex"),
        ("connection_added", "Claude"),
    ]
