"""The plumbing every DynamoDB store shares: serialisation and one ``DynamoTable`` (the items' keys are
``memmy_kb.adapters.dynamodb.keys``).

The table's layout is in docs/architecture.md ("Data"). Reads that decide access are strongly consistent
(GSIs are never used to authorize). Writes that must not half-happen are transactions with conditions,
not read-then-write, and they all go through ``DynamoTable.transact``, which retries what says nothing
about the data (contention, throttling) and reports only failed conditions as an answer. Every call through
``DynamoTable.client`` raises the domain's ``StoreUnavailable`` for throttling, a 5xx or a timeout
(``memmy_kb.adapters.aws_errors``).
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.exceptions import ClientError

from memmy_kb.adapters.aws_errors import TranslatedClient, translated
from memmy_kb.adapters.dynamodb.keys import Key, kb_key, request_key
from memmy_kb.domain.storage import ConditionFailed, ItemMissing
from memmy_kb.records import KbCapacity, RequestRecord

Item = dict[str, Any]
Action = dict[str, Any]

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()
_BATCH_GET_LIMIT = 100


def request_item(request: RequestRecord) -> Item:
    return {**request_key(request.operation, request.key_hash), "type": "request", **request.model_dump()}


def dump(item: Mapping[str, Any]) -> dict[str, Any]:
    """An item in DynamoDB's typed JSON; None values and empty sets (DynamoDB has none) are left out,
    datetimes stored as ISO 8601."""
    return {
        k: _serializer.serialize(_plain(v))
        for k, v in item.items()
        if v is not None and not (isinstance(v, set | frozenset) and not v)
    }


def _plain(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


def load(item: Mapping[str, Any]) -> Item:
    return {k: _deserializer.deserialize(v) for k, v in item.items()}


def epoch_key(epoch_seconds: int) -> str:
    """A GSI sort key that orders like the time it encodes."""
    return datetime.fromtimestamp(epoch_seconds, UTC).isoformat()


def is_condition_failure(err: ClientError) -> bool:
    return err.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException"


class TransactionRefused(Exception):
    """A transaction cancelled by its conditions; ``failed`` holds the indexes of the items that failed,
    ``items`` the current item of each failed action that asked for it (``ReturnValuesOnConditionCheckFailure``
    ``ALL_OLD``; absent when there is no such item), so telling why costs no second read."""

    def __init__(self, failed: list[int], items: dict[int, Item] | None = None) -> None:
        super().__init__(f"conditions failed on items {failed}")
        self.failed = failed
        self.items = items or {}


# Cancellations that say nothing about the data: another transaction touched an item at the same
# moment, or DynamoDB throttled. They are retried; only ConditionalCheckFailed is an answer.
_TRANSIENT_REASONS = frozenset(
    {"TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded"}
)
_TRANSIENT_ERRORS = frozenset(
    {
        "TransactionConflictException",
        "TransactionInProgressException",
        "ThrottlingException",
        "ProvisionedThroughputExceededException",
    }
)
_TRANSACT_ATTEMPTS = 4


def _cancellation_codes(err: ClientError) -> list[str]:
    """The per-item reasons of a cancelled transaction ([] when it was not a cancellation)."""
    if err.response.get("Error", {}).get("Code") != "TransactionCanceledException":
        return []
    reasons: list[dict[str, Any]] = err.response.get("CancellationReasons", [])  # type: ignore[assignment]
    return [str(reason.get("Code", "None")) for reason in reasons]


def kb_room_refusal(kb_id: str, meta: Item | None, owner_id: str, capacity: KbCapacity) -> Exception:
    """Why ``kb_room_action`` failed, from the META it returned: ItemMissing("kb") when the KB is gone or
    not ``owner_id``'s, ConditionFailed("kb_files") when it holds the most files, else ConditionFailed("kb_bytes")."""
    if meta is None or meta.get("owner_id") != owner_id:
        return ItemMissing("kb", kb_id)
    if int(meta.get("file_count", 0)) >= capacity.max_files:
        return ConditionFailed("kb_files", kb_id)
    return ConditionFailed("kb_bytes", kb_id)


