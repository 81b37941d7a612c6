"""In-memory fakes of the remote MCP endpoint's ports: the connections with their log, and the stored hits."""

from __future__ import annotations

from dataclasses import replace

from memmy_kb.domain.ports.connections import Connection, ConnectionActivity
from memmy_kb.domain.ports.mcp_hits import StoredHit


class FakeConnectionStore:
    """Connections by (user, id) and each user's log; every write checks its condition as the adapter's."""

    def __init__(self, retention_days: int = 180) -> None:
        self.connections: dict[tuple[str, str], Connection] = {}
        self.log: dict[str, list[ConnectionActivity]] = {}
        self.writes = 0
        self._retention = retention_days * 86400

    def _record(self, user_id: str, activity: ConnectionActivity) -> None:
        self.log.setdefault(user_id, []).append(activity)

    def get_connection(self, user_id: str, connection_id: str) -> Connection | None:
        return self.connections.get((user_id, connection_id))

    def add_connection(self, connection: Connection, activity: ConnectionActivity) -> bool:
        key = (connection.user_id, connection.connection_id)
        if key in self.connections:
            return False
        self.writes += 1
        self.connections[key] = connection
        self._record(connection.user_id, activity)
        return True

    def reactivate_connection(self, connection: Connection, activity: ConnectionActivity) -> bool:
        key = (connection.user_id, connection.connection_id)
        found = self.connections.get(key)
        if found is None or found.state != "revoked" or found.revoked_at != connection.revoked_at:
            return False
        self.writes += 1
        self.connections[key] = replace(
            found,
            state="active",
            client_name=connection.client_name,
            scope=connection.scope,
            last_used=connection.last_used,
            authorized_at=connection.authorized_at,
        )
        self._record(connection.user_id, activity)
        return True

    def touch_connection(self, user_id: str, connection_id: str, now: int, *, older_than: int) -> bool:
        found = self.connections.get((user_id, connection_id))
        if found is None or found.last_used >= older_than:
            return False
        self.writes += 1
        self.connections[(user_id, connection_id)] = replace(found, last_used=now)
        return True

    def revoke_connection(self, user_id: str, connection_id: str, activity: ConnectionActivity) -> Connection | None:
        found = self.connections.get((user_id, connection_id))
        if found is not None and found.state == "active":
            self.writes += 1
            found = self.connections[(user_id, connection_id)] = replace(found, state="revoked", revoked_at=activity.at)
            self._record(user_id, activity)
        return found

    def list_connections(self, user_id: str) -> list[Connection]:
        return sorted((c for (u, _), c in self.connections.items() if u == user_id), key=lambda c: c.connection_id)

    def list_connection_activity(self, user_id: str, *, limit: int, now: int) -> list[ConnectionActivity]:
        kept = [(a.at, n, a) for n, a in enumerate(self.log.get(user_id, [])) if a.at + self._retention > now]
        return [a for *_, a in sorted(kept, key=lambda e: (e[0], e[1]), reverse=True)][:limit]


class FakeHitStore:
    """Each search's hits by (user, search id), with their expiry."""

    def __init__(self) -> None:
        self.items: dict[tuple[str, str], tuple[list[StoredHit], int]] = {}

    def put_hits(self, user_id: str, search_id: str, hits: list[StoredHit], *, expires_at: int) -> None:
        self.items[(user_id, search_id)] = (list(hits), expires_at)

    def get_hits(self, user_id: str, search_id: str, *, now: int) -> list[StoredHit] | None:
        found = self.items.get((user_id, search_id))
        if found is None or found[1] <= now:
            return None
        return list(found[0])
