"""A knowledge base's folders, files and uploads in DynamoDB: ``FOLDER#``, ``FILE#`` and ``UPLOAD#`` items
under ``KB#<kb>``.

Implements ``memmy_kb.domain.ports.contents.ContentStore`` (the writes of an upload are
``memmy_kb.adapters.dynamodb.uploads``, those of a replace ``memmy_kb.adapters.dynamodb.replacements``).
An upload's GSI2 entry says which queue of the reconciler it is in: ``UPLOAD#pending`` (sorted by
expiry) while the object is awaited, ``UPLOAD#submitting`` (sorted by start) while a MemOS add is in
flight or its outcome is unknown. Final states (submitted, rejected) leave the index.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any, Literal

from memmy_kb.adapters.dynamodb.keys import file_key, folder_key, kb_key, upload_key
from memmy_kb.adapters.dynamodb.replacements import ReplacementWrites
from memmy_kb.adapters.dynamodb.table import Action, DynamoTable, TransactionRefused, dump
from memmy_kb.adapters.dynamodb.uploads import UploadWrites
from memmy_kb.domain.storage import ConditionFailed, ItemMissing
from memmy_kb.records import FileRecord, FolderRecord, UploadRecord

_NULL = {"NULL": True}


def _parent_is(parent_id: str | None, placeholder: str) -> tuple[str, dict[str, Any]]:
    """A condition that an item's ``parent_id`` is still ``parent_id`` (None: the root), and its values."""
    if parent_id:
        return f"parent_id = {placeholder}", {placeholder: {"S": parent_id}}
    return f"(attribute_not_exists(parent_id) OR parent_id = {placeholder})", {placeholder: _NULL}


