"""From an S3 ``ObjectCreated`` event to a file in MemOS, or to a rejection the user can read.

One object, one upload record (``UPLOAD#<id>`` under its KB), one state machine:

    pending ──verify ok──▶ submitting ──MemOS add + our write──▶ submitted   (FILE item exists)
       │                      │   └──MemOS stored nothing──▶ pending        (the SQS message is retried)
       └──verify failed──▶ rejected ◀──MemOS refused / KB gone──┘            (bytes deleted, reason kept)

Each upload's run is one ``Ingestion`` with a method per transition (``verify``, ``hold``, ``submit``,
``record``, ``release``, ``reject``, ``take_back``). The real size must equal the declared one and the
bytes fit the extension (``memmy_kb.domain.uploads.verification``). Then the hold moves the upload to
``submitting`` in a transaction that checks the KB, its owner and its capacity (``memmy_kb.domain.knowledge_bases.capacity``):
the duplicate guard too, since a repeated delivery finds the upload in another state. The record
transaction counts the file on META under the same caps and logs the upload. A small file costs the upload
read, one GET, the two transactions, the Query for a sibling of its name and the MemOS add (docs/architecture.md, "Uploads and ingest").

**The crash window** (docs/architecture.md, "Uploads and ingest"). Between MemOS accepting the file
and our FILE transaction, a crash (or a reply that never arrives) leaves a MemOS file nothing points to.
Such uploads stay ``submitting`` (GSI2 ``UPLOAD#submitting``, TTL pushed out by ``SUBMITTING_KEEP``) and
``memmy_kb.domain.reconcile.repair`` resolves them by the upload id the MemOS file name carries
(``memmy_kb.domain.knowledge_bases.naming``). Nothing here retries them: re-adding could store the file twice.

**Whose bytes to delete** (``memmy_kb.domain.uploads.residue``): those of an upload gone (with its KB), rejected or
expired, also when found so after a refused rejection; never of one pending, submitting or submitted.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import ClassVar, Final, Literal

from aws_lambda_powertools import Logger

from memmy_kb.domain.engine import (
    FileInput,
    MemosError,
    MemosFileTooLarge,
    MemosNotFound,
    MemosRejectedInput,
    MemosUnsupportedFile,
)
from memmy_kb.domain.fingerprints.file_prints import PrintTaker, keep_prints
from memmy_kb.domain.fingerprints.store import FingerprintStore
from memmy_kb.domain.knowledge_bases.activity import new_activity
from memmy_kb.domain.knowledge_bases.capacity import capacity_refused
from memmy_kb.domain.knowledge_bases.sibling_names import file_name_holder, taken_reason
from memmy_kb.domain.ports.contents import ContentStore
from memmy_kb.domain.ports.engines import KnowledgeEngine
from memmy_kb.domain.ports.knowledge_bases import KnowledgeBaseStore
from memmy_kb.domain.ports.uploads import UploadObjects
from memmy_kb.domain.storage import ConditionFailed, ItemMissing, ObjectInfo
from memmy_kb.domain.uploads.formats import file_extension
from memmy_kb.domain.uploads.memos_input import memos_input
from memmy_kb.domain.uploads.residue import drop_if_unneeded, drop_upload_bytes
from memmy_kb.domain.uploads.verification import MemorySource, StoredSource, verify_content
from memmy_kb.records import FileRecord, KbCapacity, UploadRecord, utc_now

logger = Logger(child=True)

# How long the record of each outcome stays (the table's TTL): a rejection long enough for the user to
# see why; a submission of unknown outcome long enough for the reconciler to find it.
REJECTED_KEEP: Final = timedelta(days=7)
SUBMITTED_KEEP: Final = timedelta(days=1)
SUBMITTING_KEEP: Final = timedelta(days=30)
PENDING_KEEP: Final = timedelta(days=1)

KB_GONE: Final = "The knowledge base was deleted."
FOLDER_GONE: Final = "The folder was deleted."
LARGER: Final = "The file is larger than declared."
SMALLER: Final = "The file is smaller than declared."
SHA256_MISMATCH: Final = "The file's content does not match the SHA-256 declared for it."
MEMOS_UNSUPPORTED: Final = "The knowledge engine does not accept this type of file."
MEMOS_TOO_LARGE: Final = "The file is too large for the knowledge engine."
_MEMOS_REFUSALS: Final = {MemosUnsupportedFile: MEMOS_UNSUPPORTED, MemosFileTooLarge: MEMOS_TOO_LARGE}
MEMOS_REFUSED: Final = "The knowledge engine could not accept this file."
MEMOS_DOWN: Final = "The knowledge engine was unavailable for too long; please upload the file again."

Result = Literal["submitted", "rejected", "ignored", "unknown"]


class RetryLater(Exception):
    """Nothing was decided and nothing is left half-done: deliver the message again later."""


class Refused(Exception):
    """A check failed: the upload is rejected with ``reason``."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class IngestConfig:
    inline_max_bytes: int
    get_url_ttl_seconds: int
    # What one KB may hold, and how long the upload's activity entry is kept.
    capacity: KbCapacity
    activity_retention_days: int
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
class Ingestion:
    """One delivery's run over one upload: a method per transition of the upload's state machine.

    ``attempt_id`` is this run's fencing token once ``hold`` succeeded: every later write of the upload
    is conditioned on it, so a run that lost the upload to another cannot decide for it.
    """

    kbs: KnowledgeBaseStore
    contents: ContentStore
    storage: UploadObjects
    memos: KnowledgeEngine
    upload: UploadRecord
    config: IngestConfig
    clock: Callable[[], datetime] = utc_now
    new_id: Callable[[], str] = field(default=lambda: secrets.token_hex(12))
    attempt_id: str | None = None
    # The SHA-256 of the bytes this run verified (``verify``); a run that did not verify (the reconciler's)
    # reads the one the hold kept on the upload.
    sha256: str | None = None
    # Where the version's fingerprints go once it is recorded, and what takes them (memmy_kb.domain.fingerprints.file_prints).
    prints: FingerprintStore | None = None
    taker: PrintTaker = field(default_factory=PrintTaker)
    # What MemOS answering "not found" to the hand-over means for this upload.
    not_found_reason: ClassVar[str] = KB_GONE

    @property
    def _log(self) -> dict[str, str]:
        return {"kb_id": self.upload.kb_id, "upload_id": self.upload.upload_id}

    def _outcome(self, result: Result, reason: str | None = None) -> IngestOutcome:
        return IngestOutcome(self.upload.object_key, result, self.upload.upload_id, reason)

    def run(self, info: ObjectInfo, data: bytes | None) -> IngestOutcome:
        """pending -> submitted | rejected | (still submitting: unknown) | pending again (RetryLater).
        ``data``: the bytes, when read with ``info`` (a small file's one GET)."""
        try:
            source = self.verify(info, data)
            target = self._target()
            file_input = memos_input(
                self.upload, source, info, self.storage, url_ttl_seconds=self.config.get_url_ttl_seconds,
                taker=self.taker
            )
            if not self.hold():  # held elsewhere, or gone with its KB / decided: then its bytes go
                current = drop_if_unneeded(self.contents, self.storage, self.upload.kb_id, self.upload.upload_id)
                logger.info("upload not held here; ignored", extra={**self._log, "state": current and current.state})
                return self._outcome("ignored")
            self.check_name()
        except Refused as refused:
            return self.reject(refused.reason)
        return self.submit(target, file_input)

    def verify(self, info: ObjectInfo, data: bytes | None) -> MemorySource | StoredSource:
        """The verified bytes; raises Refused with the user's reason."""
        if info.size != self.upload.size_bytes:
            raise Refused(LARGER if info.size > self.upload.size_bytes else SMALLER)
        # A small file is read once and verified in memory (it goes inline anyway); a large one is checked
        # with ranged reads and one stream.
        source: MemorySource | StoredSource = StoredSource(self.storage, info)
        if info.size <= self.config.inline_max_bytes:
            read = data if data is not None and len(data) == info.size else None
            source = MemorySource(read if read is not None else self.storage.read_range(info, 0, info.size))
        extension = file_extension(self.upload.filename)
        reason = verify_content(self.taker.tapped(source, extension), extension)
        if reason:
            raise Refused(reason)
        self.sha256 = source.sha256()
        if self.upload.sha256 is not None and self.upload.sha256 != self.sha256:
            raise Refused(SHA256_MISMATCH)
        self.taker.extract(source, extension)
        return source

    def _target(self) -> str:
        """The KB's MemOS id: on the upload, or (uploads issued before it was kept there) from META."""
        if self.upload.memos_kb_id:
            return self.upload.memos_kb_id
        kb = self.kbs.get_kb(self.upload.kb_id)
        if kb is None:
            raise Refused(KB_GONE)
        return kb.memos_kb_id

    def hold(self) -> bool:
        """pending -> submitting under a fresh ``attempt_id``, checking that the KB is there, the uploader's
        and has room (else Refused); False when another delivery holds it. Everything that can fail before
        MemOS is called happens before this, so a crash there leaves the upload pending, not stuck."""
        attempt_id = self.new_id()
        now = self.clock()
        try:
            self.contents.update_upload_submitting(
                self.upload.kb_id,
                self.upload.upload_id,
                attempt_id=attempt_id,
                now=now,
                keep_until=_epoch(now + SUBMITTING_KEEP),
                owner_id=self.upload.owner_id,
                size=self.upload.size_bytes,
                capacity=self.config.capacity,
                sha256=self.sha256,
            )
        except ItemMissing:
            raise Refused(KB_GONE) from None
        except ConditionFailed as err:
            if err.item == "upload":
                return False
            raise Refused(self._full(err.item)) from None
        self.attempt_id = attempt_id
        return True

    def check_name(self) -> None:
        """Held (``submitting``), the upload looks for a sibling of its name (``memmy_kb.domain.knowledge_bases.sibling_names``):
        a file of the folder that has it, or another upload of it held meanwhile; Refused if one is there. It
        looks only once it is held, as the other does: of two at once, at least one sees the other."""
        _, files, uploads = self.contents.query_kb_items(self.upload.kb_id)
        sibling = file_name_holder(
            self.upload.filename, self.upload.folder_id, files, uploads, ignore_upload=self.upload.upload_id
        )
        if sibling is not None:
            logger.info("upload's name taken in its folder", extra={**self._log, "sibling": sibling.id})
            raise Refused(taken_reason(sibling))

    def _full(self, which: str) -> str:
        """The reason an upload into a full KB reads (``which``: "kb_files" or "kb_bytes")."""
        return capacity_refused(self.config.capacity, which).message

    def _send(self, target: str, file_input: FileInput) -> str:
        """The MemOS call that hands the file over (an add to the KB ``target``); the MemOS file's id."""
        return self.memos.add_knowledgebase_files(target, [file_input])[0].id

    def submit(self, target: str, file_input: FileInput) -> IngestOutcome:
        """The MemOS call, and what each of its outcomes means for the upload."""
        try:
            memos_file_id = self._send(target, file_input)
        except (MemosRejectedInput, MemosNotFound) as err:
            reason = self.not_found_reason if isinstance(err, MemosNotFound) else _MEMOS_REFUSALS.get(type(err), MEMOS_REFUSED)
            logger.warning("MemOS refused the file", extra={**self._log, "memos_code": err.code})
            return self.reject(reason)
        except MemosError as err:
            if err.did_nothing and self.config.final_attempt:
                logger.warning(
                    "MemOS unavailable on the last delivery; upload rejected",
                    extra={**self._log, "memos_code": err.code},
                )
                return self.reject(MEMOS_DOWN)
            if err.did_nothing:
                self.release()
                logger.warning(
                    "MemOS unavailable; upload released for a retry", extra={**self._log, "memos_code": err.code}
                )
                raise RetryLater("MemOS is unavailable") from err
            # MemOS may have stored the file: a retry could add it twice. The upload stays ``submitting``
            # (GSI2 ``UPLOAD#submitting``) for the reconciler; the message is done.
            logger.warning(
                "MemOS add outcome unknown; left submitting for the reconciler",
                extra={**self._log, "error": type(err).__name__, "attempt_id": self.attempt_id},
            )
            return self._outcome("unknown")
        return self.record(memos_file_id)

    def record(self, memos_file_id: str) -> IngestOutcome:
        """submitting -> submitted: the FILE item, written only while the uploader still owns the KB."""
        assert self.attempt_id is not None, "record() needs the upload held"
        upload = self.upload
        now = self.clock()
        record = FileRecord(
            kb_id=upload.kb_id,
            file_id="fi_" + self.new_id(),
            memos_file_id=memos_file_id,
            name=upload.filename,
            folder_id=upload.folder_id,
            size_bytes=upload.size_bytes,
            upload_id=upload.upload_id,
            uploaded_at=now,
            sha256=self.sha256 or upload.content_sha256,
            updated_at=now,
            origin=upload.origin,
        )
        entry = new_activity(
            "uploaded", upload.kb_id, upload.owner_id, record.file_id, record.uploaded_at,
            self.config.activity_retention_days,
        )
        try:
            self.contents.put_file_for_upload(
                record,
                owner_id=upload.owner_id,
                attempt_id=self.attempt_id,
                expires_at=_epoch(self.clock() + SUBMITTED_KEEP),
                capacity=self.config.capacity,
                activity=entry,
            )
        except ItemMissing as err:
            return self.take_back(memos_file_id, reason=KB_GONE if err.item == "kb" else FOLDER_GONE)
        except ConditionFailed as err:
            if err.item in ("kb_files", "kb_bytes"):
                # Filled up by uploads recorded since the hold: the authoritative check, in this transaction.
                return self.take_back(memos_file_id, reason=self._full(err.item))
            current = self.contents.get_upload(upload.kb_id, upload.upload_id)
            if current is not None and current.state == "submitted" and current.memos_file_id == memos_file_id:
                return self._outcome("ignored")  # recorded meanwhile by another run (the reconciler's)
            return self.take_back(memos_file_id, reason=None)
        logger.info("upload submitted to MemOS", extra={**self._log, "memos_file_id": memos_file_id})
        keep_prints(self.prints, self.taker, (upload.kb_id, record.file_id, record.version, memos_file_id), self._log)
        return self._outcome("submitted")

    def release(self) -> None:
        """submitting -> pending, when MemOS certainly stored nothing: the redelivered message redoes
        every step, and MemOS holds nothing that a second add could duplicate."""
        assert self.attempt_id is not None, "release() needs the upload held"
        try:
            self.contents.update_upload_released(
                self.upload.kb_id,
                self.upload.upload_id,
                attempt_id=self.attempt_id,
                expires_at=_epoch(self.clock() + PENDING_KEEP),
            )
        except ConditionFailed:
            logger.info("upload no longer held; nothing to release", extra=self._log)

    def take_back(self, memos_file_id: str, *, reason: str | None) -> IngestOutcome:
        """MemOS took the file but it cannot be recorded: take it back out of MemOS. With a ``reason``
        (the KB or the target folder was deleted) the upload ends rejected; without one the upload was
        taken over meanwhile (decided by another delivery, or by a folder deletion) and is left as is."""
        log = {**self._log, "memos_file_id": memos_file_id}
        try:
            self.memos.delete_knowledgebase_files([memos_file_id])
        except MemosError:
            logger.exception("MemOS file left behind; the reconciler will find it", extra=log)
            return self._outcome("unknown")
        if reason is None:
            logger.warning("upload taken over during submission; MemOS file removed", extra=log)
            return self._outcome("ignored")
        return self.reject(reason)

    def reject(self, reason: str) -> IngestOutcome:
        """-> rejected: record the reason, then delete the bytes (a retry of a rejected upload deletes
        them again). From pending, or from submitting while this run holds the upload."""
        upload = self.upload
        try:
            self.contents.update_upload_rejected(
                upload.kb_id,
                upload.upload_id,
                reason=reason,
                expires_at=_epoch(self.clock() + REJECTED_KEEP),
                attempt_id=self.attempt_id,
            )
        except ConditionFailed:  # gone with its KB or decided elsewhere: the bytes follow the record now
            current = drop_if_unneeded(self.contents, self.storage, upload.kb_id, upload.upload_id)
            state = current.state if current else None
            logger.info("upload decided by another delivery; ignored", extra={**self._log, "state": state})
            return self._outcome("ignored")
        drop_upload_bytes(self.storage, upload.kb_id, upload.upload_id)
        logger.info("upload rejected", extra={**self._log, "reason": reason})
        return self._outcome("rejected", reason)


def _epoch(moment: datetime) -> int:
    return int(moment.timestamp())
