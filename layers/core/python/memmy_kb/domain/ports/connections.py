"""The port of the remote MCP endpoint's connections: one item per (user, OAuth client) and the user's log
of connections added and revoked (docs/architecture.md, "The remote MCP endpoint").

The values are the domain's own (plain dataclasses): the adapter builds them from its items.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

ConnectionState = Literal["active", "revoked"]
ConnectionEvent = Literal["connection_added", "connection_revoked"]


@dataclass(frozen=True)
class Connection:
    """One OAuth client a user connected to the MCP endpoint; times are epoch seconds."""

    user_id: str
    connection_id: str
    client_id: str
    client_name: str
    scope: tuple[str, ...]
    since: int
    last_used: int
    state: ConnectionState = "active"
    revoked_at: int | None = None
    authorized_at: int = 0


@dataclass(frozen=True)
class ConnectionActivity:
    """One entry of a user's connection log (kept ``retention_days``, then the table's TTL removes it)."""

    kind: ConnectionEvent
    connection_id: str
    client_name: str
    at: int


class ConnectionStore(Protocol):
    """The user's connections (implemented in ``memmy_kb.adapters.dynamodb.connections``).

    Every write is conditional and reports whether it happened; each that changes a connection's state
    writes its log entry in the same transaction.
    """

    def get_connection(self, user_id: str, connection_id: str) -> Connection | None:
        """One consistent read."""
        ...

    def add_connection(self, connection: Connection, activity: ConnectionActivity) -> bool:
        """Put the connection unless it exists (False then)."""
        ...

    def reactivate_connection(self, connection: Connection, activity: ConnectionActivity) -> bool:
        """Make the revoked connection active again with ``connection``'s client name, scope, last use and
        ``authorized_at``, while it is still revoked at the same ``revoked_at`` (False otherwise)."""
        ...

    def touch_connection(self, user_id: str, connection_id: str, now: int, *, older_than: int) -> bool:
        """Set ``last_used`` to ``now`` when it is before ``older_than`` (False: someone was quicker)."""
        ...

    def revoke_connection(self, user_id: str, connection_id: str, activity: ConnectionActivity) -> Connection | None:
        """Revoke the connection at ``activity.at`` when it is active; the connection as it now is (None:
        no such connection). An already revoked one is returned unchanged, and logs nothing."""
        ...

    def list_connections(self, user_id: str) -> list[Connection]:
        """Every connection of the user, revoked ones too (one consistent Query)."""
        ...

    def list_connection_activity(self, user_id: str, *, limit: int, now: int) -> list[ConnectionActivity]:
        """The newest ``limit`` log entries still kept at ``now``, newest first."""
        ...
