"""DynamoDB request units of one recorded call, estimated with DynamoDB's rules: reads in 4 KB units (half
for eventually consistent reads), writes in 1 KB units, transactions twice; an item's size from its
attribute names and values. Close to, not exactly, what AWS bills."""

from __future__ import annotations

import math
from typing import Any


def _value_bytes(value: dict[str, Any]) -> int:
    ((kind, inner),) = value.items()
    if kind == "S":
        return len(str(inner).encode())
    if kind == "N":  # about a byte per two significant digits, plus one
        return (len(str(inner).strip("-").replace(".", "")) + 1) // 2 + 1
    if kind == "B":
        return len(inner)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(str(s).encode()) for s in inner)
    if kind == "NS":
        return sum((len(str(n)) + 1) // 2 + 1 for n in inner)
    if kind == "BS":
        return sum(len(b) for b in inner)
    if kind == "L":
        return 3 + sum(1 + _value_bytes(v) for v in inner)
    if kind == "M":
        return 3 + sum(len(k.encode()) + 1 + _value_bytes(v) for k, v in inner.items())
    return 0


def item_bytes(item: dict[str, Any] | None) -> int:
    """DynamoDB's size of an item: its attribute names and values (low-level wire shape)."""
    return sum(len(name.encode()) + _value_bytes(value) for name, value in (item or {}).items())


def read_units(size: int, consistent: bool, transactional: bool = False) -> float:
    units = max(1, math.ceil(size / 4096))
    return units * (2 if transactional else 1 if consistent else 0.5)


def write_units(size: int, transactional: bool = False) -> float:
    return max(1, math.ceil(size / 1024)) * (2 if transactional else 1)


def request_units(operation: str, params: dict[str, Any], response: dict[str, Any]) -> tuple[float, float]:
    """(read request units, write request units) of one DynamoDB call, estimated from DynamoDB's rules."""
    consistent = bool(params.get("ConsistentRead"))
    if operation == "GetItem":
        return read_units(item_bytes(response.get("Item")), consistent), 0
    if operation in ("Query", "Scan"):
        items = response.get("Items") or []
        scanned = int(response.get("ScannedCount", len(items)))
        average = sum(item_bytes(i) for i in items) / len(items) if items else 0
        return read_units(int(average * scanned), consistent), 0
    if operation == "BatchGetItem":
        rru = 0.0
        for table, request in params.get("RequestItems", {}).items():
            found = response.get("Responses", {}).get(table, [])
            sizes = [item_bytes(i) for i in found] + [0] * (len(request.get("Keys", [])) - len(found))
            rru += sum(read_units(size, bool(request.get("ConsistentRead"))) for size in sizes)
        return rru, 0
    if operation == "TransactGetItems":
        found = response.get("Responses") or []
        return sum(read_units(item_bytes(r.get("Item")), True, transactional=True) for r in found), 0
    if operation == "PutItem":
        return 0, write_units(item_bytes(params.get("Item")))
    if operation in ("UpdateItem", "DeleteItem"):
        return 0, write_units(item_bytes(response.get("Attributes")))
    if operation == "BatchWriteItem":
        return 0, sum(
            write_units(item_bytes(request.get("PutRequest", {}).get("Item")))
            for requests in params.get("RequestItems", {}).values()
            for request in requests
        )
    if operation == "TransactWriteItems":
        # Every action, ConditionCheck included, is counted as a transactional write of its item.
        return 0, sum(
            write_units(item_bytes(body.get("Item")), transactional=True)
            for action in params.get("TransactItems", [])
            for body in action.values()
        )
    return 0, 0


def touched_items(operation: str, params: dict[str, Any], response: dict[str, Any]) -> list[dict[str, Any]]:
    """The items a PutItem wrote, or a Query or BatchGetItem read (others: none)."""
    if operation == "PutItem":
        return [params.get("Item", {})]
    if operation == "Query":
        return list(response.get("Items") or [])
    if operation == "BatchGetItem":
        return [item for found in response.get("Responses", {}).values() for item in found]
    return []


def item_kind(operation: str, params: dict[str, Any], response: dict[str, Any]) -> str:
    """The sort keys' prefix (up to their first ``#``: ``PRINT#``, ``FILE#``) of the items a PutItem, Query
    or BatchGetItem touched (a BatchGetItem's keys asked, found or not; a Query that found none, the
    prefix it asked for), joined by ``+`` when several; "" when none."""
    if operation == "BatchGetItem":
        items = [
            key for request in params.get("RequestItems", {}).values() for key in request.get("Keys", [])
        ]
    else:
        items = touched_items(operation, params, response)
    kinds = {str(item["SK"].get("S", "")).split("#", 1)[0] + "#" for item in items if "SK" in item}
    if operation == "Query" and not kinds:  # none found: the prefix it asked for (begins_with)
        values = params.get("ExpressionAttributeValues", {})
        kinds = {v["S"] for k, v in values.items() if k != ":pk" and str(v.get("S", "")).endswith("#")}
    return "+".join(sorted(kinds))
