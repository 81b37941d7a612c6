"""The cloud's replies about the apps connected to one's knowledge bases through the remote MCP endpoint
(docs/desktop.md, "Connected apps"): one ``TypedDict`` per response schema of ``GET /me/connections``,
as ``team_replies`` has the teams'. Types only: nothing here checks a reply."""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

ConnectionState = Literal["active", "revoked"]
ActivityKind = Literal["connection_added", "connection_revoked"]


class McpConnection(TypedDict):
    """An MCP client that reached ``POST /mcp`` with one of the person's tokens: what it may do (``scope``),
    since when, when it last searched, and whether the person disconnected it."""

    id: str
    client_id: str
    client_name: str
    scope: list[str]
    since: str
    last_used: str
    state: ConnectionState
    revoked_at: NotRequired[str | None]


class ConnectionEvent(TypedDict):
    """One entry of the connections' activity: a client connected (again) or disconnected."""

    kind: ActivityKind
    connection_id: str
    client_name: str
    at: str


class ConnectionList(TypedDict):
    """``GET /me/connections``: every connection, revoked ones too, and the last 50 activity entries,
    newest first."""

    connections: list[McpConnection]
    activity: list[ConnectionEvent]
