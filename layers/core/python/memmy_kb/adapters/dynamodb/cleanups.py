"""Deletes and their cleanup in DynamoDB: the transactions that make a KB, folder or file invisible
together with their cleanup outbox item, the outbox (``CLEANUP#<id>``: the item and its ``PART#`` items)
and the reconciler's queue of due cleanups and residue cursor.

Implements ``memmy_kb.domain.ports.cleanups.CleanupStore``. GSI2 holds the queues the reconciler reads:
``CLEANUP#pending`` and ``CLEANUP#failed`` sorted by when the cleanup may next be (re)started, and ``KB``
(every META item, by id) for the residue scan; the create intents' queue is
``memmy_kb.adapters.dynamodb.intents``'s, the upload queues are the content store's.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any, Final, Literal

from memmy_kb.adapters.dynamodb.activity import activity_put
from memmy_kb.adapters.dynamodb.intents import limited_query
from memmy_kb.adapters.dynamodb.keys import (
    cleanup_key,
    cleanup_part_key,
    cursor_key,
    file_key,
    folder_key,
    grant_key,
    kb_key,
    limit_key,
    owned_counter,
)
from memmy_kb.adapters.dynamodb.table import Action, DynamoTable, Item, TransactionRefused, dump, version_is
from memmy_kb.domain.storage import ConditionFailed, ItemMissing
from memmy_kb.records import (
    ActivityRecord,
    CleanupPart,
    CleanupRecord,
    FileRecord,
    FolderRecord,
    KnowledgeBaseRecord,
)

_BATCH_WRITE_LIMIT: Final = 25


def cleanup_queue(state: str) -> str:
    return f"CLEANUP#{state}"


def cleanup_item(cleanup: CleanupRecord) -> Item:
    return {
        **cleanup_key(cleanup.cleanup_id),
        "type": "cleanup",
        "GSI2PK": cleanup_queue(cleanup.state),
        "GSI2SK": cleanup.next_attempt_at.isoformat(),
        **cleanup.model_dump(),
    }


def _delete(table: DynamoTable, key: dict[str, str], condition: str | None = None, **extra: Any) -> Action:
    delete: dict[str, Any] = {"TableName": table.name, "Key": dump(key)}
    if condition:
        delete["ConditionExpression"] = condition
    delete.update(extra)
    return {"Delete": delete}


def _uncount(
    table: DynamoTable, kb_id: str, files: list[FileRecord], owner_id: str | None = None
) -> Action:
    """Take ``files`` off META's ``file_count`` and ``bytes_used`` (counts that missed files recorded before
    they were kept can go below 0, which only leaves more room); with ``owner_id``, while it is theirs."""
    condition = "attribute_exists(PK)"
    values: dict[str, Any] = {":files": -len(files), ":bytes": -sum(f.size_bytes for f in files)}
    if owner_id is not None:
        condition += " AND owner_id = :owner"
        values[":owner"] = owner_id
    return {
        "Update": {
            "TableName": table.name,
            "Key": dump(kb_key(kb_id)),
            "UpdateExpression": "ADD file_count :files, bytes_used :bytes",
            "ConditionExpression": condition,
            "ExpressionAttributeValues": dump(values),
        }
    }


class DynamoCleanupStore:
    """Delete transactions, the cleanup outbox and the reconciler's bookkeeping of cleanups."""

    def __init__(self, table: DynamoTable) -> None:
        self._table = table

    # -- the visible part of a deletion, with its outbox item ---------------------------------------

    def delete_kb_with_outbox(
        self, kb: KnowledgeBaseRecord, reader_ids: Iterable[str], cleanup: CleanupRecord
    ) -> None:
        """META, the owner's grant and every reader's grant, gone together with the outbox item written.

        Conditioned on META being as read (same owner, same ``member_version``), so a share or revoke that
        landed after the read makes this fail with ConditionFailed("kb") instead of leaving a grant behind.
        """
        unchanged = "member_version = :version"
        if not kb.member_version:  # META written before versions were kept has none
            unchanged = f"(attribute_not_exists(member_version) OR {unchanged})"
        values = {":version": {"N": str(kb.member_version)}}
        actions: list[Action] = [
            _delete(
                self._table,
                kb_key(kb.kb_id),
                f"attribute_exists(PK) AND owner_id = :owner AND {unchanged}",
                ExpressionAttributeValues={":owner": {"S": kb.owner_id}, **values},
            ),
            _delete(self._table, grant_key(kb.owner_id, kb.kb_id)),
            *(_delete(self._table, grant_key(user_id, kb.kb_id)) for user_id in reader_ids),
            self._table.put_action(cleanup_item(cleanup), "attribute_not_exists(PK)"),
            # The owner's count of KBs, taken down by one (an absent counter, from before counts were
            # kept, becomes 0; a count that missed older KBs can go below 0, which only leaves more room).
            {
                "Update": {
                    "TableName": self._table.name,
                    "Key": dump(limit_key(owned_counter(kb.owner_id))),
                    "UpdateExpression": "SET n = if_not_exists(n, :one) - :one",
                    "ExpressionAttributeValues": dump({":one": 1}),
                }
            },
        ]
        try:
            self._table.transact(actions)
        except TransactionRefused as err:
            raise ConditionFailed("kb", kb.kb_id) from err

    def delete_file_with_outbox(
        self, file: FileRecord, owner_id: str, cleanup: CleanupRecord, *, activity: ActivityRecord
    ) -> None:
        """The FILE item gone, the outbox item written and ``activity`` logged, while the KB is still
        ``owner_id``'s and the file still at ``file``'s version (whose size comes off the KB's bytes).

        Raises ItemMissing("file") when the file is already gone or no longer at that version (a replace
        recorded its next one: read it again), ItemMissing("kb") when the KB is.
        """
        delete = _delete(
            self._table,
            file_key(file.kb_id, file.file_id),
            f"attribute_exists(PK) AND memos_file_id = :memos AND {version_is(file.version)}",
            ExpressionAttributeValues=dump({":memos": file.memos_file_id, ":version": file.version}),
        )
        self._delete_visible_with_outbox(
            delete, "file", file.file_id, file.kb_id, owner_id, cleanup, activity, uncount=[file]
        )

    def delete_folder_with_outbox(
        self, folder: FolderRecord, owner_id: str, cleanup: CleanupRecord, *, activity: ActivityRecord
    ) -> None:
        """The folder item gone (so its subtree is unreachable), the outbox item written and ``activity``
        logged.

        Raises ItemMissing("folder") or ItemMissing("kb").
        """
        delete = _delete(self._table, folder_key(folder.kb_id, folder.folder_id), "attribute_exists(PK)")
        self._delete_visible_with_outbox(
            delete, "folder", folder.folder_id, folder.kb_id, owner_id, cleanup, activity
        )

    def _delete_visible_with_outbox(
        self,
        delete: Action,
        item: Literal["file", "folder"],
        item_id: str,
        kb_id: str,
        owner_id: str,
        cleanup: CleanupRecord,
        activity: ActivityRecord,
        uncount: list[FileRecord] | None = None,
    ) -> None:
        """``delete`` with a check that the KB is still ``owner_id``'s (taking ``uncount``'s files off its
        counts), the outbox item and ``activity``, in one transaction; ItemMissing(``item``) when the item
        is gone, ItemMissing("kb") when the KB is."""
        actions = [
            delete,
            _uncount(self._table, kb_id, uncount, owner_id) if uncount else self._table.owner_check(kb_id, owner_id),
            self._table.put_action(cleanup_item(cleanup), "attribute_not_exists(PK)"),
            activity_put(self._table, activity),
        ]
        try:
            self._table.transact(actions)
        except TransactionRefused as err:
            raise ItemMissing("kb" if 1 in err.failed else item, item_id) from err

    # -- sweeping a deleted folder's subtree -------------------------------------------------------

    def delete_files_with_part(self, part: CleanupPart, files: list[FileRecord]) -> None:
        """Delete up to 98 FILE items, note their MemOS ids in one outbox part and take them off their KB's
        counts, in one transaction.

        Each delete is conditioned on the file still being there at the version read, so a file deleted
        meanwhile (by a file delete, or another pass of the same sweep) is never uncounted twice: the
        transaction is redone without it; one a replace moved to its next version is redone as it is now, so
        the KB loses the size it counts. When META is gone (the KB was deleted after the folder) the files go
        uncounted.
        """
        item = {**cleanup_part_key(part.cleanup_id, part.part_id), "type": "cleanup_part", **part.model_dump()}
        kb_id = files[0].kb_id if files else ""
        counted = True
        for _ in range(len(files) + 2):
            deletes = [self._delete_version(f) for f in files]
            uncount = [_uncount(self._table, kb_id, files)] if files and counted else []
            try:
                self._table.transact([*deletes, self._table.put_action(item, "attribute_not_exists(PK)"), *uncount])
                return
            except TransactionRefused as err:
                if len(files) + 1 in err.failed:
                    counted = False  # META is gone: nothing left to count on
                now = {i: FileRecord.model_validate(err.items[i]) for i in err.failed if i < len(files) and i in err.items}
                files = [now.get(i, f) for i, f in enumerate(files) if i not in err.failed or i in now]
        raise ConditionFailed("file", part.part_id)

    def _delete_version(self, file: FileRecord) -> Action:
        """The FILE item, while at ``file``'s version (a refusal returns it as it is now)."""
        return _delete(
            self._table,
            file_key(file.kb_id, file.file_id),
            f"attribute_exists(PK) AND {version_is(file.version)}",
            ExpressionAttributeValues=dump({":version": file.version}),
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )

    def delete_folders(self, folders: list[FolderRecord]) -> None:
        """Delete folder items (already unreachable: their ancestor is gone)."""
        self._batch_delete([folder_key(f.kb_id, f.folder_id) for f in folders])

    # -- the outbox --------------------------------------------------------------------------------

    def get_cleanup(self, cleanup_id: str) -> tuple[CleanupRecord | None, list[CleanupPart]]:
        """The outbox item and its parts, from one consistent Query."""
        head: CleanupRecord | None = None
        parts: list[CleanupPart] = []
        for item in self._table.query(
            KeyConditionExpression="PK = :pk",
            ExpressionAttributeValues={":pk": {"S": f"CLEANUP#{cleanup_id}"}},
            ConsistentRead=True,
        ):
            if item["SK"] == "CLEANUP":
                head = CleanupRecord.model_validate(item)
            elif item["SK"].startswith("PART#"):
                parts.append(CleanupPart.model_validate(item))
        return head, parts

    def delete_cleanup_parts(self, cleanup_id: str, part_ids: list[str]) -> None:
        self._batch_delete([cleanup_part_key(cleanup_id, part_id) for part_id in part_ids])

    def delete_kb_items(self, kb_id: str, limit: int) -> bool:
        """Delete up to ``limit`` items left in a deleted KB's partition; True once it is empty."""
        keys: list[dict[str, str]] = []
        for item in self._table.query(
            KeyConditionExpression="PK = :pk",
            ExpressionAttributeValues={":pk": {"S": f"KB#{kb_id}"}},
            ProjectionExpression="PK, SK",
            ConsistentRead=True,
        ):
            if len(keys) == limit:
                self._batch_delete(keys)
                return False
            keys.append({"PK": item["PK"], "SK": item["SK"]})
        self._batch_delete(keys)
        return True

    def query_due_cleanups(self, now: datetime, limit: int) -> list[CleanupRecord]:
        """Pending or failed cleanups whose next attempt is due, oldest due first (GSI2, may lag)."""
        due: list[CleanupRecord] = []
        for state in ("failed", "pending"):
            due.extend(
                CleanupRecord.model_validate(item)
                for item in limited_query(
                    self._table,
                    limit - len(due),
                    IndexName="GSI2",
                    KeyConditionExpression="GSI2PK = :queue AND GSI2SK <= :now",
                    ExpressionAttributeValues={
                        ":queue": {"S": cleanup_queue(state)},
                        ":now": {"S": now.isoformat()},
                    },
                )
            )
        return due

    def update_cleanup_restarted(self, cleanup: CleanupRecord, next_attempt_at: datetime) -> CleanupRecord:
        """Count one more execution and push the next restart out; ConditionFailed("cleanup") when the
        item is gone (finished) or another reconciler counted this attempt first."""
        item = self._table.update(
            cleanup_key(cleanup.cleanup_id),
            "SET attempts = :next, #state = :pending, GSI2PK = :queue, GSI2SK = :when, next_attempt_at = :when",
            "attribute_exists(PK) AND attempts = :seen",
            {
                ":next": cleanup.attempts + 1,
                ":seen": cleanup.attempts,
                ":pending": "pending",
                ":queue": cleanup_queue("pending"),
                ":when": next_attempt_at.isoformat(),
            },
            {"#state": "state"},
        )
        if item is None:
            raise ConditionFailed("cleanup", cleanup.cleanup_id)
        return CleanupRecord.model_validate(item)

    # -- the residue scan --------------------------------------------------------------------------

    def query_kbs_after(self, cursor: str | None, limit: int) -> list[KnowledgeBaseRecord]:
        """Up to ``limit`` live KBs with ids after ``cursor`` (GSI2 "KB"), in id order."""
        values: dict[str, Any] = {":kb": {"S": "KB"}}
        condition = "GSI2PK = :kb"
        if cursor:
            condition += " AND GSI2SK > :cursor"
            values[":cursor"] = {"S": cursor}
        return [
            KnowledgeBaseRecord.model_validate(item)
            for item in limited_query(
                self._table, limit, IndexName="GSI2", KeyConditionExpression=condition, ExpressionAttributeValues=values
            )
        ]

    def get_cursor(self, name: str) -> str | None:
        item = self._table.get(cursor_key(name))
        return str(item["position"]) if item and item.get("position") else None

    def put_cursor(self, name: str, position: str | None) -> None:
        item = {**cursor_key(name), "type": "cursor", "position": position}
        self._table.client.put_item(TableName=self._table.name, Item=dump(item))

    # -- plumbing ----------------------------------------------------------------------------------

    def _batch_delete(self, keys: list[dict[str, str]]) -> None:
        for start in range(0, len(keys), _BATCH_WRITE_LIMIT):
            request = {
                self._table.name: [{"DeleteRequest": {"Key": dump(k)}} for k in keys[start : start + _BATCH_WRITE_LIMIT]]
            }
            while request:
                resp = self._table.client.batch_write_item(RequestItems=request)
                request = resp.get("UnprocessedItems") or {}
