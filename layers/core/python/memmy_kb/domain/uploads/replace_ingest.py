"""The ingest of a replace: a file's next version, from its verified bytes to MemOS's update and our record.

The upload's state machine is the one of ``memmy_kb.domain.uploads.ingest`` (pending -> submitting -> submitted, or
rejected), and so are its checks: the bytes are verified exactly as an upload's, against the file's own
name. What differs (docs/uploads.md, "Replacing a file"):

* **Hold** checks, in the same transaction, that the file is still at the version replaced and still being
  replaced by this upload, and holds the bytes the file grows by on META under the cap: the record must
  never find the KB full after MemOS has switched to the new version, since a version cannot be taken back.
* **Send** is MemOS's update of the file's MemOS id (the upload carries it), not an add: no MemOS file is
  created, so nothing can be left behind to take back. MemOS answering "not found" means it lost the file.
* **Record** moves the file to its next version (size, hash, upload) conditioned on the version it
  replaced, gives the KB the bytes it shrinks by, logs ``replaced``, then deletes the replaced version's
  objects (the reconciler's sweep catches them if this run dies first).
* **Every end** leaves the file free for the next replace: a rejection unmarks it and gives back the held
  growth, a release (MemOS certainly took nothing) gives the growth back and keeps the mark.

An update whose answer was lost stays ``submitting`` for the reconciler, as an add does. The reconciler
records it when MemOS's file carries its name (the update was taken), else hands it back to the ingest,
which sends it again (docs/memos.md, "Updating a file"). Never back to pending while MemOS may hold it:
a pending replace can end without MemOS being asked (taken over, refused for room, expired).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import ClassVar, Final

from aws_lambda_powertools import Logger

from memmy_kb.domain.engine import FileInput
from memmy_kb.domain.fingerprints.file_prints import keep_prints
from memmy_kb.domain.knowledge_bases.activity import new_activity
from memmy_kb.domain.knowledge_bases.files import GONE_FROM_MEMOS
from memmy_kb.domain.storage import ConditionFailed, ItemMissing, upload_object_key, verified_object_key
from memmy_kb.domain.uploads.ingest import (
    KB_GONE,
    PENDING_KEEP,
    REJECTED_KEEP,
    SUBMITTED_KEEP,
    SUBMITTING_KEEP,
    Ingestion,
    IngestOutcome,
    Refused,
)
from memmy_kb.domain.uploads.residue import drop_if_unneeded, drop_upload_bytes
from memmy_kb.records import FileRecord

logger = Logger(child=True)

FILE_GONE: Final = "The file was deleted."
SUPERSEDED: Final = "Another replacement of this file was started."


class ReplacementIngestion(Ingestion):
    """One delivery's run over one replace (``upload.replaces`` names the file)."""

    not_found_reason: ClassVar[str] = GONE_FROM_MEMOS

    def _target(self) -> str:
        """The file's MemOS id, copied onto the replace when it was issued."""
        assert self.upload.memos_file_id is not None, "a replace carries its file's MemOS id"
        return self.upload.memos_file_id

    def _send(self, target: str, file_input: FileInput) -> str:
        self.memos.update_knowledgebase_file(target, file_input)
        return target

    def check_name(self) -> None:
        """A replace keeps its file's name: nothing to check."""

    def hold(self) -> bool:
        """pending -> submitting, the file still at the version replaced and replaced by this upload, its
        growth held on META (else Refused); False when another delivery holds it."""
        attempt_id = self.new_id()
        now = self.clock()
        try:
            self.contents.update_replacement_submitting(
                self.upload,
                attempt_id=attempt_id,
                now=now,
                keep_until=_epoch(now, SUBMITTING_KEEP),
                sha256=self.sha256,
                capacity=self.config.capacity,
            )
        except ItemMissing as missing:
            raise Refused(KB_GONE if missing.item == "kb" else FILE_GONE) from None
        except ConditionFailed as err:
            if err.item == "upload":
                return False
            raise Refused(SUPERSEDED if err.item == "file" else self._full(err.item)) from None
        self.attempt_id = attempt_id
        return True

    def record(self, memos_file_id: str) -> IngestOutcome:
        """submitting -> submitted: the file at its next version, in one transaction conditioned on the
        version replaced; then the replaced version's bytes go."""
        assert self.attempt_id is not None, "record() needs the upload held"
        upload = self.upload
        assert upload.replaces is not None
        assert upload.if_version is not None
        now = self.clock()
        version = FileRecord(
            kb_id=upload.kb_id,
            file_id=upload.replaces,
            memos_file_id=memos_file_id,
            name=upload.filename,
            size_bytes=upload.size_bytes,
            upload_id=upload.upload_id,
            uploaded_at=now,
            version=upload.if_version + 1,
            sha256=self.sha256 or upload.content_sha256,
            updated_at=now,
        )
        entry = new_activity(
            "replaced", upload.kb_id, upload.owner_id, upload.replaces, now, self.config.activity_retention_days
        )
        try:
            self.contents.put_file_version(
                version,
                owner_id=upload.owner_id,
                attempt_id=self.attempt_id,
                replaced_version=upload.if_version,
                shrink=min(0, upload.size_bytes - (upload.replaced_size or 0)),
                expires_at=_epoch(now, SUBMITTED_KEEP),
                activity=entry,
            )
        except ItemMissing as missing:
            # The KB's or the file's cleanup removes the MemOS file, new version and all.
            return self.reject(KB_GONE if missing.item == "kb" else FILE_GONE)
        except ConditionFailed as err:
            if err.item == "file":
                return self.reject(SUPERSEDED)
            logger.info("replace decided by another run meanwhile; ignored", extra=self._log)
            return self._outcome("ignored")
        if upload.replaced_upload:
            self.storage.delete(upload_object_key(upload.kb_id, upload.replaced_upload))
            if (upload.replaced_size or 0) > self.config.inline_max_bytes:  # only a large one had a verified copy
                self.storage.delete(verified_object_key(upload.kb_id, upload.replaced_upload))
        logger.info("file replaced", extra={**self._log, "file_id": upload.replaces, "version": version.version})
        keep = (upload.kb_id, upload.replaces, version.version, memos_file_id)
        keep_prints(self.prints, self.taker, keep, self._log)
        return self._outcome("submitted")

    def release(self) -> None:
        """submitting -> pending again, the held growth given back (the file stays marked)."""
        assert self.attempt_id is not None, "release() needs the upload held"
        try:
            self.contents.update_replacement_released(
                self.upload, attempt_id=self.attempt_id, expires_at=_epoch(self.clock(), PENDING_KEEP)
            )
        except ConditionFailed:
            logger.info("replace no longer held; nothing to release", extra=self._log)

    def take_back(self, memos_file_id: str, *, reason: str | None) -> IngestOutcome:
        """Nothing to take out of MemOS (an update adds no file): the replace ends with ``reason``."""
        return self.reject(reason) if reason is not None else self._outcome("ignored")

    def reject(self, reason: str) -> IngestOutcome:
        """-> rejected, the file unmarked and a held growth given back; then its bytes go."""
        upload = self.upload
        try:
            self.contents.update_replacement_rejected(
                upload, reason=reason, expires_at=_epoch(self.clock(), REJECTED_KEEP), attempt_id=self.attempt_id
            )
        except ConditionFailed:
            current = drop_if_unneeded(self.contents, self.storage, upload.kb_id, upload.upload_id)
            logger.info("replace decided elsewhere; ignored", extra={**self._log, "state": current and current.state})
            return self._outcome("ignored")
        drop_upload_bytes(self.storage, upload.kb_id, upload.upload_id)
        logger.info("replace rejected", extra={**self._log, "reason": reason})
        return self._outcome("rejected", reason)


def _epoch(now: datetime, keep: timedelta) -> int:
    return int((now + keep).timestamp())
