"""A KB's file versions' fingerprints in DynamoDB: ``PRINT#<file_id>#<version>`` items under ``KB#<kb>``.

Implements ``memmy_kb.domain.fingerprints.store.FingerprintStore``. The version is zero-padded to
``VERSION_DIGITS`` digits, so a file's items sort by version. ``prints`` is the binary ``Fingerprints.encode()``
(at most about 16 KB); ``memos_file_id`` the file's MemOS id (absent on items written before it was kept). The KB's other readers of its partition keep off these items by their key ranges
(``memmy_kb.adapters.dynamodb.contents``), and the KB's deletion removes them with the rest of the
partition (``delete_kb_items``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from memmy_kb.adapters.dynamodb.table import DynamoTable, dump
from memmy_kb.domain.fingerprints.prints import Fingerprints
from memmy_kb.domain.fingerprints.store import FilePrints
from memmy_kb.records import utc_now

PREFIX: Final = "PRINT#"
VERSION_DIGITS: Final = 6
_BATCH_WRITE: Final = 25


def print_key(kb_id: str, file_id: str, version: int) -> dict[str, str]:
    return {"PK": f"KB#{kb_id}", "SK": f"{PREFIX}{file_id}#{version:0{VERSION_DIGITS}d}"}


def _parsed(sk: str) -> tuple[str, int]:
    """``PRINT#<file_id>#<version>`` → (file_id, version)."""
    file_id, _, version = sk[len(PREFIX) :].rpartition("#")
    return file_id, int(version)


class DynamoFingerprintStore:
    """The ``FingerprintStore`` on the service's table."""

    def __init__(self, table: DynamoTable) -> None:
        self._table = table

    def put_prints(self, record: FilePrints) -> None:
        item = {
            **print_key(record.kb_id, record.file_id, record.version),
            "kb_id": record.kb_id,
            "file_id": record.file_id,
            "version": record.version,
            "prints": record.prints.encode(),
            "created_at": utc_now(),
        }
        if record.memos_file_id is not None:
            item["memos_file_id"] = record.memos_file_id
        self._table.client.put_item(TableName=self._table.name, Item=dump(item))

    def query_prints(self, kb_id: str) -> list[FilePrints]:
        """Every version's fingerprints: one paginated, eventually consistent Query of the KB's PRINT# range.
        An item that does not decode (another format) is left out, as if it were not there."""
        found: list[FilePrints] = []
        for item in self._table.query(
            KeyConditionExpression="PK = :pk AND begins_with(SK, :print)",
            ExpressionAttributeValues={":pk": {"S": f"KB#{kb_id}"}, ":print": {"S": PREFIX}},
        ):
            # boto3 reads a binary attribute as a ``Binary`` wrapping the bytes (``.value``).
            raw = getattr(item.get("prints"), "value", None)
            try:
                prints = Fingerprints.decode(raw if isinstance(raw, bytes) else b"")
            except ValueError:
                continue
            file_id, version = _parsed(item["SK"])
            memos_file_id = item.get("memos_file_id")
            found.append(
                FilePrints(kb_id, file_id, version, prints, memos_file_id if isinstance(memos_file_id, str) else None)
            )
        return found

    def query_print_versions(self, kb_id: str) -> list[tuple[str, int]]:
        """(file id, version) of every item, read by their keys alone."""
        return [
            _parsed(item["SK"])
            for item in self._table.query(
                KeyConditionExpression="PK = :pk AND begins_with(SK, :print)",
                ExpressionAttributeValues={":pk": {"S": f"KB#{kb_id}"}, ":print": {"S": PREFIX}},
                ProjectionExpression="SK",
            )
        ]

    def delete_prints(self, kb_id: str, file_id: str, versions: Iterable[int] | None = None) -> None:
        if versions is None:
            keys = [
                {"PK": f"KB#{kb_id}", "SK": item["SK"]}
                for item in self._table.query(
                    KeyConditionExpression="PK = :pk AND begins_with(SK, :file)",
                    ExpressionAttributeValues={":pk": {"S": f"KB#{kb_id}"}, ":file": {"S": f"{PREFIX}{file_id}#"}},
                    ProjectionExpression="SK",
                    ConsistentRead=True,
                )
            ]
        else:
            keys = [print_key(kb_id, file_id, version) for version in versions]
        for start in range(0, len(keys), _BATCH_WRITE):
            requests = [{"DeleteRequest": {"Key": dump(key)}} for key in keys[start : start + _BATCH_WRITE]]
            while requests:
                resp = self._table.client.batch_write_item(RequestItems={self._table.name: requests})
                requests = resp.get("UnprocessedItems", {}).get(self._table.name, [])
