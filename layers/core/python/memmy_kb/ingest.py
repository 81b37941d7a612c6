"""From an S3 ``ObjectCreated`` event to a file in MemOS, or to a rejection the user can read.

One object, one upload record (``UPLOAD#<id>`` under its KB), one state machine:

    pending ──verify ok──▶ submitting ──MemOS add + our write──▶ submitted   (FILE item exists)
       │                      │   └──MemOS stored nothing──▶ pending        (the SQS message is retried)
       └──verify failed──▶ rejected ◀──MemOS refused / KB gone──┘            (bytes deleted, reason kept)

Checks, cheapest first: the real size equals the declared one; the KB still exists and the uploader
still owns it (consistent reads); the bytes fit the extension (``memmy_kb.verification``, bounded
memory). Only then does the upload move to ``submitting`` with a conditional write from ``pending``,
which is also the duplicate guard: a repeated or concurrent delivery of the same event finds the
upload in another state and does nothing.

**The crash window.** Between MemOS accepting the file and our transaction that writes the FILE item
and marks the upload ``submitted``, a crash (or a MemOS reply that never arrives) would leave a MemOS
file nothing in Memmy points to. Such uploads stay ``submitting``: they keep ``attempt_id`` and
``submitting_at``, their TTL is pushed out by ``SUBMITTING_KEEP``, and they carry the GSI2 entry
``GSI2PK = "UPLOAD#submitting"``, ``GSI2SK = submitting_at`` (ISO 8601). The reconciler queries that
index for entries older than its grace period (well above the ingest's timeout) and resolves each one:
a MemOS file of that name in the KB that no FILE item references is either adopted (write the FILE item
and mark the upload submitted, conditioned on ``attempt_id``) or deleted, after which the upload goes
back to ``pending`` (and its object is ingested again) or is rejected. Nothing in this module retries
a ``submitting`` upload by itself, because it cannot know whether MemOS holds the file: re-adding could
store it twice.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final, Literal
from urllib.parse import unquote_plus

from aws_lambda_powertools import Logger

from memmy_kb.memos import (
    FileInput,
    MemosClient,
    MemosError,
    MemosNotFound,
    MemosRejectedInput,
    MemosUnavailable,
)
from memmy_kb.models import FileRecord, KnowledgeBaseRecord, UploadRecord, utc_now
from memmy_kb.repository import KbUnavailable, Repository, UploadNotHeld
from memmy_kb.storage import (
    ObjectChanged,
    ObjectInfo,
    UploadStorage,
    parse_upload_key,
    verified_object_key,
)
from memmy_kb.verification import file_extension, verify_content

logger = Logger(child=True)

# How long the record of each outcome stays (the table's TTL): a rejection long enough for the user to
# see why; a submission of unknown outcome long enough for the reconciler to find it.
REJECTED_KEEP: Final = timedelta(days=7)
SUBMITTED_KEEP: Final = timedelta(days=1)
SUBMITTING_KEEP: Final = timedelta(days=30)
PENDING_KEEP: Final = timedelta(days=1)

KB_GONE: Final = "The knowledge base was deleted."
NOT_OWNER: Final = "You no longer own this knowledge base."
LARGER: Final = "The file is larger than declared."
SMALLER: Final = "The file is smaller than declared."
_MEMOS_REFUSALS: Final[dict[int, str]] = {
    **dict.fromkeys((40007, 50107), "The knowledge engine does not accept this type of file."),
    **dict.fromkeys((50104, 50105), "The file is too large for the knowledge engine."),
}
MEMOS_REFUSED: Final = "The knowledge engine could not accept this file."
MEMOS_DOWN: Final = "The knowledge engine was unavailable for too long; please upload the file again."

Result = Literal["submitted", "rejected", "ignored", "unknown"]


class RetryLater(Exception):
    """Nothing was decided and nothing is left half-done: deliver the message again later."""


@dataclass(frozen=True)
class IngestConfig:
    inline_max_bytes: int
    get_url_ttl_seconds: int
    # This delivery is the queue's last (the next failure would go to the DLQ): decide instead of
    # waiting again, so the user sees "failed" rather than an upload that never ends.
    final_attempt: bool = False


@dataclass(frozen=True)
class IngestOutcome:
    key: str
    result: Result
    upload_id: str | None = None
    reason: str | None = None


@dataclass
class MemorySource:
    """A small object already read into memory, verified without reading it again."""

    data: bytes

    @property
    def size(self) -> int:
        return len(self.data)

    def read_range(self, start: int, length: int) -> bytes:
        return self.data[start : start + length]

    def chunks(self) -> Iterable[bytes]:
        yield self.data


@dataclass
class StoredSource:
    """A stored object read in ranges and one stream, every read pinned to the ETag of ``info``."""

    storage: UploadStorage
    info: ObjectInfo

    @property
    def size(self) -> int:
        return self.info.size

    def read_range(self, start: int, length: int) -> bytes:
        return self.storage.read_range(self.info, start, length)

    def chunks(self) -> Iterable[bytes]:
        return self.storage.iter_chunks(self.info)


def object_keys(message_body: str) -> list[str]:
    """The decoded keys of the ``ObjectCreated`` records in one SQS message body from S3.

    S3's ``s3:TestEvent`` (sent when the notification is configured) has no records. Keys arrive
    URL-encoded (moto even encodes ``/``), so each is decoded with ``unquote_plus``. Raises ValueError
    for a body that is not an S3 notification (such a message should end in the DLQ, not vanish).
    """
    from aws_lambda_powertools.utilities.data_classes import S3Event

    try:
        payload = json.loads(message_body)
    except json.JSONDecodeError as err:
        raise ValueError("message body is not JSON") from err
    if not isinstance(payload, dict):
        raise ValueError("message body is not an S3 notification")
    if payload.get("Event") == "s3:TestEvent":
        return []
    if not isinstance(payload.get("Records"), list):
        raise ValueError("message body is not an S3 notification")
    return [
        unquote_plus(record.s3.get_object.key)
        for record in S3Event(payload).records
        if record.event_name.startswith("ObjectCreated")
    ]


def ingest_object(
    repo: Repository,
    storage: UploadStorage,
    memos: MemosClient,
    key: str,
    *,
    config: IngestConfig,
    clock: Callable[[], datetime] = utc_now,
    new_id: Callable[[], str] = lambda: secrets.token_hex(12),
) -> IngestOutcome:
    """Verify the object at ``key``, submit it to MemOS and record the file, or reject it.

    Idempotent per object: an unknown key, or an upload that is no longer pending, is a logged no-op.
    Raises RetryLater (and leaves the upload pending) when the outcome must be decided later: the object
    changed while it was read, or MemOS is unavailable and certainly stored nothing.
    """
    ids = parse_upload_key(key)
    upload = repo.get_upload(*ids) if ids else None
    if upload is None:
        logger.info("object has no upload record; ignored", extra={"object_key": key})
        return IngestOutcome(key, "ignored")
    log = {"kb_id": upload.kb_id, "upload_id": upload.upload_id}
    if upload.state == "rejected":
        # An earlier attempt may have recorded the rejection and died before deleting the bytes.
        storage.delete(key)
    if upload.state != "pending":
        logger.info("upload is not pending; duplicate event ignored", extra={**log, "state": upload.state})
        return IngestOutcome(key, "ignored", upload.upload_id)
    info = storage.head(key)
    if info is None:
        logger.info("object is gone; ignored", extra=log)
        return IngestOutcome(key, "ignored", upload.upload_id)
    try:
        kb, source, reason = _verify(repo, storage, upload, info, config)
        if kb is None or source is None:
            return _reject(repo, storage, upload, reason or KB_GONE, clock)
        return _submit(repo, storage, memos, upload, kb, source, info, config, clock, new_id)
    except ObjectChanged:
        # Re-POSTed within the POST's validity: the new version's own event will follow; this one waits.
        logger.info("object replaced while it was read; retrying", extra=log)
        raise RetryLater("the object changed while it was read") from None


def _verify(
    repo: Repository, storage: UploadStorage, upload: UploadRecord, info: ObjectInfo, config: IngestConfig
) -> tuple[KnowledgeBaseRecord | None, MemorySource | StoredSource | None, str | None]:
    """``(kb, source of the verified bytes, None)``, or ``(None, None, reason)`` to reject."""
    if info.size != upload.size_bytes:
        return None, None, LARGER if info.size > upload.size_bytes else SMALLER
    kb = repo.get_knowledge_base(upload.kb_id)
    grant = repo.get_grant(upload.owner_id, upload.kb_id)
    if kb is None:
        return None, None, KB_GONE
    if kb.owner_id != upload.owner_id or grant is None or grant.role != "owner":
        return None, None, NOT_OWNER
    # A small file is read once and verified in memory (it goes inline anyway); a large one is checked
    # with ranged reads and one stream.
    source: MemorySource | StoredSource = (
        MemorySource(storage.read_range(info, 0, info.size))
        if info.size <= config.inline_max_bytes
        else StoredSource(storage, info)
    )
    reason = verify_content(source, file_extension(upload.filename))
    return (None, None, reason) if reason else (kb, source, None)


def _submit(
    repo: Repository,
    storage: UploadStorage,
    memos: MemosClient,
    upload: UploadRecord,
    kb: KnowledgeBaseRecord,
    source: MemorySource | StoredSource,
    info: ObjectInfo,
    config: IngestConfig,
    clock: Callable[[], datetime],
    new_id: Callable[[], str],
) -> IngestOutcome:
    key = upload.object_key
    log = {"kb_id": upload.kb_id, "upload_id": upload.upload_id}
    # Everything that can fail before MemOS is called happens before ``submitting``, so that a crash
    # there leaves the upload pending (and the retried message redoes it) rather than stuck.
    file_input = _file_input(storage, upload, source, info, config)
    attempt_id = new_id()
    now = clock()
    held = repo.start_submission(
        upload.kb_id,
        upload.upload_id,
        attempt_id=attempt_id,
        now=now,
        keep_until=_epoch(now + SUBMITTING_KEEP),
    )
    if held is None:
        logger.info("another delivery took the upload; ignored", extra=log)
        return IngestOutcome(key, "ignored", upload.upload_id)
    try:
        added = memos.add_files(kb.memos_kb_id, [file_input])
    except (MemosRejectedInput, MemosNotFound) as err:
        reason = (
            KB_GONE if isinstance(err, MemosNotFound) else _MEMOS_REFUSALS.get(err.code or 0, MEMOS_REFUSED)
        )
        logger.warning("MemOS refused the file", extra={**log, "memos_code": err.code})
        return _reject(repo, storage, upload, reason, clock, attempt_id=attempt_id)
    except MemosError as err:
        if _stored_nothing(err) and config.final_attempt:
            logger.warning(
                "MemOS unavailable on the last delivery; upload rejected",
                extra={**log, "memos_code": err.code},
            )
            return _reject(repo, storage, upload, MEMOS_DOWN, clock, attempt_id=attempt_id)
        if _stored_nothing(err):
            # Back to pending: the redelivered message redoes every step, and MemOS holds nothing that a
            # second add could duplicate.
            repo.release_submission(
                upload.kb_id,
                upload.upload_id,
                attempt_id=attempt_id,
                expires_at=_epoch(clock() + PENDING_KEEP),
            )
            logger.warning(
                "MemOS unavailable; upload released for a retry", extra={**log, "memos_code": err.code}
            )
            raise RetryLater("MemOS is unavailable") from err
        # MemOS may have stored the file: a retry could add it twice. The upload stays ``submitting``
        # (GSI2 ``UPLOAD#submitting``) for the reconciler; the message is done.
        logger.warning(
            "MemOS add outcome unknown; left submitting for the reconciler",
            extra={**log, "error": type(err).__name__, "attempt_id": attempt_id},
        )
        return IngestOutcome(key, "unknown", upload.upload_id)
    memos_file_id = added[0].id
    record = FileRecord(
        kb_id=upload.kb_id,
        file_id="fi_" + new_id(),
        memos_file_id=memos_file_id,
        name=upload.filename,
        folder_id=upload.folder_id,
        size_bytes=upload.size_bytes,
        upload_id=upload.upload_id,
        uploaded_at=clock(),
    )
    try:
        repo.record_submitted_file(
            record,
            owner_id=upload.owner_id,
            attempt_id=attempt_id,
            expires_at=_epoch(clock() + SUBMITTED_KEEP),
        )
    except (KbUnavailable, UploadNotHeld) as err:
        return _undo_submission(repo, storage, memos, upload, memos_file_id, attempt_id, clock, err)
    logger.info("upload submitted to MemOS", extra={**log, "memos_file_id": memos_file_id})
    return IngestOutcome(key, "submitted", upload.upload_id)


def _file_input(
    storage: UploadStorage,
    upload: UploadRecord,
    source: MemorySource | StoredSource,
    info: ObjectInfo,
    config: IngestConfig,
) -> FileInput:
    """Small files inline as a data URL of the bytes verified; large ones as a short-lived GET URL.

    The URL points at a server-side copy of exactly the verified version (copied with ``IfMatch`` on its
    ETag): the presigned POST stays usable for minutes, and the client must not be able to swap the
    bytes MemOS will fetch after we looked at them.
    """
    if isinstance(source, MemorySource):
        return FileInput.from_bytes(source.data, name=upload.filename, mime_type=upload.content_type)
    verified_key = verified_object_key(upload.kb_id, upload.upload_id)
    storage.copy(info, verified_key)
    url = storage.presign_get(verified_key, expires_in=config.get_url_ttl_seconds)
    return FileInput(content=url, name=upload.filename)


def _stored_nothing(err: MemosError) -> bool:
    """Whether MemOS certainly did not store the file: the request never left, or MemOS answered with
    an error code of its own (it refused or failed the call). A timeout or a reply we could not read
    after sending leaves the outcome unknown."""
    if not err.request_sent:
        return True
    return not (isinstance(err, MemosUnavailable) and err.code is None)


def _undo_submission(
    repo: Repository,
    storage: UploadStorage,
    memos: MemosClient,
    upload: UploadRecord,
    memos_file_id: str,
    attempt_id: str,
    clock: Callable[[], datetime],
    err: Exception,
) -> IngestOutcome:
    """MemOS took the file but it cannot be recorded (KB deleted meanwhile): take it back out of MemOS."""
    log = {"kb_id": upload.kb_id, "upload_id": upload.upload_id, "memos_file_id": memos_file_id}
    try:
        memos.delete_files([memos_file_id])
    except MemosError:
        logger.exception("MemOS file left behind; the reconciler will find it", extra=log)
        return IngestOutcome(upload.object_key, "unknown", upload.upload_id)
    if isinstance(err, UploadNotHeld):
        logger.warning("upload taken over during submission; MemOS file removed", extra=log)
        return IngestOutcome(upload.object_key, "ignored", upload.upload_id)
    return _reject(repo, storage, upload, KB_GONE, clock, attempt_id=attempt_id)


def _reject(
    repo: Repository,
    storage: UploadStorage,
    upload: UploadRecord,
    reason: str,
    clock: Callable[[], datetime],
    *,
    attempt_id: str | None = None,
) -> IngestOutcome:
    """Record the reason, then delete the bytes (a retry of a rejected upload deletes them again)."""
    log = {"kb_id": upload.kb_id, "upload_id": upload.upload_id}
    recorded = repo.reject_upload(
        upload.kb_id,
        upload.upload_id,
        reason=reason,
        expires_at=_epoch(clock() + REJECTED_KEEP),
        attempt_id=attempt_id,
    )
    if not recorded:
        logger.info("upload decided by another delivery; ignored", extra=log)
        return IngestOutcome(upload.object_key, "ignored", upload.upload_id)
    storage.delete(upload.object_key)
    storage.delete(verified_object_key(upload.kb_id, upload.upload_id))
    logger.info("upload rejected", extra={**log, "reason": reason})
    return IngestOutcome(upload.object_key, "rejected", upload.upload_id, reason)


def _epoch(moment: datetime) -> int:
    return int(moment.timestamp())