def version_is(version: int) -> str:
    """A condition on a FILE item's ``version`` (``:version``): items written before versions were kept are
    version 1. A replace's record moves it, with the size: a write sized by a read is conditioned on it."""
    return "(attribute_not_exists(version) OR version = :version)" if version == 1 else "version = :version"


def kb_bytes_refusal(kb_id: str, meta: Item | None, owner_id: str) -> Exception:
    """Why ``kb_bytes_room_action`` failed: the KB gone or another's (ItemMissing("kb")), else no room."""
    if meta is None or meta.get("owner_id") != owner_id:
        return ItemMissing("kb", kb_id)
    return ConditionFailed("kb_bytes", kb_id)


def _cancelled_items(err: ClientError) -> dict[int, Item]:
    reasons: list[dict[str, Any]] = err.response.get("CancellationReasons", [])  # type: ignore[assignment]
    return {i: load(reason["Item"]) for i, reason in enumerate(reasons) if reason.get("Item")}


class DynamoTable:
    """One Memmy table through a low-level DynamoDB client (passed in): the stores' shared plumbing."""

    def __init__(self, table_name: str, client: Any) -> None:
        self.name = table_name
        # The stores call ``client`` directly: wrapped, every call translates transient failures.
        self.client = client if isinstance(client, TranslatedClient) else TranslatedClient(client, "table")

    def transact(self, actions: list[Action]) -> None:
        """Run one write transaction; raise TransactionRefused if a condition failed.

        Transient cancellations (a concurrent transaction on one of the items, throttling) are retried
        with jitter under one ClientRequestToken, so a retry of a transaction that did commit is a no-op.
        Throttling that outlasts the retries, a 5xx or a timeout is raised as ``StoreUnavailable``; anything
        else, or contention that outlasts the retries, is raised as is.
        """
        token = uuid.uuid4().hex
        # The raw client: the retries below read the codes the wrapper would translate first.
        with translated("table"):
            for attempt in range(_TRANSACT_ATTEMPTS):
                try:
                    self.client.wrapped.transact_write_items(TransactItems=actions, ClientRequestToken=token)
                    return
                except ClientError as err:
                    reasons = _cancellation_codes(err)
                    failed = [i for i, code in enumerate(reasons) if code == "ConditionalCheckFailed"]
                    if failed:
                        raise TransactionRefused(failed, _cancelled_items(err)) from err
                    transient = err.response.get("Error", {}).get("Code") in _TRANSIENT_ERRORS or (
                        bool(reasons)
                        and all(code in _TRANSIENT_REASONS or code in ("None", "") for code in reasons)
                    )
                    if not transient or attempt == _TRANSACT_ATTEMPTS - 1:
                        raise
                    time.sleep(random.uniform(0, 0.05 * 2**attempt))  # noqa: S311 - jitter, not security

    def update(
        self,
        key: Key,
        update: str,
        condition: str,
        values: Mapping[str, Any],
        names: Mapping[str, str] | None = None,
    ) -> Item | None:
        """A conditional update returning the new item; None when the condition failed."""
        request: dict[str, Any] = {
            "TableName": self.name,
            "Key": dump(key),
            "UpdateExpression": update,
            "ConditionExpression": condition,
            "ExpressionAttributeValues": dump(values),
            "ReturnValues": "ALL_NEW",
        }
        if names:
            request["ExpressionAttributeNames"] = dict(names)
        try:
            resp = self.client.update_item(**request)
        except ClientError as err:
            if is_condition_failure(err):
                return None
            raise
        return load(resp["Attributes"])

    def delete(self, key: Key, condition: str, values: Mapping[str, Any], names: Mapping[str, str]) -> bool:
        """A conditional delete; False when the condition failed."""
        try:
            self.client.delete_item(
                TableName=self.name,
                Key=dump(key),
                ConditionExpression=condition,
                ExpressionAttributeValues=dump(values),
                ExpressionAttributeNames=dict(names),
            )
        except ClientError as err:
            if is_condition_failure(err):
                return False
            raise
        return True

    def put_action(self, item: Item, condition: str, values: Mapping[str, Any] | None = None) -> Action:
        put: Action = {"TableName": self.name, "Item": dump(item), "ConditionExpression": condition}
        if values:
            put["ExpressionAttributeValues"] = dict(values)
        return {"Put": put}

    def exists_check(self, key: Key) -> Action:
        return {
            "ConditionCheck": {
                "TableName": self.name,
                "Key": dump(key),
                "ConditionExpression": "attribute_exists(PK)",
            }
        }

    def owner_check(self, kb_id: str, owner_id: str) -> Action:
        """The KB still exists and is still ``owner_id``'s."""
        return {
            "ConditionCheck": {
                "TableName": self.name,
                "Key": dump(kb_key(kb_id)),
                "ConditionExpression": "attribute_exists(PK) AND owner_id = :owner",
                "ExpressionAttributeValues": {":owner": {"S": owner_id}},
            }
        }

    def kb_room_action(
        self, kb_id: str, owner_id: str, *, size: int, capacity: KbCapacity, count: bool
    ) -> Action:
        """META still ``owner_id``'s, with room (under ``capacity``) for one more file of ``size`` bytes.

        With ``count`` the file is counted in (``file_count`` + 1, ``bytes_used`` + ``size``: an Update),
        else only checked (a ConditionCheck). A refusal returns META, which ``kb_room_refusal`` reads.
        """
        condition = (
            "attribute_exists(PK) AND owner_id = :owner"
            " AND (attribute_not_exists(file_count) OR file_count < :max_files)"
            " AND (attribute_not_exists(bytes_used) OR bytes_used <= :room)"
        )
        values: dict[str, Any] = {
            ":owner": owner_id,
            ":max_files": capacity.max_files,
            ":room": capacity.max_bytes - size,
        }
        body: Action = {
            "TableName": self.name,
            "Key": dump(kb_key(kb_id)),
            "ConditionExpression": condition,
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        if not count:
            return {"ConditionCheck": {**body, "ExpressionAttributeValues": dump(values)}}
        values.update({":one": 1, ":size": size})
        return {
            "Update": {
                **body,
                "UpdateExpression": "ADD file_count :one, bytes_used :size",
                "ExpressionAttributeValues": dump(values),
            }
        }

    def kb_bytes_room_action(
        self, kb_id: str, owner_id: str, *, grow: int, capacity: KbCapacity, add: bool
    ) -> Action:
        """META still ``owner_id``'s with room for ``grow`` more bytes (a file's next version, which adds no
        file); with ``add`` (and a growth) they are added to ``bytes_used`` too. A refusal returns META,
        which ``kb_bytes_refusal`` reads."""
        condition = "attribute_exists(PK) AND owner_id = :owner"
        values: dict[str, Any] = {":owner": owner_id}
        if grow > 0:
            condition += " AND (attribute_not_exists(bytes_used) OR bytes_used <= :room)"
            values[":room"] = capacity.max_bytes - grow
        body: Action = {
            "TableName": self.name,
            "Key": dump(kb_key(kb_id)),
            "ConditionExpression": condition,
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        if not (add and grow > 0):
            return {"ConditionCheck": {**body, "ExpressionAttributeValues": dump(values)}}
        values[":grow"] = grow
        return {"Update": {**body, "UpdateExpression": "ADD bytes_used :grow", "ExpressionAttributeValues": dump(values)}}

    def get(self, key: Key) -> Item | None:
        resp = self.client.get_item(TableName=self.name, Key=dump(key), ConsistentRead=True)
        return load(resp["Item"]) if "Item" in resp else None

    def query(self, **kwargs: Any) -> Iterator[Item]:
        while True:
            resp = self.client.query(TableName=self.name, **kwargs)
            yield from (load(item) for item in resp.get("Items", []))
            if "LastEvaluatedKey" not in resp:
                return
            kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]

    def batch_get(self, keys: list[Key], *, consistent: bool) -> list[Item]:
        found: list[Item] = []
        for start in range(0, len(keys), _BATCH_GET_LIMIT):
            request: dict[str, Any] = {
                self.name: {
                    "Keys": [dump(k) for k in keys[start : start + _BATCH_GET_LIMIT]],
                    "ConsistentRead": consistent,
                }
            }
            while request:
                resp = self.client.batch_get_item(RequestItems=request)
                found.extend(load(item) for item in resp.get("Responses", {}).get(self.name, []))
                request = resp.get("UnprocessedKeys") or {}
        return found
