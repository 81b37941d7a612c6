"""``/me/connections``: the OAuth clients the caller connected to the remote MCP endpoint, and their log."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from memmy_kb.api.models.base import ApiModel
from memmy_kb.domain.display import shown

if TYPE_CHECKING:
    from memmy_kb.domain.ports.connections import Connection, ConnectionActivity


def _at(epoch: int) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)


class McpConnection(ApiModel):
    """One client: ``client_name`` is what it registered as (its id when it gave none), never verified."""

    id: str = Field(description="The connection's id, for DELETE /me/connections/{connection_id}")
    client_id: str
    client_name: str
    scope: list[str]
    since: datetime
    last_used: datetime = Field(description="Its last call, to within five minutes")
    state: Literal["active", "revoked"]
    revoked_at: datetime | None = None

    @classmethod
    def from_connection(cls, c: Connection) -> McpConnection:
        return cls(
            id=c.connection_id,
            client_id=shown(c.client_id),
            client_name=shown(c.client_name),
            scope=list(c.scope),
            since=_at(c.since),
            last_used=_at(c.last_used),
            state=c.state,
            revoked_at=None if c.revoked_at is None else _at(c.revoked_at),
        )


class ConnectionEvent(ApiModel):
    kind: Literal["connection_added", "connection_revoked"]
    connection_id: str
    client_name: str
    at: datetime


class ConnectionList(ApiModel):
    connections: list[McpConnection] = Field(description="Most recently used first; revoked ones too")
    activity: list[ConnectionEvent] = Field(description="The newest 50 entries, newest first")

    @classmethod
    def from_lists(cls, connections: list[Connection], activity: list[ConnectionActivity]) -> ConnectionList:
        return cls(
            connections=[McpConnection.from_connection(c) for c in connections],
            activity=[
                ConnectionEvent(kind=a.kind, connection_id=a.connection_id, client_name=shown(a.client_name), at=_at(a.at))
                for a in activity
            ],
        )
