"""A knowledge base's folders, files and uploads in DynamoDB: ``FOLDER#``, ``FILE#`` and ``UPLOAD#`` items
under ``KB#<kb>``.

Implements ``memmy_kb.domain.ports.contents.ContentStore`` (the writes of a replace are
``memmy_kb.adapters.dynamodb.replacements``). An upload's GSI2 entry says which queue of the
reconciler it is in: ``UPLOAD#pending`` (sorted by expiry) while the object is awaited,
``UPLOAD#submitting`` (sorted by start) while a MemOS add is in flight or its outcome is unknown. Final
states (submitted, rejected) leave the index.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any, Literal

from memmy_kb.adapters.dynamodb.activity import activity_put
from memmy_kb.adapters.dynamodb.keys import file_key, folder_key, kb_key, upload_key
from memmy_kb.adapters.dynamodb.replacements import ReplacementWrites, held_action
from memmy_kb.adapters.dynamodb.table import (
    Action,
    DynamoTable,
    TransactionRefused,
    dump,
    epoch_key,
    kb_room_refusal,
)
from memmy_kb.domain.storage import ConditionFailed, ItemMissing
from memmy_kb.records import ActivityRecord, FileRecord, FolderRecord, KbCapacity, UploadRecord

_NULL = {"NULL": True}


def _parent_is(parent_id: str | None, placeholder: str) -> tuple[str, dict[str, Any]]:
    """A condition that an item's ``parent_id`` is still ``parent_id`` (None: the root), and its values."""
    if parent_id:
        return f"parent_id = {placeholder}", {placeholder: {"S": parent_id}}
    return f"(attribute_not_exists(parent_id) OR parent_id = {placeholder})", {placeholder: _NULL}


