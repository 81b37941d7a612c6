"""The DynamoDB items of a local stack kept across restarts: moto keeps nothing, so with a data dir the stack
dumps every table's items to JSON on stop and loads them again on start (binary attributes base64)."""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

log = logging.getLogger("memmy_local.stack")

_BATCH_SIZE = 25


def dynamodb_client(moto_url: str, region: str) -> Any:
    import boto3

    return boto3.client("dynamodb", endpoint_url=moto_url, region_name=region)


def table_names(template: Mapping[str, Any], refs: Mapping[str, str]) -> dict[str, str]:
    """Logical id → physical name of the template's DynamoDB tables."""
    return {
        logical_id: refs[logical_id]
        for logical_id, resource in template["Resources"].items()
        if resource.get("Type") == "AWS::DynamoDB::Table" and logical_id in refs
    }


def dump_tables(dynamodb: Any, tables: Mapping[str, str], path: Path) -> None:
    """Write every item of ``tables`` (logical id → name) to ``path``, atomically."""
    dump = {
        logical_id: [_encode_item(item) for item in _scan(dynamodb, name)]
        for logical_id, name in tables.items()
    }
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps({"version": 1, "tables": dump}))
    tmp.replace(path)
    log.info("kept %d DynamoDB items in %s", sum(len(items) for items in dump.values()), path)


def restore_tables(dynamodb: Any, tables: Mapping[str, str], path: Path) -> None:
    """Load the items dumped at ``path`` (if any) into the same logical tables."""
    if not path.exists():
        return
    dump = json.loads(path.read_text())["tables"]
    restored = 0
    for logical_id, items in dump.items():
        if logical_id not in tables:
            log.warning(
                "%s from %s is no longer in the template; its items are not restored", logical_id, path
            )
            continue
        for start in range(0, len(items), _BATCH_SIZE):
            batch = [
                {"PutRequest": {"Item": _decode_item(item)}} for item in items[start : start + _BATCH_SIZE]
            ]
            _batch_write(dynamodb, tables[logical_id], batch)
        restored += len(items)
    log.info("restored %d DynamoDB items from %s", restored, path)


def _scan(dynamodb: Any, table: str) -> Iterator[dict[str, Any]]:
    for page in dynamodb.get_paginator("scan").paginate(TableName=table, ConsistentRead=True):
        yield from page["Items"]


def _batch_write(dynamodb: Any, table: str, requests: list[dict[str, Any]]) -> None:
    pending = {table: requests}
    while pending:
        pending = dynamodb.batch_write_item(RequestItems=pending).get("UnprocessedItems") or {}


def _encode_item(item: Mapping[str, Any]) -> dict[str, Any]:
    return {name: _map_binary(value, _to_b64) for name, value in item.items()}


def _decode_item(item: Mapping[str, Any]) -> dict[str, Any]:
    return {name: _map_binary(value, base64.b64decode) for name, value in item.items()}


def _to_b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _map_binary(value: Mapping[str, Any], convert: Callable[[Any], Any]) -> dict[str, Any]:
    """An attribute value with its binary parts passed through ``convert`` (JSON has no bytes)."""
    ((kind, inner),) = value.items()
    if kind == "B":
        return {"B": convert(inner)}
    if kind == "BS":
        return {"BS": [convert(part) for part in inner]}
    if kind == "M":
        return {"M": {name: _map_binary(part, convert) for name, part in inner.items()}}
    if kind == "L":
        return {"L": [_map_binary(part, convert) for part in inner]}
    return {kind: inner}
