"""The connections of the remote MCP endpoint: which OAuth clients a user let search their KBs, and the
rules each call through ``/mcp`` follows (docs/architecture.md, "The remote MCP endpoint").

A connection is keyed by the client (``connection_id``), so every token a client holds for the user maps to
one item. A disconnect marks it revoked; tokens from the grant that was disconnected keep ``auth_time``
across refreshes and stay refused, while a new sign-in and consent (a later ``auth_time``) reconnects.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from typing import TYPE_CHECKING

from memmy_kb.domain.remote_mcp.tokens import TokenRefused
from memmy_kb.errors import NotFound

if TYPE_CHECKING:
    from memmy_kb.domain.ports.connections import (
        Connection,
        ConnectionActivity,
        ConnectionEvent,
        ConnectionStore,
    )
    from memmy_kb.domain.remote_mcp.tokens import McpCaller

# ``last_used`` is rewritten at most this often: a call costs a read, not a write.
LAST_USED_EVERY_SECONDS = 300
ACTIVITY_SHOWN = 50


def connection_id(client_id: str) -> str:
    """The id of a user's connection to an OAuth client: the same for every token the client holds."""
    return "conn_" + hashlib.sha256(client_id.encode()).hexdigest()[:20]


def _activity(kind: ConnectionEvent, connection: Connection, at: int) -> ConnectionActivity:
    from memmy_kb.domain.ports.connections import ConnectionActivity

    return ConnectionActivity(kind, connection.connection_id, connection.client_name, at)


def admit_connection(store: ConnectionStore, caller: McpCaller, now: int) -> Connection:
    """The caller's connection, added on its first use; ``TokenRefused`` when it was disconnected after
    the sign-in that began the caller's grant."""
    from memmy_kb.domain.ports.connections import Connection

    conn_id = connection_id(caller.client_id)
    found = store.get_connection(caller.user_id, conn_id)
    fresh = Connection(
        caller.user_id, conn_id, caller.client_id, caller.client_name, caller.scope,
        since=now, last_used=now, authorized_at=caller.auth_time,
    )
    if found is None:
        if store.add_connection(fresh, _activity("connection_added", fresh, now)):
            return fresh
        found = store.get_connection(caller.user_id, conn_id)  # a concurrent first call won
        if found is None:
            raise TokenRefused("This client was disconnected.")
    if found.state == "revoked":
        return _reconnect(store, found, fresh, now)
    if found.last_used < now - LAST_USED_EVERY_SECONDS:
        store.touch_connection(caller.user_id, conn_id, now, older_than=now - LAST_USED_EVERY_SECONDS)
    return found


def _reconnect(store: ConnectionStore, found: Connection, fresh: Connection, now: int) -> Connection:
    revoked_at = found.revoked_at if found.revoked_at is not None else now
    if fresh.authorized_at <= revoked_at:
        raise TokenRefused("This client was disconnected.")
    back = replace(
        found, client_name=fresh.client_name, scope=fresh.scope, last_used=now, state="active",
        authorized_at=fresh.authorized_at,
    )
    if not store.reactivate_connection(back, _activity("connection_added", back, now)):
        # Revoked again (or reconnected) meanwhile: read it once more and decide on that.
        again = store.get_connection(found.user_id, found.connection_id)
        if again is None or again.state == "revoked":
            raise TokenRefused("This client was disconnected.")
        return again
    return back


def revoke_connection(store: ConnectionStore, user_id: str, conn_id: str, now: int) -> Connection:
    """Disconnect one of the caller's clients (again: a no-op); 404 ``connection_not_found`` otherwise."""
    from memmy_kb.domain.ports.connections import ConnectionActivity

    found = store.get_connection(user_id, conn_id)
    if found is None:
        raise NotFound("No such connection.", code="connection_not_found")
    if found.state == "revoked":
        return found
    done = store.revoke_connection(
        user_id, conn_id, ConnectionActivity("connection_revoked", conn_id, found.client_name, now)
    )
    if done is None:
        raise NotFound("No such connection.", code="connection_not_found")
    return done


def list_connections(
    store: ConnectionStore, user_id: str, now: int
) -> tuple[list[Connection], list[ConnectionActivity]]:
    """The caller's connections (most recently used first) and their newest log entries."""
    connections = sorted(store.list_connections(user_id), key=lambda c: (-c.last_used, c.connection_id))
    return connections, store.list_connection_activity(user_id, limit=ACTIVITY_SHOWN, now=now)