class DynamoContentStore(ReplacementWrites):
    """Folders, files and uploads of knowledge bases (a replace's writes: ``ReplacementWrites``)."""

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

    # -- uploads and ingest ------------------------------------------------------------------------

    def put_upload(self, upload: UploadRecord, *, capacity: KbCapacity) -> None:
        """Record a new upload if its KB still exists and is still ``upload.owner_id``'s (else ItemMissing("kb"))
        and, under ``capacity``, has room for one more file of its size (else ConditionFailed("kb_files") or
        ConditionFailed("kb_bytes"); the ingest holds the cap again when it records the file)."""
        item = {
            **upload_key(upload.kb_id, upload.upload_id),
            "type": "upload",
            "GSI2PK": "UPLOAD#pending",
            "GSI2SK": epoch_key(upload.expires_at),
            **upload.model_dump(),
        }
        try:
            self._table.transact(
                [
                    self._table.put_action(item, "attribute_not_exists(PK)"),
                    self._table.kb_room_action(
                        upload.kb_id, upload.owner_id, size=upload.size_bytes, capacity=capacity, count=False
                    ),
                ]
            )
        except TransactionRefused as err:
            if 1 in err.failed:
                raise kb_room_refusal(upload.kb_id, err.items.get(1), upload.owner_id, capacity) from err
            raise ItemMissing("kb", upload.kb_id) from err

    def update_upload_submitting(
        self,
        kb_id: str,
        upload_id: str,
        *,
        attempt_id: str,
        now: datetime,
        keep_until: int,
        owner_id: str,
        size: int,
        capacity: KbCapacity,
        sha256: str | None = None,
    ) -> None:
        """pending -> submitting, held by ``attempt_id``, keeping the ``sha256`` the ingest computed;
        ConditionFailed("upload") when it is not pending.

        This conditional write is the ingest's duplicate guard: of two deliveries of one S3 event, only
        one gets past it. ``keep_until`` pushes the TTL out so that the evidence of a submission whose
        outcome is unknown outlives the reconciler's grace period. The same transaction checks that the KB
        still exists and is still ``owner_id``'s (else ItemMissing("kb")) and, under ``capacity``, that a
        file of ``size`` bytes still fits (ConditionFailed("kb_files") / ("kb_bytes")): the checks a file
        needs before it is sent to MemOS, without reading META.
        """
        update = held_action(self._table.name, upload_key(kb_id, upload_id), attempt_id, now, keep_until, sha256)
        room = self._table.kb_room_action(kb_id, owner_id, size=size, capacity=capacity, count=False)
        try:
            self._table.transact([update, room])
        except TransactionRefused as err:
            if 0 in err.failed:
                raise ConditionFailed("upload", upload_id) from err
            raise kb_room_refusal(kb_id, err.items.get(1), owner_id, capacity) from err

    def update_upload_released(self, kb_id: str, upload_id: str, *, attempt_id: str, expires_at: int) -> None:
        """submitting -> pending again (MemOS certainly stored nothing); ConditionFailed if no longer held."""
        self._update_upload(
            kb_id,
            upload_id,
            "SET #state = :pending, expires_at = :expires, GSI2PK = :gsi2pk, GSI2SK = :gsi2sk"
            " REMOVE attempt_id, submitting_at",
            "#state = :submitting AND attempt_id = :attempt",
            {
                ":pending": "pending",
                ":submitting": "submitting",
                ":attempt": attempt_id,
                ":expires": expires_at,
                ":gsi2pk": "UPLOAD#pending",
                ":gsi2sk": epoch_key(expires_at),
            },
        )

    def update_upload_rejected(
        self, kb_id: str, upload_id: str, *, reason: str, expires_at: int, attempt_id: str | None
    ) -> None:
        """Mark the upload rejected with ``reason``: from pending (``attempt_id`` None), or from submitting
        when ``attempt_id`` holds it. ConditionFailed("upload") when it is in neither state (another delivery decided first)."""
        values: dict[str, Any] = {":rejected": "rejected", ":reason": reason, ":expires": expires_at}
        if attempt_id is None:
            condition = "#state = :pending"
            values[":pending"] = "pending"
        else:
            condition = "#state = :submitting AND attempt_id = :attempt"
            values.update({":submitting": "submitting", ":attempt": attempt_id})
        self._update_upload(
            kb_id,
            upload_id,
            "SET #state = :rejected, reason = :reason, expires_at = :expires REMOVE GSI2PK, GSI2SK",
            condition,
            values,
        )

    def update_upload_expired(self, kb_id: str, upload_id: str, *, expires_at: int) -> None:
        """pending -> expired (its POST lapsed unused); ConditionFailed("upload") when no longer pending."""
        self._update_upload(
            kb_id,
            upload_id,
            "SET #state = :expired, expires_at = :expires REMOVE GSI2PK, GSI2SK",
            "#state = :pending",
            {":expired": "expired", ":pending": "pending", ":expires": expires_at},
        )

    def delete_decided_upload(self, kb_id: str, upload_id: str) -> None:
        """Delete a rejected or expired upload (none there is fine); ConditionFailed("upload") otherwise."""
        condition = "attribute_not_exists(PK) OR #state IN (:rejected, :expired)"
        values = {":rejected": "rejected", ":expired": "expired"}
        if not self._table.delete(upload_key(kb_id, upload_id), condition, values, {"#state": "state"}):
            raise ConditionFailed("upload", upload_id)

    def put_file_for_upload(
        self,
        file: FileRecord,
        *,
        owner_id: str,
        attempt_id: str,
        expires_at: int,
        capacity: KbCapacity,
        activity: ActivityRecord,
    ) -> FileRecord:
        """In one transaction: the FILE item, the upload marked submitted, the file counted on META
        (``file_count``, ``bytes_used``) under the conditions that the KB still exists, is still
        ``owner_id``'s and, under ``capacity``, has room for it, and ``activity`` logged. Returns the file as
        stored. A repeated record of the same upload fails on the upload's condition, so the counts move once.

        Raises ItemMissing("kb") when the KB is gone or changed hands, ConditionFailed("upload") when
        ``attempt_id`` no longer holds the upload, ConditionFailed("kb_files") / ("kb_bytes") when the KB
        is full, and ItemMissing("folder") when the target folder was deleted meanwhile (the upload ends
        rejected, not filed elsewhere).
        """
        actions = [
            self._table.put_action(
                {**file_key(file.kb_id, file.file_id), "type": "file", **file.model_dump()},
                "attribute_not_exists(PK)",
            ),
            self._submitted_action(file, attempt_id, expires_at),
            self._table.kb_room_action(file.kb_id, owner_id, size=file.size_bytes, capacity=capacity, count=True),
        ]
        if file.folder_id is not None:
            actions.append(self._table.exists_check(folder_key(file.kb_id, file.folder_id)))
        actions.append(activity_put(self._table, activity))
        try:
            self._table.transact(actions)
        except TransactionRefused as err:
            room = kb_room_refusal(file.kb_id, err.items.get(2), owner_id, capacity) if 2 in err.failed else None
            if isinstance(room, ItemMissing):
                raise room from err
            if 1 in err.failed or 0 in err.failed:
                raise ConditionFailed("upload", file.upload_id) from err
            if room is not None:
                raise room from err
            raise ItemMissing("folder", file.folder_id or "") from err
        return file

    def _submitted_action(self, file: FileRecord, attempt_id: str, expires_at: int) -> Action:
        return {
            "Update": {
                "TableName": self._table.name,
                "Key": dump(upload_key(file.kb_id, file.upload_id)),
                "UpdateExpression": "SET #state = :submitted, file_id = :file, memos_file_id = :memos,"
                " expires_at = :expires REMOVE GSI2PK, GSI2SK",
                "ConditionExpression": "#state = :submitting AND attempt_id = :attempt",
                "ExpressionAttributeNames": {"#state": "state"},
                "ExpressionAttributeValues": dump(
                    {
                        ":submitted": "submitted",
                        ":submitting": "submitting",
                        ":file": file.file_id,
                        ":memos": file.memos_file_id,
                        ":expires": expires_at,
                        ":attempt": attempt_id,
                    }
                ),
            }
        }

    def _update_upload(
        self, kb_id: str, upload_id: str, update: str, condition: str, values: dict[str, Any]
    ) -> UploadRecord:
        item = self._table.update(
            upload_key(kb_id, upload_id),
            update,
            f"attribute_exists(PK) AND {condition}",
            values,
            {"#state": "state"},
        )
        if item is None:
            raise ConditionFailed("upload", upload_id)
        return UploadRecord.model_validate(item)
