"""The writes of a replace (a file's next version) in DynamoDB: part of ``DynamoContentStore``.

A replace is an ``UPLOAD#`` item naming the file it ``replaces`` and the version it replaces
(docs/uploads.md, "Replacing a file"). Its writes keep three things true, each in the transaction that
could break it:

* **One replace at a time.** The FILE item's ``replacing`` names the upload of the replace in flight: set
  when the replace is issued (only where none is, or where the one named can no longer hold it), checked
  by the hold, and removed by every end: the record, a rejection, an expiry, and the reconciler's repair.
* **The version moves once, forward.** The record sets the FILE's ``version``, ``sha256``, size and upload
  conditioned on the version it replaced and on still being the file's replace.
* **The KB's bytes stay capped.** A replace that grows the file holds the growth on META from the hold
  (under the cap, before MemOS is asked) until it is recorded or given up; a shrink is applied by the
  record. A give-back finds META gone when the KB was deleted meanwhile, and is then left out.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from memmy_kb.adapters.dynamodb.activity import activity_put
from memmy_kb.adapters.dynamodb.keys import file_key, kb_key, upload_key
from memmy_kb.adapters.dynamodb.table import (
    Action,
    DynamoTable,
    TransactionRefused,
    dump,
    epoch_key,
    kb_bytes_refusal,
    version_is,
)
from memmy_kb.domain.storage import ConditionFailed, ItemMissing
from memmy_kb.records import ActivityRecord, FileRecord, KbCapacity, UploadRecord

_ATTEMPTS = 3


def held_action(table: str, key: dict[str, str], attempt_id: str, now: datetime, keep: int, sha256: str | None) -> Action:
    """pending -> submitting under ``attempt_id`` (TTL ``keep``, GSI2 ``UPLOAD#submitting`` by ``now``),
    keeping the ingest's ``sha256``; conditioned on pending: the hold of an upload or a replace alike."""
    sets = "SET #state = :submitting, attempt_id = :attempt, submitting_at = :now, expires_at = :keep"
    values = {":submitting": "submitting", ":pending": "pending", ":attempt": attempt_id, ":now": now.isoformat(),
              ":keep": keep, ":gsi2pk": "UPLOAD#submitting", ":sha": sha256}  # fmt: skip
    return {
        "Update": {
            "TableName": table,
            "Key": dump(key),
            "UpdateExpression": sets + ", GSI2PK = :gsi2pk, GSI2SK = :now" + (", content_sha256 = :sha" if sha256 else ""),
            "ConditionExpression": "attribute_exists(PK) AND #state = :pending",
            "ExpressionAttributeNames": {"#state": "state"},
            "ExpressionAttributeValues": dump(values),
        }
    }


class ReplacementWrites:
    """The replace's half of ``ContentStore`` (mixed into ``DynamoContentStore``)."""

    _table: DynamoTable
    # ``UploadWrites``'s: the upload marked submitted by its holder, in the record transaction.
    _submitted_action: Callable[[FileRecord, str, int], Action]

    def put_replacement(self, upload: UploadRecord, *, take_over: str | None, capacity: KbCapacity) -> None:
        """Record a pending replace and mark its file ``replacing`` it, in one transaction: the file must
        still be at ``upload.if_version`` and replaced by nobody (or by ``take_over``, an upload that can no
        longer hold it: not submitting), and the KB still the owner's with room for the growth.

        ItemMissing("kb") / ConditionFailed("kb_bytes") for the KB, ItemMissing("file") when the file is
        gone, ConditionFailed("file") when its version or its replace changed.
        """
        assert upload.replaces is not None
        assert upload.if_version is not None
        table = self._table
        item = {
            **upload_key(upload.kb_id, upload.upload_id),
            "type": "upload",
            "GSI2PK": "UPLOAD#pending",
            "GSI2SK": epoch_key(upload.expires_at),
            **upload.model_dump(),
        }
        free = "attribute_not_exists(replacing)" if take_over is None else "replacing = :old"
        values: dict[str, Any] = {":upload": upload.upload_id, ":version": upload.if_version}
        if take_over is not None:
            values[":old"] = take_over
        actions: list[Action] = [
            table.put_action(item, "attribute_not_exists(PK)"),
            self._file_update(
                upload.kb_id,
                upload.replaces,
                "SET replacing = :upload",
                f"attribute_exists(PK) AND {version_is(upload.if_version)} AND {free}",
                values,
            ),
            table.kb_bytes_room_action(
                upload.kb_id, upload.owner_id, grow=upload.growth, capacity=capacity, add=False
            ),
        ]
        if take_over is not None:
            actions.append(
                {
                    "ConditionCheck": {
                        "TableName": table.name,
                        "Key": dump(upload_key(upload.kb_id, take_over)),
                        "ConditionExpression": "attribute_not_exists(PK) OR #state <> :submitting",
                        "ExpressionAttributeNames": {"#state": "state"},
                        "ExpressionAttributeValues": dump({":submitting": "submitting"}),
                    }
                }
            )
        try:
            table.transact(actions)
        except TransactionRefused as err:
            if 2 in err.failed:
                raise kb_bytes_refusal(upload.kb_id, err.items.get(2), upload.owner_id) from err
            if 1 in err.failed and 1 not in err.items:
                raise ItemMissing("file", upload.replaces) from err
            if 0 in err.failed:
                raise ConditionFailed("upload", upload.upload_id) from err
            raise ConditionFailed("file", upload.replaces) from err

    def update_replacement_submitting(
        self,
        upload: UploadRecord,
        *,
        attempt_id: str,
        now: datetime,
        keep_until: int,
        sha256: str | None,
        capacity: KbCapacity,
    ) -> None:
        """pending -> submitting (the hold of a replace): the upload held by ``attempt_id``, its file still
        at the version it replaces and still replaced by it, and the growth held on META under the cap.

        ConditionFailed("upload") when it is not pending (another delivery); ItemMissing("kb") /
        ConditionFailed("kb_bytes"); ItemMissing("file") when the file is gone; ConditionFailed("file") when
        another replace took it over.
        """
        assert upload.replaces is not None
        assert upload.if_version is not None
        table = self._table
        file_check: Action = {
            "ConditionCheck": {
                "TableName": table.name,
                "Key": dump(file_key(upload.kb_id, upload.replaces)),
                "ConditionExpression": f"attribute_exists(PK) AND replacing = :upload AND {version_is(upload.if_version)}",
                "ExpressionAttributeValues": dump(
                    {":upload": upload.upload_id, ":version": upload.if_version}
                ),
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }
        actions = [
            held_action(table.name, upload_key(upload.kb_id, upload.upload_id), attempt_id, now, keep_until, sha256),
            table.kb_bytes_room_action(
                upload.kb_id, upload.owner_id, grow=upload.growth, capacity=capacity, add=True
            ),
            file_check,
        ]
        try:
            table.transact(actions)
        except TransactionRefused as err:
            if 0 in err.failed:
                raise ConditionFailed("upload", upload.upload_id) from err
            if 1 in err.failed:
                raise kb_bytes_refusal(upload.kb_id, err.items.get(1), upload.owner_id) from err
            if 2 not in err.items:
                raise ItemMissing("file", upload.replaces) from err
            raise ConditionFailed("file", upload.replaces) from err

    def update_replacement_released(self, upload: UploadRecord, *, attempt_id: str, expires_at: int) -> None:
        """submitting -> pending again (MemOS certainly took nothing), the growth given back; the file stays
        ``replacing`` it. ConditionFailed("upload") when ``attempt_id`` no longer holds it."""
        released = self._upload_update(
            upload,
            "SET #state = :pending, expires_at = :expires, GSI2PK = :gsi2pk, GSI2SK = :gsi2sk"
            " REMOVE attempt_id, submitting_at",
            "attribute_exists(PK) AND #state = :submitting AND attempt_id = :attempt",
            {
                ":pending": "pending",
                ":submitting": "submitting",
                ":attempt": attempt_id,
                ":expires": expires_at,
                ":gsi2pk": "UPLOAD#pending",
                ":gsi2sk": epoch_key(expires_at),
            },
        )
        self._with_optional(upload, [released], self._give_back(upload))

    def update_replacement_rejected(
        self, upload: UploadRecord, *, reason: str, expires_at: int, attempt_id: str | None
    ) -> None:
        """-> rejected with ``reason`` (from pending, or from submitting held by ``attempt_id``), the file no
        longer ``replacing`` it and, from submitting, the growth given back. ConditionFailed("upload") when
        the upload is in neither state."""
        values: dict[str, Any] = {":rejected": "rejected", ":reason": reason, ":expires": expires_at}
        if attempt_id is None:
            condition = "#state = :pending"
            values[":pending"] = "pending"
        else:
            condition = "#state = :submitting AND attempt_id = :attempt"
            values.update({":submitting": "submitting", ":attempt": attempt_id})
        rejected = self._upload_update(
            upload,
            "SET #state = :rejected, reason = :reason, expires_at = :expires REMOVE GSI2PK, GSI2SK",
            f"attribute_exists(PK) AND {condition}",
            values,
        )
        optional = [self._unmark(upload)] + (self._give_back(upload) if attempt_id is not None else [])
        self._with_optional(upload, [rejected], optional)

    def update_replacement_expired(self, upload: UploadRecord, *, expires_at: int) -> None:
        """pending -> expired (its POST lapsed unused), the file no longer ``replacing`` it;
        ConditionFailed("upload") when no longer pending."""
        expired = self._upload_update(
            upload,
            "SET #state = :expired, expires_at = :expires REMOVE GSI2PK, GSI2SK",
            "attribute_exists(PK) AND #state = :pending",
            {":expired": "expired", ":pending": "pending", ":expires": expires_at},
        )
        self._with_optional(upload, [expired], [self._unmark(upload)])

    def delete_pending_replacement(self, upload: UploadRecord) -> None:
        """The replace's record deleted while it is ``pending`` (nothing was handed to MemOS), the file no
        longer ``replacing`` it (when it still was); ConditionFailed("upload") when it is not pending (held
        by an ingest, decided) or gone. Bytes that arrive later find no record: the ingest drops them."""
        deleted: Action = {
            "Delete": {
                "TableName": self._table.name,
                "Key": dump(upload_key(upload.kb_id, upload.upload_id)),
                "ConditionExpression": "attribute_exists(PK) AND #state = :pending",
                "ExpressionAttributeNames": {"#state": "state"},
                "ExpressionAttributeValues": dump({":pending": "pending"}),
            }
        }
        self._with_optional(upload, [deleted], [self._unmark(upload)])

    def clear_replacing(self, kb_id: str, file_id: str, upload_id: str) -> bool:
        """The reconciler's repair: the file no longer ``replacing`` ``upload_id`` (when it still was)."""
        return (
            self._table.update(
                file_key(kb_id, file_id), "REMOVE replacing", "replacing = :upload", {":upload": upload_id}
            )
            is not None
        )

    def put_file_version(
        self,
        file: FileRecord,
        *,
        owner_id: str,
        attempt_id: str,
        replaced_version: int,
        shrink: int,
        expires_at: int,
        activity: ActivityRecord,
    ) -> None:
        """The record of a replace, in one transaction: the FILE at its next version (``file``'s version,
        size, hash, upload and time; conditioned on ``replaced_version`` and on the upload still replacing
        it), the upload submitted, META's bytes moved by ``shrink`` (<= 0: a growth was held at the hold)
        with the KB still ``owner_id``'s, and ``activity`` logged.

        ItemMissing("kb"), then ConditionFailed("upload") when ``attempt_id`` no longer holds the upload,
        then ItemMissing("file") when the file is gone (ConditionFailed("file") if it moved on otherwise).
        """
        table = self._table
        values = {
            ":next": file.version,
            ":sha": file.sha256,
            ":size": file.size_bytes,
            ":upload": file.upload_id,
            ":at": file.updated_at.isoformat() if file.updated_at else None,
            ":version": replaced_version,
        }
        sets = "version = :next, size_bytes = :size, upload_id = :upload, updated_at = :at"
        sets += ", sha256 = :sha" if file.sha256 else ""
        meta: Action = {
            "TableName": table.name,
            "Key": dump(kb_key(file.kb_id)),
            "ConditionExpression": "attribute_exists(PK) AND owner_id = :owner",
        }
        actions: list[Action] = [
            self._file_update(
                file.kb_id,
                file.file_id,
                f"SET {sets} REMOVE replacing",
                f"attribute_exists(PK) AND replacing = :upload AND {version_is(replaced_version)}",
                {k: v for k, v in values.items() if v is not None},
            ),
            self._submitted_action(file, attempt_id, expires_at),
            (
                {
                    "Update": {
                        **meta,
                        "UpdateExpression": "ADD bytes_used :shrink",
                        "ExpressionAttributeValues": dump({":owner": owner_id, ":shrink": shrink}),
                    }
                }
                if shrink < 0
                else {"ConditionCheck": {**meta, "ExpressionAttributeValues": dump({":owner": owner_id})}}
            ),
            activity_put(table, activity),
        ]
        try:
            table.transact(actions)
        except TransactionRefused as err:
            if 2 in err.failed:
                raise ItemMissing("kb", file.kb_id) from err
            if 1 in err.failed:
                raise ConditionFailed("upload", file.upload_id) from err
            if 0 not in err.items:
                raise ItemMissing("file", file.file_id) from err
            raise ConditionFailed("file", file.file_id) from err

    # -- the actions ---------------------------------------------------------------------------------

    def _file_update(
        self, kb_id: str, file_id: str, update: str, condition: str, values: dict[str, Any]
    ) -> Action:
        return {
            "Update": {
                "TableName": self._table.name,
                "Key": dump(file_key(kb_id, file_id)),
                "UpdateExpression": update,
                "ConditionExpression": condition,
                "ExpressionAttributeValues": dump(values),
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }

    def _upload_update(
        self, upload: UploadRecord, update: str, condition: str, values: dict[str, Any]
    ) -> Action:
        return {
            "Update": {
                "TableName": self._table.name,
                "Key": dump(upload_key(upload.kb_id, upload.upload_id)),
                "UpdateExpression": update,
                "ConditionExpression": condition,
                "ExpressionAttributeNames": {"#state": "state"},
                "ExpressionAttributeValues": dump(values),
            }
        }

    def _unmark(self, upload: UploadRecord) -> Action:
        """The file no longer ``replacing`` this upload (when it still is)."""
        assert upload.replaces is not None
        return self._file_update(
            upload.kb_id,
            upload.replaces,
            "REMOVE replacing",
            "replacing = :upload",
            {":upload": upload.upload_id},
        )

    def _give_back(self, upload: UploadRecord) -> list[Action]:
        """The growth held at the hold, taken off META again (nothing when the replace grows nothing)."""
        if upload.growth <= 0:
            return []
        return [
            {
                "Update": {
                    "TableName": self._table.name,
                    "Key": dump(kb_key(upload.kb_id)),
                    "UpdateExpression": "ADD bytes_used :minus",
                    "ConditionExpression": "attribute_exists(PK)",
                    "ExpressionAttributeValues": dump({":minus": -upload.growth}),
                }
            }
        ]

    def _with_optional(self, upload: UploadRecord, required: list[Action], optional: list[Action]) -> None:
        """``required`` and ``optional`` in one transaction; an optional action whose condition fails (the
        file replaced by another, META gone with its KB) is left out and the rest written.
        ConditionFailed("upload") when a required one fails."""
        for _ in range(_ATTEMPTS):
            try:
                self._table.transact([*required, *optional])
                return
            except TransactionRefused as err:
                if any(i < len(required) for i in err.failed):
                    raise ConditionFailed("upload", upload.upload_id) from err
                optional = [a for j, a in enumerate(optional) if len(required) + j not in err.failed]
        self._table.transact(required)
