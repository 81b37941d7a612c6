"""What recall reads to name an excerpt's file, in DynamoDB (``memmy_kb.domain.recall.prints_cache.RecallFiles``).

A KB's ``PRINT#<file_id>#<version:06d>`` items (``kb_id``, ``file_id``, ``version``, ``prints``: the
encoded ``Fingerprints``) and ``FOLDER#`` items, one Query each, eventually consistent: a file a second
old not yet named is no harm, and the cache keeps them a minute anyway. The named files' ``FILE#`` items
in one strongly consistent BatchGetItem, so a file deleted before it is read is never named.
"""

from __future__ import annotations

from collections.abc import Iterable

from memmy_kb.adapters.dynamodb.fingerprints import DynamoFingerprintStore
from memmy_kb.adapters.dynamodb.keys import file_key
from memmy_kb.adapters.dynamodb.table import DynamoTable, Item
from memmy_kb.domain.fingerprints.store import FilePrints
from memmy_kb.records import FileRecord, FolderRecord


class DynamoRecallFiles:
    """Fingerprints, folders and files of the KBs recall searched."""

    def __init__(self, table: DynamoTable) -> None:
        self._table = table
        self._prints = DynamoFingerprintStore(table)

    def _query(self, kb_id: str, prefix: str) -> Iterable[Item]:
        return self._table.query(
            KeyConditionExpression="PK = :pk AND begins_with(SK, :prefix)",
            ExpressionAttributeValues={":pk": {"S": f"KB#{kb_id}"}, ":prefix": {"S": prefix}},
        )

    def query_prints(self, kb_id: str) -> list[FilePrints]:
        """Every file version's fingerprints in the KB (``FingerprintStore.query_prints``'s one Query)."""
        return self._prints.query_prints(kb_id)

    def query_folders(self, kb_id: str) -> list[FolderRecord]:
        return [FolderRecord.model_validate(item) for item in self._query(kb_id, "FOLDER#")]

    def batch_get_files(self, keys: Iterable[tuple[str, str]]) -> dict[tuple[str, str], FileRecord]:
        found = self._table.batch_get([file_key(kb_id, file_id) for kb_id, file_id in keys], consistent=True)
        records = (FileRecord.model_validate(item) for item in found)
        return {(r.kb_id, r.file_id): r for r in records}
