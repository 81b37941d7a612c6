"""The DynamoDB table of DESIGN.md §4, turned into domain records and domain errors.

Every read that decides access is strongly consistent (GSIs are never used to authorize). Writes that
must not half-happen are transactions with conditions, not read-then-write.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.exceptions import ClientError

from memmy_kb.errors import Conflict
from memmy_kb.models import (
    FileRecord,
    FolderRecord,
    GrantRecord,
    KnowledgeBaseRecord,
    ProfileRecord,
    UploadRecord,
)

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()
_BATCH_GET_LIMIT = 100


def kb_key(kb_id: str) -> dict[str, str]:
    return {"PK": f"KB#{kb_id}", "SK": "META"}


def grant_key(user_id: str, kb_id: str) -> dict[str, str]:
    return {"PK": f"USER#{user_id}", "SK": f"KB#{kb_id}"}


def profile_key(user_id: str) -> dict[str, str]:
    return {"PK": f"USER#{user_id}", "SK": "PROFILE"}


def folder_key(kb_id: str, folder_id: str) -> dict[str, str]:
    return {"PK": f"KB#{kb_id}", "SK": f"FOLDER#{folder_id}"}


def file_key(kb_id: str, file_id: str) -> dict[str, str]:
    return {"PK": f"KB#{kb_id}", "SK": f"FILE#{file_id}"}


def upload_key(kb_id: str, upload_id: str) -> dict[str, str]:
    return {"PK": f"KB#{kb_id}", "SK": f"UPLOAD#{upload_id}"}


def lookup_key(kind: str, value: str) -> dict[str, str]:
    """Points an email or phone at the one account that verified it."""
    return {"PK": f"{kind.upper()}#{value}", "SK": "LOOKUP"}


def _dump(item: dict[str, Any]) -> dict[str, Any]:
    return {k: _serializer.serialize(_plain(v)) for k, v in item.items() if v is not None}


def _plain(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


def _load(item: dict[str, Any]) -> dict[str, Any]:
    return {k: _deserializer.deserialize(v) for k, v in item.items()}


def _kb_item(kb: KnowledgeBaseRecord) -> dict[str, Any]:
    return {**kb_key(kb.kb_id), "type": "kb", **kb.model_dump()}


def _grant_item(grant: GrantRecord) -> dict[str, Any]:
    return {
        **grant_key(grant.user_id, grant.kb_id),
        "GSI1PK": f"KB#{grant.kb_id}",
        "GSI1SK": f"USER#{grant.user_id}",
        "type": "grant",
        **grant.model_dump(),
    }


class AlreadyMember(Exception):
    pass


class KbUnavailable(Exception):
    pass


class MemberLimitReached(Exception):
    pass


class UploadNotHeld(Exception):
    """The upload is no longer in the state (or held by the attempt) that a write required."""


def _epoch_key(epoch_seconds: int) -> str:
    """A GSI sort key that orders like the time it encodes."""
    return datetime.fromtimestamp(epoch_seconds, UTC).isoformat()


def _newer(verified_at: int | None, holders: Any) -> bool:
    """Whether a verification at ``verified_at`` is newer than the holder's (unknown times never win)."""
    return verified_at is not None and (holders is None or verified_at > int(holders))


def _is_condition_failure(err: ClientError) -> bool:
    return err.response["Error"]["Code"] == "ConditionalCheckFailedException"


class TransactionRefused(Exception):
    """A transaction cancelled by its conditions; ``failed`` holds the indexes of the items that failed."""

    def __init__(self, failed: list[int]) -> None:
        super().__init__(f"conditions failed on items {failed}")
        self.failed = failed


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
    if err.response["Error"]["Code"] != "TransactionCanceledException":
        return []
    return [reason.get("Code", "None") for reason in err.response.get("CancellationReasons", [])]


