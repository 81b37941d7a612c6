"""moto's DynamoDB answers written as JSON directly: a fifth patch of moto 5.2.5, installed by
``memmy_local.aws.dynamodb.plain_json_responses()`` (with the other four by ``local_dynamodb()``).

moto 5.2.5 writes every DynamoDB response through its generic, shape-driven serializer
(``moto/core/serialize.py``), which walks botocore's output shape for each attribute of each item: about
5 ms an item here, so one Query of a knowledge base of 80 files (170 items) took 950 ms in-process, and a
sync pass's listings of a 10-folder KB ten times that on a loaded machine. Item operations' results are
already plain DynamoDB JSON once moto's ``DynamoResult`` has converted its types (``dynamo_to_dict``),
so for them this writes that JSON as DynamoDB's JSON protocol does: binary values base64-encoded, every
other value as it is. A result holding anything else (a timestamp: ``DescribeTable``) and every error go
through moto's serializer as before (``tests/integration/local/test_local_dynamodb_responses.py``).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any, Final

# The operations whose answers are items and counts: what the service reads and writes all the time.
ITEM_OPERATIONS: Final = frozenset(
    {
        "GetItem",
        "PutItem",
        "UpdateItem",
        "DeleteItem",
        "Query",
        "Scan",
        "BatchGetItem",
        "BatchWriteItem",
        "TransactGetItems",
        "TransactWriteItems",
    }
)
_CONTENT_TYPE: Final = "application/x-amz-json-1.0"


class _NotPlain(Exception):
    """A value DynamoDB's JSON protocol writes otherwise than as it is (a timestamp)."""


def _binary(value: object) -> str:
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode("ascii")
    raise _NotPlain(type(value).__name__)


def plain_json(result: dict[str, Any]) -> str | None:
    """``result`` as DynamoDB's JSON protocol writes it, or None when moto's serializer must do it."""
    try:
        return json.dumps(result, default=_binary, separators=(",", ":"))
    except (_NotPlain, TypeError, ValueError):
        return None


def install() -> Callable[[], None]:
    """The patch put in place; returns the undo that puts moto's own back."""
    from moto.dynamodb.responses import DynamoResult

    original = DynamoResult.execute_result

    def execute_result(self: Any, context: Any) -> Any:
        result = self.result
        if context.operation_model.name in ITEM_OPERATIONS and isinstance(result, dict):
            body = plain_json(result)
            if body is not None:
                return 200, {"Content-Type": _CONTENT_TYPE}, body
        return original(self, context)

    DynamoResult.execute_result = execute_result  # type: ignore[method-assign]  # moto's class, patched

    def undo() -> None:
        DynamoResult.execute_result = original  # type: ignore[method-assign]

    return undo
