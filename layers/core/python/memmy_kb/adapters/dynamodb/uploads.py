"""The writes of an upload in DynamoDB, from pending to submitted, rejected or expired, and the file its
record writes: part of ``DynamoContentStore``.

Each move of an ``UPLOAD#`` item is conditioned on the state it leaves (and, once submitting, on the
``attempt_id`` that holds it), so of two deliveries of one event only one moves it; the hold and the
record check the KB's owner and room in the same transaction (``memmy_kb.adapters.dynamodb.table``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from memmy_kb.adapters.dynamodb.activity import activity_put
from memmy_kb.adapters.dynamodb.keys import file_key, folder_key, upload_key
from memmy_kb.adapters.dynamodb.replacements import held_action
from memmy_kb.adapters.dynamodb.table import (
    Action,
    DynamoTable,
    TransactionRefused,
    dump,
    epoch_key,
    kb_room_refusal,
)
from memmy_kb.domain.storage import ConditionFailed, ItemMissing
from memmy_kb.records import ActivityRecord, FileRecord, KbCapacity, UploadRecord


class UploadWrites:
    """An upload's half of ``ContentStore`` (mixed into ``DynamoContentStore``)."""

    _table: DynamoTable

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