class Repository:
    """Reads and writes one Memmy table through a low-level DynamoDB client (passed in)."""

    def __init__(self, table_name: str, client: Any) -> None:
        self.table_name = table_name
        self._client = client

    def _transact(self, actions: list[dict[str, Any]]) -> None:
        """Run one write transaction; raise TransactionRefused if a condition failed.

        Transient cancellations (a concurrent transaction on one of the items, throttling) are retried
        with jitter under one ClientRequestToken, so a retry of a transaction that did commit is a no-op.
        Anything else, or contention that outlasts the retries, is raised as is.
        """
        token = uuid.uuid4().hex
        for attempt in range(_TRANSACT_ATTEMPTS):
            try:
                self._client.transact_write_items(TransactItems=actions, ClientRequestToken=token)
                return
            except ClientError as err:
                reasons = _cancellation_codes(err)
                failed = [i for i, code in enumerate(reasons) if code == "ConditionalCheckFailed"]
                if failed:
                    raise TransactionRefused(failed) from err
                transient = err.response["Error"]["Code"] in _TRANSIENT_ERRORS or (
                    bool(reasons)
                    and all(code in _TRANSIENT_REASONS or code in ("None", "") for code in reasons)
                )
                if not transient or attempt == _TRANSACT_ATTEMPTS - 1:
                    raise
                time.sleep(random.uniform(0, 0.05 * 2**attempt))  # noqa: S311 - jitter, not security

    # -- knowledge bases and grants --------------------------------------------------------------

    def create_knowledge_base(self, kb: KnowledgeBaseRecord, owner_grant: GrantRecord) -> None:
        """Write META and the owner's grant together, or neither."""
        try:
            self._transact(
                [
                    {"Put": self._put(_kb_item(kb), "attribute_not_exists(PK)")},
                    {"Put": self._put(_grant_item(owner_grant), "attribute_not_exists(PK)")},
                ]
            )
        except TransactionRefused as err:
            raise Conflict("A knowledge base with this id already exists.") from err

    def get_knowledge_base(self, kb_id: str) -> KnowledgeBaseRecord | None:
        item = self._get(kb_key(kb_id))
        return KnowledgeBaseRecord.model_validate(item) if item else None

    def get_knowledge_bases(self, kb_ids: Iterable[str]) -> dict[str, KnowledgeBaseRecord]:
        items = self._batch_get([kb_key(kb_id) for kb_id in dict.fromkeys(kb_ids)], consistent=True)
        return {item["kb_id"]: KnowledgeBaseRecord.model_validate(item) for item in items}

    def get_grant(self, user_id: str, kb_id: str) -> GrantRecord | None:
        item = self._get(grant_key(user_id, kb_id))
        return GrantRecord.model_validate(item) if item else None

    def list_grants(self, user_id: str) -> list[GrantRecord]:
        """All of a user's grants in one consistent Query: its cost follows the user, not the table."""
        return [
            GrantRecord.model_validate(item)
            for item in self._query(
                KeyConditionExpression="PK = :pk AND begins_with(SK, :kb)",
                ExpressionAttributeValues={":pk": {"S": f"USER#{user_id}"}, ":kb": {"S": "KB#"}},
                ConsistentRead=True,
            )
        ]

    def rename_knowledge_base(self, kb_id: str, owner_id: str, name: str) -> KnowledgeBaseRecord | None:
        """Set the name if the KB still exists and ``owner_id`` still owns it; None otherwise."""
        try:
            resp = self._client.update_item(
                TableName=self.table_name,
                Key=_dump(kb_key(kb_id)),
                UpdateExpression="SET #name = :name",
                ConditionExpression="attribute_exists(PK) AND owner_id = :owner",
                ExpressionAttributeNames={"#name": "name"},
                ExpressionAttributeValues={":name": {"S": name}, ":owner": {"S": owner_id}},
                ReturnValues="ALL_NEW",
            )
        except ClientError as err:
            if _is_condition_failure(err):
                return None
            raise
        return KnowledgeBaseRecord.model_validate(_load(resp["Attributes"]))

    def set_recall(self, user_id: str, kb_id: str, enabled: bool) -> GrantRecord | None:
        """Change one user's recall setting for one KB; None when the grant is gone."""
        try:
            resp = self._client.update_item(
                TableName=self.table_name,
                Key=_dump(grant_key(user_id, kb_id)),
                UpdateExpression="SET recall = :recall",
                ConditionExpression="attribute_exists(PK)",
                ExpressionAttributeValues={":recall": {"BOOL": enabled}},
                ReturnValues="ALL_NEW",
            )
        except ClientError as err:
            if _is_condition_failure(err):
                return None
            raise
        return GrantRecord.model_validate(_load(resp["Attributes"]))

    def add_reader(self, grant: GrantRecord, *, max_readers: int) -> None:
        """Write a reader grant and count it on META, if the KB exists, is the owner's and has room.

        Raises AlreadyMember, or KbUnavailable (deleted or ownership changed), or MemberLimitReached.
        """
        try:
            self._transact(
                [
                    {"Put": self._put(_grant_item(grant), "attribute_not_exists(PK)")},
                    {
                        "Update": {
                            "TableName": self.table_name,
                            "Key": _dump(kb_key(grant.kb_id)),
                            "UpdateExpression": "SET member_count = if_not_exists(member_count, :zero) + :one",
                            "ConditionExpression": "attribute_exists(PK) AND owner_id = :owner"
                            " AND (attribute_not_exists(member_count) OR member_count < :cap)",
                            "ExpressionAttributeValues": _dump(
                                {":zero": 0, ":one": 1, ":owner": grant.owner_id, ":cap": max_readers}
                            ),
                        }
                    },
                ]
            )
        except TransactionRefused as err:
            if 0 in err.failed:
                raise AlreadyMember from err
            kb = self.get_knowledge_base(grant.kb_id)
            if kb is None or kb.owner_id != grant.owner_id:
                raise KbUnavailable from err
            raise MemberLimitReached from err

    def remove_reader(self, kb_id: str, user_id: str) -> bool:
        """Delete a reader's grant and uncount it; False when there was no such reader grant.

        The count never blocks a revoke: its update needs only META to exist, and when META is gone (the
        KB was deleted) the grant is deleted on its own.
        """
        delete = {
            "TableName": self.table_name,
            "Key": _dump(grant_key(user_id, kb_id)),
            "ConditionExpression": "attribute_exists(PK) AND #role = :reader",
            "ExpressionAttributeNames": {"#role": "role"},
            "ExpressionAttributeValues": {":reader": {"S": "reader"}},
        }
        uncount = {
            "TableName": self.table_name,
            "Key": _dump(kb_key(kb_id)),
            "UpdateExpression": "SET member_count = member_count - :one",
            "ConditionExpression": "attribute_exists(PK)",
            "ExpressionAttributeValues": _dump({":one": 1}),
        }
        try:
            self._transact([{"Delete": delete}, {"Update": uncount}])
        except TransactionRefused as err:
            if 0 in err.failed:
                return False
            try:
                self._client.delete_item(**delete)
            except ClientError as gone:
                if _is_condition_failure(gone):
                    return False
                raise
        return True

    def list_members(self, kb_id: str) -> list[GrantRecord]:
        """Every grant on a KB, from GSI1: for display only, never to decide access."""
        return [
            GrantRecord.model_validate(item)
            for item in self._query(
                IndexName="GSI1",
                KeyConditionExpression="GSI1PK = :kb",
                ExpressionAttributeValues={":kb": {"S": f"KB#{kb_id}"}},
            )
        ]

    # -- folders and files -----------------------------------------------------------------------

    def list_kb_contents(self, kb_id: str) -> tuple[list[FolderRecord], list[FileRecord], list[UploadRecord]]:
        """Every folder, file and upload of a KB, from one consistent Query of its partition."""
        folders, files, uploads = [], [], []
        for item in self._query(
            KeyConditionExpression="PK = :pk",
            ExpressionAttributeValues={":pk": {"S": f"KB#{kb_id}"}},
            ConsistentRead=True,
        ):
            kind = item["SK"].split("#", 1)[0]
            if kind == "FOLDER":
                folders.append(FolderRecord.model_validate(item))
            elif kind == "FILE":
                files.append(FileRecord.model_validate(item))
            elif kind == "UPLOAD":
                uploads.append(UploadRecord.model_validate(item))
        return folders, files, uploads

    def get_folder(self, kb_id: str, folder_id: str) -> FolderRecord | None:
        item = self._get(folder_key(kb_id, folder_id))
        return FolderRecord.model_validate(item) if item else None

    def get_file(self, kb_id: str, file_id: str) -> FileRecord | None:
        item = self._get(file_key(kb_id, file_id))
        return FileRecord.model_validate(item) if item else None

    def create_folder(self, folder: FolderRecord) -> bool:
        """Write a new folder if its KB and its parent still exist; False otherwise."""
        actions = [
            {
                "Put": self._put(
                    {**folder_key(folder.kb_id, folder.folder_id), "type": "folder", **folder.model_dump()},
                    "attribute_not_exists(PK)",
                )
            },
            self._condition_exists(kb_key(folder.kb_id)),
        ]
        if folder.parent_id:
            actions.append(self._condition_exists(folder_key(folder.kb_id, folder.parent_id)))
        return self._transact_or_false(actions)

    def update_folder(
        self, folder: FolderRecord, previous: FolderRecord, ancestors: list[FolderRecord]
    ) -> bool:
        """Rename and/or move a folder; False if anything read for the decision changed meanwhile.

        ``ancestors`` is the new parent's chain up to the root, as read. Each of them is checked to still
        have the parent it had, so two concurrent moves can never close a cycle.
        """
        actions: list[dict[str, Any]] = [
            {
                "Update": {
                    "TableName": self.table_name,
                    "Key": _dump(folder_key(folder.kb_id, folder.folder_id)),
                    "UpdateExpression": "SET #name = :name, parent_id = :parent",
                    "ConditionExpression": "attribute_exists(PK) AND "
                    + (
                        "parent_id = :old"
                        if previous.parent_id
                        else "(attribute_not_exists(parent_id) OR parent_id = :null)"
                    ),
                    "ExpressionAttributeNames": {"#name": "name"},
                    "ExpressionAttributeValues": {
                        ":name": {"S": folder.name},
                        ":parent": {"S": folder.parent_id} if folder.parent_id else {"NULL": True},
                        **(
                            {":old": {"S": previous.parent_id}}
                            if previous.parent_id
                            else {":null": {"NULL": True}}
                        ),
                    },
                }
            }
        ]
        for ancestor in ancestors:
            unchanged = (
                {
                    "ConditionExpression": "parent_id = :p",
                    "ExpressionAttributeValues": {":p": {"S": ancestor.parent_id}},
                }
                if ancestor.parent_id
                else {
                    "ConditionExpression": "attribute_exists(PK) AND (attribute_not_exists(parent_id) OR parent_id = :null)",
                    "ExpressionAttributeValues": {":null": {"NULL": True}},
                }
            )
            actions.append(
                {
                    "ConditionCheck": {
                        "TableName": self.table_name,
                        "Key": _dump(folder_key(ancestor.kb_id, ancestor.folder_id)),
                        **unchanged,
                    }
                }
            )
        return self._transact_or_false(actions)

    def move_file(self, kb_id: str, file_id: str, folder_id: str | None) -> bool:
        """Point a file at another folder (None: the root) if both still exist; False otherwise."""
        actions: list[dict[str, Any]] = [
            {
                "Update": {
                    "TableName": self.table_name,
                    "Key": _dump(file_key(kb_id, file_id)),
                    "UpdateExpression": "SET folder_id = :folder",
                    "ConditionExpression": "attribute_exists(PK)",
                    "ExpressionAttributeValues": {
                        ":folder": {"S": folder_id} if folder_id else {"NULL": True}
                    },
                }
            }
        ]
        if folder_id:
            actions.append(self._condition_exists(folder_key(kb_id, folder_id)))
        return self._transact_or_false(actions)

    def _condition_exists(self, key: dict[str, str]) -> dict[str, Any]:
        return {
            "ConditionCheck": {
                "TableName": self.table_name,
                "Key": _dump(key),
                "ConditionExpression": "attribute_exists(PK)",
            }
        }

    def _transact_or_false(self, actions: list[dict[str, Any]]) -> bool:
        try:
            self._transact(actions)
        except TransactionRefused:
            return False
        return True

    # -- uploads and ingest ----------------------------------------------------------------------
    # An upload's GSI2 entry says which reconciler queue it is in: UPLOAD#pending (sorted by expiry)
    # while the object is awaited, UPLOAD#submitting (sorted by start) while a MemOS add is in flight or
    # its outcome is unknown. Final states (submitted, rejected) leave the index.

    def put_upload(self, upload: UploadRecord) -> None:
        """Record a new upload if its KB still exists and is still ``upload.owner_id``'s.

        Raises KbUnavailable otherwise (deleted since the caller's grant was read).
        """
        item = {
            **upload_key(upload.kb_id, upload.upload_id),
            "type": "upload",
            "GSI2PK": "UPLOAD#pending",
            "GSI2SK": _epoch_key(upload.expires_at),
            **upload.model_dump(),
        }
        try:
            self._transact(
                [
                    {"Put": self._put(item, "attribute_not_exists(PK)")},
                    self._condition_owner(upload.kb_id, upload.owner_id),
                ]
            )
        except TransactionRefused as err:
            raise KbUnavailable from err

    def get_upload(self, kb_id: str, upload_id: str) -> UploadRecord | None:
        item = self._get(upload_key(kb_id, upload_id))
        return UploadRecord.model_validate(item) if item else None

    def start_submission(
        self, kb_id: str, upload_id: str, *, attempt_id: str, now: datetime, keep_until: int
    ) -> UploadRecord | None:
        """pending -> submitting, held by ``attempt_id``; None when the upload is not pending (any more).

        This conditional write is the ingest's duplicate guard: of two deliveries of one S3 event, only
        one gets past it. ``keep_until`` pushes the TTL out so that the evidence of a submission whose
        outcome is unknown outlives the reconciler's grace period.
        """
        return self._update_upload(
            kb_id,
            upload_id,
            "SET #state = :submitting, attempt_id = :attempt, submitting_at = :now, expires_at = :keep,"
            " GSI2PK = :gsi2pk, GSI2SK = :now",
            "#state = :pending",
            {
                ":submitting": "submitting",
                ":pending": "pending",
                ":attempt": attempt_id,
                ":now": now.isoformat(),
                ":keep": keep_until,
                ":gsi2pk": "UPLOAD#submitting",
            },
        )

    def release_submission(self, kb_id: str, upload_id: str, *, attempt_id: str, expires_at: int) -> bool:
        """submitting -> pending again, when MemOS certainly stored nothing; False if no longer held."""
        return (
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
                    ":gsi2sk": _epoch_key(expires_at),
                },
            )
            is not None
        )

    def reject_upload(
        self, kb_id: str, upload_id: str, *, reason: str, expires_at: int, attempt_id: str | None = None
    ) -> bool:
        """Mark the upload rejected with ``reason``: from pending, or from submitting when ``attempt_id``
        holds it. False when it is in neither state (another delivery decided first)."""
        values: dict[str, Any] = {
            ":rejected": "rejected",
            ":reason": reason,
            ":expires": expires_at,
        }
        if attempt_id is None:
            condition = "#state = :pending"
            values[":pending"] = "pending"
        else:
            condition = "#state = :submitting AND attempt_id = :attempt"
            values.update({":submitting": "submitting", ":attempt": attempt_id})
        return (
            self._update_upload(
                kb_id,
                upload_id,
                "SET #state = :rejected, reason = :reason, expires_at = :expires REMOVE GSI2PK, GSI2SK",
                condition,
                values,
            )
            is not None
        )

    def record_submitted_file(
        self, file: FileRecord, *, owner_id: str, attempt_id: str, expires_at: int
    ) -> FileRecord:
        """In one transaction: the FILE item, the upload marked submitted, and a check that the KB still
        exists and is still ``owner_id``'s. Returns the file as stored.

        A folder deleted since the upload was requested puts the file at the root instead. Raises
        KbUnavailable when the KB is gone or changed hands, UploadNotHeld when ``attempt_id`` no longer
        holds the upload.
        """
        for folder_id in dict.fromkeys([file.folder_id, None]):
            stored = file.model_copy(update={"folder_id": folder_id})
            actions: list[dict[str, Any]] = [
                {
                    "Put": self._put(
                        {**file_key(file.kb_id, file.file_id), "type": "file", **stored.model_dump()},
                        "attribute_not_exists(PK)",
                    )
                },
                {
                    "Update": {
                        "TableName": self.table_name,
                        "Key": _dump(upload_key(file.kb_id, file.upload_id)),
                        "UpdateExpression": "SET #state = :submitted, file_id = :file, memos_file_id = :memos,"
                        " expires_at = :expires REMOVE GSI2PK, GSI2SK",
                        "ConditionExpression": "#state = :submitting AND attempt_id = :attempt",
                        "ExpressionAttributeNames": {"#state": "state"},
                        "ExpressionAttributeValues": _dump(
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
                },
                self._condition_owner(file.kb_id, owner_id),
            ]
            if folder_id is not None:
                actions.append(self._condition_exists(folder_key(file.kb_id, folder_id)))
            try:
                self._transact(actions)
            except TransactionRefused as err:
                if err.failed == [3]:
                    continue  # only the folder is gone: file it at the root
                if 2 in err.failed:
                    raise KbUnavailable from err
                raise UploadNotHeld from err
            return stored
        raise AssertionError("unreachable: the root needs no folder check")

    def _update_upload(
        self, kb_id: str, upload_id: str, update: str, condition: str, values: dict[str, Any]
    ) -> UploadRecord | None:
        try:
            resp = self._client.update_item(
                TableName=self.table_name,
                Key=_dump(upload_key(kb_id, upload_id)),
                UpdateExpression=update,
                ConditionExpression=f"attribute_exists(PK) AND {condition}",
                ExpressionAttributeNames={"#state": "state"},
                ExpressionAttributeValues=_dump(values),
                ReturnValues="ALL_NEW",
            )
        except ClientError as err:
            if _is_condition_failure(err):
                return None
            raise
        return UploadRecord.model_validate(_load(resp["Attributes"]))

    def _condition_owner(self, kb_id: str, owner_id: str) -> dict[str, Any]:
        return {
            "ConditionCheck": {
                "TableName": self.table_name,
                "Key": _dump(kb_key(kb_id)),
                "ConditionExpression": "attribute_exists(PK) AND owner_id = :owner",
                "ExpressionAttributeValues": {":owner": {"S": owner_id}},
            }
        }

    # -- profiles --------------------------------------------------------------------------------

    def get_profile(self, user_id: str) -> ProfileRecord | None:
        item = self._get(profile_key(user_id))
        return ProfileRecord.model_validate(item) if item else None

    def get_profiles(self, user_ids: Iterable[str]) -> dict[str, ProfileRecord]:
        items = self._batch_get([profile_key(u) for u in dict.fromkeys(user_ids)], consistent=False)
        return {item["user_id"]: ProfileRecord.model_validate(item) for item in items}

    def find_user_by(self, kind: str, value: str) -> str | None:
        """The user id an email or phone lookup points at."""
        item = self._get(lookup_key(kind, value))
        return item["user_id"] if item else None

    def save_profile(
        self, profile: ProfileRecord, previous: ProfileRecord | None, *, verified_at: int | None = None
    ) -> ProfileRecord:
        """Store ``profile`` and move its email/phone lookups, all in one transaction; return what was stored.

        A verified identifier held by another account moves to this one when this verification
        (``verified_at``, the token's issue time) is newer than the holder's: phone numbers get
        reassigned, and the latest verification wins. Otherwise it stays with the holder and leaves this
        profile, so a profile and its lookups never disagree and an old token cannot take it back. Every
        step is conditioned on what was read, so a concurrent change cancels the whole write.
        """
        actions: list[dict[str, Any]] = []
        for kind in ("email", "phone"):
            new, old = getattr(profile, kind), getattr(previous, kind) if previous else None
            if old and old != new:
                actions.append(
                    {
                        "Delete": {
                            "TableName": self.table_name,
                            "Key": _dump(lookup_key(kind, old)),
                            "ConditionExpression": "attribute_not_exists(PK) OR user_id = :me",
                            "ExpressionAttributeValues": {":me": {"S": profile.user_id}},
                        }
                    }
                )
            if not new:
                continue
            lookup = self._get(lookup_key(kind, new))
            holder = lookup["user_id"] if lookup else None
            if holder not in (None, profile.user_id) and not _newer(verified_at, lookup.get("verified_at")):
                profile = profile.model_copy(update={kind: None})
                continue
            actions.extend(
                self._claim_lookup(kind, new, profile.user_id, holder, profile.updated_at, verified_at)
            )
        condition = "attribute_not_exists(PK)" if previous is None else "updated_at = :seen"
        put = self._put(
            {**profile_key(profile.user_id), "type": "profile", **profile.model_dump()}, condition
        )
        if previous is not None:
            put["ExpressionAttributeValues"] = {":seen": {"S": previous.updated_at.isoformat()}}
        actions.append({"Put": put})
        try:
            self._transact(actions)
        except TransactionRefused as err:
            raise Conflict(
                "The profile changed at the same time; try again.", code="profile_conflict"
            ) from err
        return profile

    def _claim_lookup(
        self, kind: str, value: str, user_id: str, holder: str | None, now: datetime, verified_at: int | None
    ) -> list[dict[str, Any]]:
        item = {**lookup_key(kind, value), "type": "lookup", "user_id": user_id, "verified_at": verified_at}
        if holder is None or holder == user_id:
            # Written even when unchanged: it repairs a lookup lost to a race, and fails if taken meanwhile.
            return [
                {"Put": self._put(item, "attribute_not_exists(PK) OR user_id = :me", {":me": {"S": user_id}})}
            ]
        return [
            {"Put": self._put(item, "user_id = :holder", {":holder": {"S": holder}})},
            {
                # Touching updated_at makes a save of the holder's profile that read it before this
                # take-over fail its condition, instead of putting the identifier back on it.
                "Update": {
                    "TableName": self.table_name,
                    "Key": _dump(profile_key(holder)),
                    "UpdateExpression": "REMOVE #attr SET updated_at = :now",
                    "ConditionExpression": "attribute_not_exists(#attr) OR #attr = :value",
                    "ExpressionAttributeNames": {"#attr": kind},
                    "ExpressionAttributeValues": {":value": {"S": value}, ":now": {"S": now.isoformat()}},
                }
            },
        ]

    # -- plumbing --------------------------------------------------------------------------------

    def _put(
        self, item: dict[str, Any], condition: str, values: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        put: dict[str, Any] = {
            "TableName": self.table_name,
            "Item": _dump(item),
            "ConditionExpression": condition,
        }
        if values:
            put["ExpressionAttributeValues"] = values
        return put

    def _get(self, key: dict[str, str]) -> dict[str, Any] | None:
        resp = self._client.get_item(TableName=self.table_name, Key=_dump(key), ConsistentRead=True)
        return _load(resp["Item"]) if "Item" in resp else None

    def _query(self, **kwargs: Any) -> Iterator[dict[str, Any]]:
        while True:
            resp = self._client.query(TableName=self.table_name, **kwargs)
            yield from (_load(item) for item in resp.get("Items", []))
            if "LastEvaluatedKey" not in resp:
                return
            kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]

    def _batch_get(self, keys: list[dict[str, str]], *, consistent: bool) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        for start in range(0, len(keys), _BATCH_GET_LIMIT):
            request = {
                self.table_name: {
                    "Keys": [_dump(k) for k in keys[start : start + _BATCH_GET_LIMIT]],
                    "ConsistentRead": consistent,
                }
            }
            while request:
                resp = self._client.batch_get_item(RequestItems=request)
                found.extend(_load(item) for item in resp.get("Responses", {}).get(self.table_name, []))
                request = resp.get("UnprocessedKeys") or {}
        return found
