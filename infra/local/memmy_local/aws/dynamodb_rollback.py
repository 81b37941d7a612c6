"""moto's ``transact_write_items`` with item-level rollback: a patch of moto 5.2.5, installed by
``memmy_local.aws.dynamodb.item_level_rollback()`` (with the other patches by ``local_dynamodb()``),
which says what it changes and why. A transaction remembers, before each write, the one item that write
targets (``_Journal``); a cancelled transaction puts back those items, not copies of whole tables."""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["transact_write_items"]


class _Journal:
    """The items a transaction is about to write, as they were before it (``None``: absent)."""

    def __init__(self, backend: Any) -> None:
        self._backend = backend
        self._before: list[tuple[Any, Any, Any, Any]] = []  # (table, hash, range, item copy or None)
        self._streams: dict[int, tuple[Any, int]] = {}  # id(shard) -> (shard, records before)

    def remember(self, table_name: str, key: dict[str, Any]) -> None:
        table = self._backend.get_table(table_name)
        hash_value, range_value = self._backend.get_keys_value(table, key)
        current = table.get_item(hash_value, range_value)
        self._before.append((table, hash_value, range_value, copy.deepcopy(current)))
        shard = table.stream_shard
        if shard is not None and id(shard) not in self._streams:
            self._streams[id(shard)] = (shard, len(shard.items))

    def rollback(self) -> None:
        for table, hash_value, range_value, before in reversed(self._before):
            if table.range_key_attr is None:
                if before is None:
                    table.items.pop(hash_value, None)
                else:
                    table.items[hash_value] = before
                continue
            partition = table.items.get(hash_value)
            if before is not None:
                if partition is None:
                    partition = table.items[hash_value] = {}
                partition[range_value] = before
            elif partition is not None:
                partition.pop(range_value, None)
                if not partition:
                    del table.items[hash_value]
        for shard, length in self._streams.values():
            del shard.items[length:]


def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
    """moto 5.2.5's ``DynamoDBBackend.transact_write_items`` with item-level rollback (see the module)."""
    from moto.dynamodb.comparisons import get_filter_expression
    from moto.dynamodb.exceptions import (
        ConditionalCheckFailed,
        MockValidationException,
        MultipleTransactionsException,
        TooManyTransactionsException,
        TransactionCanceledException,
        TransactWriteSingleOpException,
    )

    if len(transact_items) > 100:
        raise TooManyTransactionsException()
    if any(len(item) > 1 for item in transact_items):
        raise TransactWriteSingleOpException
    journal = _Journal(self)
    target_items: set[tuple[str, str]] = set()

    def check_unicity(table_name: str, key: dict[str, Any]) -> None:
        item = (str(table_name), str(dict(sorted(key.items()))))
        if item in target_items:
            raise MultipleTransactionsException()
        target_items.add(item)

    errors: list[tuple[str, str, dict[str, Any] | None] | tuple[None, None, None]] = []
    try:
        for item in transact_items:
            original_item: dict[str, Any] | None = None
            try:
                op_type, op = next(iter(item.items()))
                if op_type not in {"ConditionCheck", "Put", "Delete", "Update"}:
                    raise ValueError("Unsupported transaction operation")
                table_name = op["TableName"]
                condition_expression = op.get("ConditionExpression")
                names = op.get("ExpressionAttributeNames")
                values = op.get("ExpressionAttributeValues")
                if op_type == "Put":
                    attrs = op["Item"]
                    table = self.get_table(table_name)
                    key = {table.hash_key_attr: attrs[table.hash_key_attr]}
                    if table.range_key_attr is not None:
                        key[table.range_key_attr] = attrs[table.range_key_attr]
                else:
                    key = op["Key"]
                check_unicity(table_name, key)
                current = self.get_item(table_name, key)
                if condition_expression is not None:
                    condition_op = get_filter_expression(condition_expression, names, values)
                    if not condition_op.expr(current):
                        if op.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD" and current:
                            original_item = current.to_json()["Attributes"]
                        raise ConditionalCheckFailed(item=original_item)
                conditions = {
                    "condition_expression": condition_expression,
                    "expression_attribute_names": names,
                    "expression_attribute_values": values,
                }
                if op_type != "ConditionCheck":
                    journal.remember(table_name, key)
                if op_type == "Put":
                    self.put_item(table_name, op["Item"], **conditions)
                elif op_type == "Delete":
                    self.delete_item(table_name, key, **conditions)
                elif op_type == "Update":
                    self.update_item(table_name, key, update_expression=op["UpdateExpression"], **conditions)
                errors.append((None, None, None))
            except (MultipleTransactionsException, MockValidationException):
                raise
            except ConditionalCheckFailed as e:
                errors.append(("ConditionalCheckFailed", str(e.message), original_item))
            except Exception as e:  # moto reports any other failure as the reason
                errors.append((type(e).__name__, str(e), original_item))
    except BaseException:
        journal.rollback()
        raise
    if any(code is not None for code, _, _ in errors):
        journal.rollback()
        raise TransactionCanceledException(errors)
