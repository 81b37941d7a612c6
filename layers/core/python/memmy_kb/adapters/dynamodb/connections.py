"""The remote MCP endpoint's connections in DynamoDB: ``MCPCONN#<user>/<connection>`` and the user's
connection log ``MCPLOG#<user>/<at>#<id>`` (docs/architecture.md, "Data").

Implements ``memmy_kb.domain.ports.connections.ConnectionStore``. Partitions of their own, not the user's
``USER#<user>``: the recall Query reads that partition's grants and memberships on every turn, and IAM
scopes writes by partition key only, so the ``mcp`` function may write these and no grant. Each state
change writes its log entry in the same transaction.
"""

from __future__ import annotations

import os
import time
from typing import Any

from memmy_kb.adapters.dynamodb.keys import connection_key, connection_log_key
from memmy_kb.adapters.dynamodb.table import (
    Action,
    DynamoTable,
    Item,
    TransactionRefused,
    dump,
    epoch_key,
    load,
)
from memmy_kb.domain.ports.connections import Connection, ConnectionActivity


def _item(c: Connection) -> Item:
    return {
        **connection_key(c.user_id, c.connection_id),
        "type": "mcp_connection",
        "user_id": c.user_id,
        "connection_id": c.connection_id,
        "client_id": c.client_id,
        "client_name": c.client_name,
        "scope": list(c.scope),
        "since": c.since,
        "last_used": c.last_used,
        "state": c.state,
        "revoked_at": c.revoked_at,
        "authorized_at": c.authorized_at,
    }


def _connection(item: Item) -> Connection:
    revoked = item.get("revoked_at")
    return Connection(
        user_id=item["user_id"],
        connection_id=item["connection_id"],
        client_id=item["client_id"],
        client_name=item["client_name"],
        scope=tuple(item.get("scope") or ()),
        since=int(item["since"]),
        last_used=int(item["last_used"]),
        state="revoked" if item.get("state") == "revoked" else "active",
        revoked_at=None if revoked is None else int(revoked),
        authorized_at=int(item.get("authorized_at", 0)),
    )


class DynamoConnectionStore:
    """The connections of each user, and their log (kept ``retention_days``)."""

    def __init__(self, table: DynamoTable, *, retention_days: int = 180) -> None:
        self._table = table
        self._retention = retention_days * 86400

    def _log_put(self, user_id: str, activity: ConnectionActivity) -> Action:
        # The second, then the nanosecond clock: entries of one second read back newest first.
        sort = f"{epoch_key(activity.at)}#{time.time_ns():020d}{os.urandom(3).hex()}"
        item = {
            **connection_log_key(user_id, sort),
            "type": "mcp_connection_log",
            "kind": activity.kind,
            "connection_id": activity.connection_id,
            "client_name": activity.client_name,
            "at": activity.at,
            "expires_at": activity.at + self._retention,
        }
        return self._table.put_action(item, "attribute_not_exists(PK)")

    def get_connection(self, user_id: str, connection_id: str) -> Connection | None:
        item = self._table.get(connection_key(user_id, connection_id))
        return _connection(item) if item else None

    def add_connection(self, connection: Connection, activity: ConnectionActivity) -> bool:
        put = self._table.put_action(_item(connection), "attribute_not_exists(PK)")
        try:
            self._table.transact([put, self._log_put(connection.user_id, activity)])
        except TransactionRefused as refused:
            if 0 in refused.failed:
                return False
            raise
        return True

    def reactivate_connection(self, connection: Connection, activity: ConnectionActivity) -> bool:
        # Back to active only from the revocation this decision read: a second disconnect meanwhile wins.
        was = connection.revoked_at
        values: dict[str, Any] = {
            ":active": "active",
            ":revoked": "revoked",
            ":name": connection.client_name,
            ":scope": list(connection.scope),
            ":now": connection.last_used,
            ":auth": connection.authorized_at,
        }
        condition = "#state = :revoked AND attribute_not_exists(revoked_at)"
        if was is not None:
            condition, values[":was"] = "#state = :revoked AND revoked_at = :was", was
        update: Action = {
            "Update": {
                "TableName": self._table.name,
                "Key": dump(connection_key(connection.user_id, connection.connection_id)),
                "UpdateExpression": "SET #state = :active, client_name = :name, #scope = :scope,"
                " last_used = :now, authorized_at = :auth",
                "ConditionExpression": condition,
                "ExpressionAttributeNames": {"#state": "state", "#scope": "scope"},
                "ExpressionAttributeValues": dump(values),
            }
        }
        try:
            self._table.transact([update, self._log_put(connection.user_id, activity)])
        except TransactionRefused as refused:
            if 0 in refused.failed:
                return False
            raise
        return True

    def touch_connection(self, user_id: str, connection_id: str, now: int, *, older_than: int) -> bool:
        return (
            self._table.update(
                connection_key(user_id, connection_id),
                "SET last_used = :now",
                "attribute_exists(PK) AND last_used < :older",
                {":now": now, ":older": older_than},
            )
            is not None
        )

    def revoke_connection(self, user_id: str, connection_id: str, activity: ConnectionActivity) -> Connection | None:
        key = connection_key(user_id, connection_id)
        update: Action = {
            "Update": {
                "TableName": self._table.name,
                "Key": dump(key),
                "UpdateExpression": "SET #state = :revoked, revoked_at = :now",
                "ConditionExpression": "attribute_exists(PK) AND #state = :active",
                "ExpressionAttributeNames": {"#state": "state"},
                "ExpressionAttributeValues": dump({":revoked": "revoked", ":active": "active", ":now": activity.at}),
            }
        }
        try:
            self._table.transact([update, self._log_put(user_id, activity)])
        except TransactionRefused as refused:
            if 0 not in refused.failed:
                raise
        # Revoked now, revoked already, or gone: the item as it is.
        return self.get_connection(user_id, connection_id)

    def list_connections(self, user_id: str) -> list[Connection]:
        return [
            _connection(item)
            for item in self._table.query(
                KeyConditionExpression="PK = :pk",
                ExpressionAttributeValues={":pk": {"S": f"MCPCONN#{user_id}"}},
                ConsistentRead=True,
            )
        ]

    def list_connection_activity(self, user_id: str, *, limit: int, now: int) -> list[ConnectionActivity]:
        resp = self._table.client.query(
            TableName=self._table.name,
            KeyConditionExpression="PK = :pk",
            FilterExpression="expires_at > :now",
            ExpressionAttributeValues=dump({":pk": f"MCPLOG#{user_id}", ":now": now}),
            ScanIndexForward=False,
            Limit=limit,
        )
        entries = [load(raw) for raw in resp.get("Items", [])]
        return [
            ConnectionActivity(e["kind"], e["connection_id"], e["client_name"], int(e["at"])) for e in entries
        ]
