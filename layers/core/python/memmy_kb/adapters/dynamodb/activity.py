"""A KB's activity log in DynamoDB (``ACTIVITY#<kb>/<at>#<id>``) and the rate-limit counters (``LIMIT#…``).

Implements ``memmy_kb.domain.ports.activity.ActivityLog`` and ``RateCounters``. Activity entries usually ride in
the transaction of the action they record (``activity_put``); the log is read newest first, a page at a
time, and its entries expire through the table's TTL (reads skip expired ones, since TTL deletes late).
A counter is one item per limit holding a count per window, bumped by one conditional UpdateItem.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from botocore.exceptions import ClientError

from memmy_kb.adapters.dynamodb.keys import activity_key, limit_key
from memmy_kb.adapters.dynamodb.table import Action, DynamoTable, Item, dump, is_condition_failure, load
from memmy_kb.records import ActivityRecord, CountCap, WindowCount


def activity_item(record: ActivityRecord) -> Item:
    return {**activity_key(record.kb_id, record.at, record.activity_id), "type": "activity", **record.model_dump()}


def activity_put(table: DynamoTable, record: ActivityRecord) -> Action:
    """The Put of one entry, for a transaction (a fresh id: it never overwrites one)."""
    return table.put_action(activity_item(record), "attribute_not_exists(PK)")


def _encode(key: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(key, sort_keys=True).encode()).decode()


def _decode(cursor: str) -> dict[str, Any] | None:
    try:
        key = json.loads(base64.urlsafe_b64decode(cursor.encode()))
    except (ValueError, UnicodeError):
        return None
    return key if isinstance(key, dict) else None


class DynamoActivityLog:
    """The activity entries of each KB."""

    def __init__(self, table: DynamoTable) -> None:
        self._table = table

    def put_activity(self, record: ActivityRecord) -> None:
        put = activity_put(self._table, record)["Put"]
        self._table.client.put_item(**put)

    def query_activity(
        self, kb_id: str, *, limit: int, cursor: str | None, now: int
    ) -> tuple[list[ActivityRecord], str | None]:
        """Up to ``limit`` unexpired entries, newest first, and the cursor of the next page (None: the end).

        The cursor is the sort key of the last entry returned; one from another KB names no item of this
        partition and reads as the start.
        """
        request: dict[str, Any] = {
            "TableName": self._table.name,
            "KeyConditionExpression": "PK = :pk",
            "FilterExpression": "expires_at > :now",
            "ExpressionAttributeValues": dump({":pk": f"ACTIVITY#{kb_id}", ":now": now}),
            "ScanIndexForward": False,
            "ConsistentRead": True,
        }
        start = _decode(cursor) if cursor else None
        if start and start.get("kb") == kb_id and isinstance(start.get("sk"), str):
            request["ExclusiveStartKey"] = dump({"PK": f"ACTIVITY#{kb_id}", "SK": start["sk"]})
        found: list[ActivityRecord] = []
        while True:
            request["Limit"] = limit - len(found) + 1
            resp = self._table.client.query(**request)
            for raw in resp.get("Items", []):
                found.append(ActivityRecord.model_validate(load(raw)))
                if len(found) > limit:
                    last = found[limit - 1]
                    sk = activity_key(kb_id, last.at, last.activity_id)["SK"]
                    return found[:limit], _encode({"kb": kb_id, "sk": sk})
            if "LastEvaluatedKey" not in resp:
                return found, None
            request["ExclusiveStartKey"] = resp["LastEvaluatedKey"]


class DynamoRateCounters:
    """Per-window counts of one limit, in one item."""

    def __init__(self, table: DynamoTable) -> None:
        self._table = table

    def count_in_window(self, name: str, window: int, *, cap: int, expires_at: int) -> tuple[int, int] | None:
        """Count one event in ``window``: (this window's count, the previous window's), or None when this
        window already holds ``cap`` (nothing is counted). Windows before the previous one are dropped."""
        try:
            resp = self._table.client.update_item(
                TableName=self._table.name,
                Key=dump(limit_key(name)),
                UpdateExpression="ADD #cur :one SET expires_at = :exp REMOVE #old",
                ConditionExpression="attribute_not_exists(#cur) OR #cur < :cap",
                ExpressionAttributeNames={"#cur": f"w{window}", "#old": f"w{window - 2}"},
                ExpressionAttributeValues=dump({":one": 1, ":exp": expires_at, ":cap": cap}),
                ReturnValues="ALL_NEW",
            )
        except ClientError as err:
            if is_condition_failure(err):
                return None
            raise
        item = load(resp["Attributes"])
        return int(item[f"w{window}"]), int(item.get(f"w{window - 1}", 0))


def cap_update(table: DynamoTable, cap: CountCap) -> Action:
    """For a transaction: count one event on ``cap.name``, refused when it already holds ``cap.limit``."""
    return {
        "Update": {
            "TableName": table.name,
            "Key": dump(limit_key(cap.name)),
            "UpdateExpression": "ADD n :one SET expires_at = :exp",
            "ConditionExpression": "attribute_not_exists(n) OR n < :cap",
            "ExpressionAttributeValues": dump({":one": 1, ":exp": cap.expires_at, ":cap": cap.limit}),
        }
    }


def window_update(table: DynamoTable, slot: WindowCount) -> Action:
    """For a transaction: count one event in ``slot.window``, refused when that window already holds
    ``slot.room`` or the previous one has moved past ``slot.previous`` (what the caller's estimate read)."""
    return {
        "Update": {
            "TableName": table.name,
            "Key": dump(limit_key(slot.name)),
            "UpdateExpression": "ADD #cur :one SET expires_at = :exp REMOVE #old",
            "ConditionExpression": "(attribute_not_exists(#cur) OR #cur < :room)"
            " AND (attribute_not_exists(#prev) OR #prev <= :prev)",
            "ExpressionAttributeNames": {
                "#cur": f"w{slot.window}",
                "#prev": f"w{slot.window - 1}",
                "#old": f"w{slot.window - 2}",
            },
            "ExpressionAttributeValues": dump(
                {":one": 1, ":exp": slot.expires_at, ":room": slot.room, ":prev": slot.previous}
            ),
        }
    }


def window_counts(item: Item | None, window: int) -> tuple[int, int]:
    """A windowed counter item's count in ``window`` and in the one before it."""
    if not item:
        return 0, 0
    return int(item.get(f"w{window}", 0)), int(item.get(f"w{window - 1}", 0))