class DynamoContentStore(UploadWrites, ReplacementWrites):
    """Folders, files and uploads of knowledge bases (an upload's writes: ``UploadWrites``; a replace's:
    ``ReplacementWrites``)."""

    def __init__(self, table: DynamoTable) -> None:
        self._table = table

    # -- reads -------------------------------------------------------------------------------------

    def query_kb_items(self, kb_id: str) -> tuple[list[FolderRecord], list[FileRecord], list[UploadRecord]]:
        """Every folder, file and upload of a KB, from consistent Queries of its partition: the key ranges
        before and after its ``PRINT#`` items, which are many times their size and never read here."""
        folders: list[FolderRecord] = []
        files: list[FileRecord] = []
        uploads: list[UploadRecord] = []
        for item in self._around_prints(kb_id):
            kind = item["SK"].split("#", 1)[0]
            if kind == "FOLDER":
                folders.append(FolderRecord.model_validate(item))
            elif kind == "FILE":
                files.append(FileRecord.model_validate(item))
            elif kind == "UPLOAD":
                uploads.append(UploadRecord.model_validate(item))
        return folders, files, uploads

    def _around_prints(self, kb_id: str) -> Iterator[dict[str, Any]]:
        # "PRINT$" is the first key after every "PRINT#..." one ("$" follows "#").
        for condition, bound in (("SK < :bound", "PRINT#"), ("SK >= :bound", "PRINT$")):
            yield from self._table.query(
                KeyConditionExpression=f"PK = :pk AND {condition}",
                ExpressionAttributeValues={":pk": {"S": f"KB#{kb_id}"}, ":bound": {"S": bound}},
                ConsistentRead=True,
            )

    def query_folders(self, kb_id: str) -> list[FolderRecord]:
        """Every folder of a KB (folders only), from one consistent Query."""
        return [
            FolderRecord.model_validate(item)
            for item in self._table.query(
                KeyConditionExpression="PK = :pk AND begins_with(SK, :folder)",
                ExpressionAttributeValues={":pk": {"S": f"KB#{kb_id}"}, ":folder": {"S": "FOLDER#"}},
                ConsistentRead=True,
            )
        ]

    def get_folder(self, kb_id: str, folder_id: str) -> FolderRecord | None:
        item = self._table.get(folder_key(kb_id, folder_id))
        return FolderRecord.model_validate(item) if item else None

    def get_file(self, kb_id: str, file_id: str) -> FileRecord | None:
        item = self._table.get(file_key(kb_id, file_id))
        return FileRecord.model_validate(item) if item else None

    def get_upload(self, kb_id: str, upload_id: str) -> UploadRecord | None:
        item = self._table.get(upload_key(kb_id, upload_id))
        return UploadRecord.model_validate(item) if item else None

    def query_upload_queue(
        self, state: Literal["pending", "submitting"], before: datetime, limit: int
    ) -> list[UploadRecord]:
        """Uploads in the reconciler's queue ``state`` whose sort time (expiry for pending, start for
        submitting) is before ``before``, oldest first (GSI2: may lag, so act with conditions)."""
        found: list[UploadRecord] = []
        for item in self._table.query(
            IndexName="GSI2",
            KeyConditionExpression="GSI2PK = :queue AND GSI2SK < :before",
            ExpressionAttributeValues={":queue": {"S": f"UPLOAD#{state}"}, ":before": {"S": before.isoformat()}},
            Limit=limit,
        ):
            found.append(UploadRecord.model_validate(item))
            if len(found) >= limit:
                break
        return found

    # -- folders and files -------------------------------------------------------------------------

    def put_folder(self, folder: FolderRecord) -> None:
        """Write a new folder if its KB and its parent still exist; ItemMissing("kb"/"folder") otherwise."""
        item = {**folder_key(folder.kb_id, folder.folder_id), "type": "folder", **folder.model_dump()}
        actions = [
            self._table.put_action(item, "attribute_not_exists(PK)"),
            self._table.exists_check(kb_key(folder.kb_id)),
        ]
        if folder.parent_id:
            actions.append(self._table.exists_check(folder_key(folder.kb_id, folder.parent_id)))
        try:
            self._table.transact(actions)
        except TransactionRefused as err:
            raise ItemMissing("kb" if 1 in err.failed else "folder", folder.kb_id) from err

    def update_folder(self, folder: FolderRecord, previous: FolderRecord, ancestors: list[FolderRecord]) -> None:
        """Rename and/or move a folder; ConditionFailed("folders") if anything read for it changed meanwhile.

        ``ancestors`` is the new parent's chain up to the root, as read. Each of them is checked to still
        have the parent it had, so two concurrent moves can never close a cycle.
        """
        was, was_values = _parent_is(previous.parent_id, ":old")
        actions: list[Action] = [
            {
                "Update": {
                    "TableName": self._table.name,
                    "Key": dump(folder_key(folder.kb_id, folder.folder_id)),
                    "UpdateExpression": "SET #name = :name, parent_id = :parent",
                    "ConditionExpression": f"attribute_exists(PK) AND {was}",
                    "ExpressionAttributeNames": {"#name": "name"},
                    "ExpressionAttributeValues": {
                        ":name": {"S": folder.name},
                        ":parent": {"S": folder.parent_id} if folder.parent_id else _NULL,
                        **was_values,
                    },
                }
            }
        ]
        for ancestor in ancestors:
            unchanged, values = _parent_is(ancestor.parent_id, ":p")
            actions.append(
                {
                    "ConditionCheck": {
                        "TableName": self._table.name,
                        "Key": dump(folder_key(ancestor.kb_id, ancestor.folder_id)),
                        "ConditionExpression": f"attribute_exists(PK) AND {unchanged}",
                        "ExpressionAttributeValues": values,
                    }
                }
            )
        try:
            self._table.transact(actions)
        except TransactionRefused as err:
            raise ConditionFailed("folders", folder.folder_id) from err

    def update_file_folder(self, kb_id: str, file_id: str, folder_id: str | None) -> None:
        """Point a file at another folder (None: the root); ItemMissing("file"/"folder") if either is gone."""
        actions: list[Action] = [
            {
                "Update": {
                    "TableName": self._table.name,
                    "Key": dump(file_key(kb_id, file_id)),
                    "UpdateExpression": "SET folder_id = :folder",
                    "ConditionExpression": "attribute_exists(PK)",
                    "ExpressionAttributeValues": {":folder": {"S": folder_id} if folder_id else _NULL},
                }
            }
        ]
        if folder_id:
            actions.append(self._table.exists_check(folder_key(kb_id, folder_id)))
        try:
            self._table.transact(actions)
        except TransactionRefused as err:
            raise ItemMissing("file" if 0 in err.failed else "folder", file_id) from err
