"""The fleet's MemOS budget per backend: one item per backend (``FLEET#<backend>/BUCKET``) holding its
shared token bucket (docs/memos.md, "Rate"; the arithmetic is ``memmy_kb.domain.recall.fleet_budget``'s).

Implements ``memmy_kb.domain.recall.fleet_budget.FleetItems``. A swap is one conditional PutItem (the stored
``version`` the one the writer read, or no item yet) that returns the stored item when the condition
failed (``ReturnValuesOnConditionCheckFailure``), so a writer that lost the race has the newer item
without a read. The item is small: the bucket's numbers and a counter per user who took tokens in the
current window and the one before (a 10-character hash each): 1 KB until about 40 users are counted.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Final

from botocore.exceptions import ClientError

from memmy_kb.adapters.dynamodb.keys import Key
from memmy_kb.adapters.dynamodb.table import DynamoTable, dump, is_condition_failure, load

_PREFIX: Final = "FLEET#"


def bucket_key(backend_id: str) -> Key:
    return {"PK": f"{_PREFIX}{backend_id}", "SK": "BUCKET"}


def _number(value: Any) -> Any:
    return Decimal(repr(round(value, 6))) if isinstance(value, float) else value


class DynamoFleetItems:
    """The shared bucket items, written only on a condition."""

    def __init__(self, table: DynamoTable) -> None:
        self._table = table

    def load(self, backend: str) -> Mapping[str, Any] | None:
        # Eventually consistent (half a read unit): a stale item only costs the first swap, which then
        # returns the stored one.
        resp = self._table.client.get_item(TableName=self._table.name, Key=dump(bucket_key(backend)))
        return load(resp["Item"]) if "Item" in resp else None

    def swap(self, backend: str, version: int | None, item: Mapping[str, Any]) -> Mapping[str, Any] | None:
        body = {k: _number(v) for k, v in item.items() if k not in ("users", "before")}
        for counts in ("users", "before"):
            body[counts] = {str(k): _number(v) for k, v in dict(item[counts]).items()}
        request: dict[str, Any] = {
            "TableName": self._table.name,
            "Item": dump({**bucket_key(backend), "type": "fleet_bucket", **body}),
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        if version is None:
            request["ConditionExpression"] = "attribute_not_exists(PK)"
        else:
            request["ConditionExpression"] = "version = :seen"
            request["ExpressionAttributeValues"] = dump({":seen": version})
        try:
            self._table.client.put_item(**request)
        except ClientError as err:
            if not is_condition_failure(err):
                raise
            stored: Mapping[str, Any] | None = err.response.get("Item")  # type: ignore[assignment]
            return load(stored) if stored else {}  # no item: the writer read one that is gone
        return None
