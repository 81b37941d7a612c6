"""What the ``connections`` commands print for people (``--json`` prints the API's JSON instead): the apps
connected through the remote MCP endpoint in a table aligned in terminal columns, then their recent
activity; times in the local time zone, to the minute."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final

from memmy_kb_client.cli.terminal import one_line, table

if TYPE_CHECKING:
    from memmy_kb_client.connection_replies import ConnectionEvent, ConnectionList, McpConnection

# ``connections ls`` shows this many of the newest activity entries (``--json`` has all the cloud sent).
SHOWN_ACTIVITY: Final = 10
HEADER: Final = ("ID", "CLIENT", "SINCE", "LAST USED", "STATE")
NONE_YET: Final = (
    "(no connected apps: an app such as a Claude or ChatGPT connector appears here once it signs in to the "
    "remote MCP endpoint with your consent; agents on this computer use the desktop service instead)"
)
_ACTIVITY_WORDS: Final = {"connection_added": "connected", "connection_revoked": "disconnected"}


def local_time(stamp: str | None) -> str:
    """``2026-12-07 18:05`` in the local time zone; ``never`` for none; an unreadable stamp as it is."""
    if not stamp:
        return "never"
    try:
        moment = datetime.fromisoformat(stamp)
    except ValueError:
        return one_line(stamp)
    if moment.tzinfo is None:  # the cloud's times are UTC
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone().strftime("%Y-%m-%d %H:%M")


def client_label(connection: McpConnection | ConnectionEvent) -> str:
    """The client's name as it registered it, else its client id (a URL or an opaque id)."""
    name = connection.get("client_name")
    return one_line(name) if name else one_line(connection.get("client_id") or "an unnamed client")


def _state(connection: McpConnection) -> str:
    if connection.get("state") == "revoked":
        return f"disconnected {local_time(connection.get('revoked_at'))}"
    return "active"


def _row(connection: McpConnection) -> list[str]:
    return [
        connection["id"],
        client_label(connection),
        local_time(connection.get("since")),
        local_time(connection.get("last_used")),
        _state(connection),
    ]


def _activity_line(entry: ConnectionEvent) -> list[str]:
    what = _ACTIVITY_WORDS.get(entry.get("kind", ""), one_line(entry.get("kind", "")))
    return [local_time(entry.get("at")), what, client_label(entry), f"({entry.get('connection_id', '')})"]


def render_connections(listing: ConnectionList) -> str:
    """The connections (active first, then disconnected), then the newest activity entries."""
    connections = listing.get("connections") or []
    ordered = sorted(connections, key=lambda c: c.get("state") == "revoked")
    out = ["Connected apps (they may search and read your knowledge bases, read only):"]
    if not ordered:
        out.append(f"  {NONE_YET}")
    else:
        out += table([list(HEADER), *(_row(c) for c in ordered)], indent="  ")
    activity = (listing.get("activity") or [])[:SHOWN_ACTIVITY]
    if activity:
        out += ["Recent activity:", *table((_activity_line(e) for e in activity), indent="  ")]
    return "\n".join(out)
