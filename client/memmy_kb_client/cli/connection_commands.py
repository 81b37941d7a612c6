"""``memmy-kb connections ls|revoke`` (docs/desktop.md, "Connected apps"): the apps connected to one's
knowledge bases through the remote MCP endpoint, and one disconnected. ``revoke`` takes a connection by its
id or by its client's name when no other connection has it; it prints for people or, with ``--json``, the
API's JSON, and exits as the ``team`` commands do: 0 done, 1 refused (by the service, or a name that names
nothing or several), 2 usage."""

from __future__ import annotations

import argparse
import unicodedata
from typing import TYPE_CHECKING

from memmy_kb_client.cli.commands import api_command
from memmy_kb_client.cli.connection_rendering import client_label, local_time, render_connections
from memmy_kb_client.cli.entries import MAX_CANDIDATES, NotResolved
from memmy_kb_client.cli.rendering import Outcome
from memmy_kb_client.cli.terminal import one_line, table

if TYPE_CHECKING:
    from memmy_kb_client.connection_replies import McpConnection
    from memmy_kb_client.sdk import MemmyClient

Parent = argparse.ArgumentParser
CONNECTION_HELP = "the connection: its id, or its client's name if no other connection has it"


def _same(a: str, b: str) -> bool:
    return unicodedata.normalize("NFC", a) == unicodedata.normalize("NFC", b)


def connection_among(connections: list[McpConnection], given: str) -> McpConnection:
    """The connection ``given`` names: the one with that id, else the one whose client has that name (or
    client id), an active one before a disconnected one. ``NotResolved`` for no match, or several."""
    for connection in connections:
        if connection.get("id") == given:
            return connection
    matches = [
        c for c in connections if _same(str(c.get("client_name") or ""), given) or c.get("client_id") == given
    ]
    active = [c for c in matches if c.get("state") == "active"]
    if len(active) == 1 or len(matches) == 1:
        return (active or matches)[0]
    if not matches:
        raise NotResolved(
            f"no connected app has the id or name '{one_line(given)}': give the connection's id, or its "
            "client's name if no other has it (`memmy-kb connections ls` lists them)"
        )
    several = active or matches
    rows = table([c["id"], client_label(c), local_time(c.get("since"))] for c in several[:MAX_CANDIDATES])
    lines = [
        f"{len(several)} connected apps are named '{one_line(given)}': give the id of the one you mean:",
        *(f"  {line}" for line in rows),
    ]
    if len(several) > MAX_CANDIDATES:
        lines.append(f"  … and {len(several) - MAX_CANDIDATES} more")
    raise NotResolved("\n".join(lines))


def _named(client: MemmyClient, given: str) -> tuple[str, str | None]:
    """The id of the connection ``given`` names, and its client's name (None when the service could not list
    the connections just then (5xx): ``given`` is then taken as an id, and the revoke says if it exists)."""
    from memmy_kb_client.sdk import MemmyApiError

    try:
        connections = client.list_connections().get("connections") or []
    except MemmyApiError as err:
        if err.status < 500:
            raise
        return given, None
    found = connection_among(connections, given)
    return found["id"], client_label(found)


def _revoke(client: MemmyClient, args: argparse.Namespace) -> Outcome:
    connection_id, name = _named(client, args.connection)
    client.revoke_connection(connection_id)
    label = f"'{name}' ({connection_id})" if name is not None else connection_id
    return Outcome(
        {"revoked": connection_id},
        f"disconnected {label}: its tokens are refused from now on; it connects again only when you sign "
        "in to it and allow it again",
    )


def add_connection_commands(commands: argparse._SubParsersAction[Parent], common: Parent) -> None:
    """The ``connections`` group on the top-level parser's subcommands."""
    parser = commands.add_parser(
        "connections", help="apps connected to your knowledge bases through the remote MCP endpoint"
    )
    group = parser.add_subparsers(dest="connections_command", required=True)
    ls = group.add_parser("ls", parents=[common], help="list the connected apps and their recent activity")
    ls.set_defaults(func=api_command(lambda c, a: c.list_connections(), render_connections))
    revoke = group.add_parser(
        "revoke", parents=[common], help="disconnect an app: its tokens are refused from now on"
    )
    revoke.add_argument("connection", metavar="ID", help=CONNECTION_HELP)
    revoke.set_defaults(func=api_command(_revoke))
