"""Deleting a KB, a folder or a file: gone in Memmy at once, cleaned up from MemOS and S3 in the background.

Two words, two steps: a **delete** is the user's request, which hides the thing at once and writes the
outbox item; the **cleanup** (``memmy_kb.domain.deletion.cleanup``) is the background pipeline that works through
that outbox and removes what it names from MemOS, S3 and the table.

Step one is one transaction that removes what makes the thing visible and writes a cleanup outbox item
(``memmy_kb.records.CleanupRecord``): for a KB its META and every grant, so it leaves every member's
list and recall scope the moment the request returns; for a file its FILE item; for a folder the folder
item, which makes its subtree unreachable. Step two starts the cleanup state machine with the cleanup id
as the execution name; if that start fails the request still succeeds and the reconciler starts it later
(``memmy_kb.domain.reconcile.repair``). A folder's subtree is then swept in bounded transactions
(``sweep_folder``), here and again by the cleanup, which makes the sweep safe to interrupt anywhere.

Who may delete: the owner only; a reader gets 403 and anyone else the 404 of a KB that does not exist
(``memmy_kb.domain.access``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

from aws_lambda_powertools import Logger

from memmy_kb.domain.access import require_owner
from memmy_kb.domain.knowledge_bases.activity import new_activity
from memmy_kb.domain.ports.cleanups import CleanupExecutions, CleanupStore
from memmy_kb.domain.ports.contents import ContentStore
from memmy_kb.domain.ports.knowledge_bases import KnowledgeBaseStore
from memmy_kb.domain.storage import ConditionFailed, ItemMissing
from memmy_kb.errors import Conflict, file_not_found, folder_not_found, kb_not_found
from memmy_kb.records import (
    ActivityKind,
    ActivityRecord,
    CleanupPart,
    CleanupRecord,
    CleanupTarget,
    FileRecord,
    FolderRecord,
    GrantRecord,
    UploadRecord,
    utc_now,
)

logger = Logger(child=True)

# How long a cleanup may run before the reconciler takes it for stuck and starts it again.
CLEANUP_GRACE: Final = timedelta(minutes=15)
# Items per sweep transaction: one outbox part plus this many deletions stays far below DynamoDB's 100.
SWEEP_CHUNK: Final = 50
FOLDER_GONE: Final = "The folder was deleted."
# A share or revoke landing between our read of META and the delete is retried a few times.
_KB_DELETE_ATTEMPTS: Final = 3
# A replace records a file's next version at most once per upload: a delete reads it again this often.
_FILE_DELETE_ATTEMPTS: Final = 3


def new_cleanup_id() -> str:
    # The OS's CSPRNG, as ``secrets.token_hex`` reads it (context_block's boundary says why not ``secrets``).
    return "cl_" + os.urandom(12).hex()


@dataclass(frozen=True)
class Deleter:
    """The collaborators of a delete, and the clock and id source (tests pass their own)."""

    kbs: KnowledgeBaseStore
    contents: ContentStore
    cleanups: CleanupStore
    executions: CleanupExecutions
    # How long the activity entries of file and folder deletes are kept (each rides in its delete's
    # transaction; a deleted KB's log goes with it: nobody can read it).
    retention_days: int
    clock: Callable[[], datetime] = utc_now
    new_id: Callable[[], str] = new_cleanup_id

    def _entry(self, kind: ActivityKind, kb_id: str, caller: str, subject: str) -> ActivityRecord:
        """The activity entry a delete writes in its own transaction."""
        return new_activity(kind, kb_id, caller, subject, self.clock(), self.retention_days)

    def _cleanup(self, target: CleanupTarget, kb_id: str, grant: GrantRecord, owner_id: str, **extra: object) -> CleanupRecord:
        now = self.clock()
        return CleanupRecord.model_validate(
            {
                "cleanup_id": self.new_id(),
                "target": target,
                "kb_id": kb_id,
                "memos_kb_id": grant.memos_kb_id,
                "memos_backend": grant.memos_backend,
                "owner_id": owner_id,
                "created_at": now,
                "next_attempt_at": now + CLEANUP_GRACE,
                **extra,
            }
        )

    def delete_knowledge_base(self, caller: str, kb_id: str) -> str:
        """META and every grant, with the outbox item, in one transaction; then the cleanup. Owner only."""
        grant = require_owner(self.kbs, caller, kb_id)
        for _ in range(_KB_DELETE_ATTEMPTS):
            kb = self.kbs.get_kb(kb_id)
            if kb is None or kb.owner_id != caller:
                raise kb_not_found()
            readers = set(kb.readers)
            if kb.member_count > len(readers):
                # Grants written before META kept its readers: take them from the member index too.
                readers |= {g.user_id for g in self.kbs.query_kb_members(kb_id) if g.role == "reader"}
            cleanup = self._cleanup("kb", kb_id, grant, caller)
            try:
                self.cleanups.delete_kb_with_outbox(kb, sorted(readers), cleanup)
            except ConditionFailed:
                continue  # membership changed (or the KB is gone): read again
            logger.info("knowledge base deleted", extra={"kb_id": kb_id, "cleanup_id": cleanup.cleanup_id})
            return self._start(cleanup)
        if self.kbs.get_kb(kb_id) is None:
            raise kb_not_found()
        raise Conflict("The knowledge base's members are changing; try again.", code="kb_busy")

    def delete_file(self, caller: str, kb_id: str, file_id: str) -> str:
        """The FILE item with the outbox item naming its MemOS file; then the cleanup. Owner only.

        The delete takes the version read off the KB's bytes: a replace that recorded the file's next
        version meanwhile makes it read the file again (and name that version's bytes)."""
        grant = require_owner(self.kbs, caller, kb_id)
        for _ in range(_FILE_DELETE_ATTEMPTS):
            file = self.contents.get_file(kb_id, file_id)
            if file is None:
                raise file_not_found()
            cleanup = self._cleanup(
                "files", kb_id, grant, caller,
                memos_file_ids=[file.memos_file_id], upload_ids=upload_ids_of([file]), file_ids=[file.file_id],
            )
            try:
                entry = self._entry("file_deleted", kb_id, caller, file_id)
                self.cleanups.delete_file_with_outbox(file, caller, cleanup, activity=entry)
            except ItemMissing as err:
                if err.item == "kb":
                    raise kb_not_found() from None
                continue  # gone (the next read says so) or at its next version: read it again
            logger.info("file deleted", extra={"kb_id": kb_id, "file_id": file_id, "cleanup_id": cleanup.cleanup_id})
            return self._start(cleanup)
        raise Conflict("The file is changing; try again.", code="file_busy")

    def delete_folder(self, caller: str, kb_id: str, folder_id: str) -> str:
        """The folder item with the outbox item (its subtree is unreachable from then on), then the
        subtree swept in bounded transactions, then the cleanup. Owner only."""
        grant = require_owner(self.kbs, caller, kb_id)
        folder = self.contents.get_folder(kb_id, folder_id)
        if folder is None:
            raise folder_not_found()
        cleanup = self._cleanup("folder", kb_id, grant, caller, folder_id=folder_id)
        try:
            entry = self._entry("folder_deleted", kb_id, caller, folder_id)
            self.cleanups.delete_folder_with_outbox(folder, caller, cleanup, activity=entry)
        except ItemMissing as err:
            raise (kb_not_found() if err.item == "kb" else folder_not_found()) from None
        logger.info("folder deleted", extra={"kb_id": kb_id, "folder_id": folder_id, "cleanup_id": cleanup.cleanup_id})
        try:
            sweep_folder(self.contents, self.cleanups, cleanup, clock=self.clock)
        except Exception:
            # The folder is already gone for the user; the cleanup sweeps what is left.
            logger.exception("folder sweep interrupted; the cleanup will finish it", extra={"kb_id": kb_id})
        return self._start(cleanup)

    def _start(self, cleanup: CleanupRecord) -> str:
        """Start the cleanup execution; a failure leaves the outbox item for the reconciler."""
        try:
            self.executions.start(cleanup.cleanup_id, cleanup.cleanup_id)
        except Exception:
            logger.exception(
                "cleanup not started; the reconciler will start it", extra={"cleanup_id": cleanup.cleanup_id}
            )
        return cleanup.cleanup_id


def unreachable(
    folders: list[FolderRecord], files: list[FileRecord], uploads: list[UploadRecord]
) -> tuple[list[FolderRecord], list[FileRecord], list[UploadRecord]]:
    """What no live folder leads to (``memmy_kb.domain.knowledge_bases.folders.is_live``): the folders whose chain of
    parents breaks before the root, farthest from the break first, and the files and unfinished uploads in
    them. Writes only ever create items under live folders, so all of it is left over from deletions."""
    by_id = {f.folder_id: f for f in folders}
    distance: dict[str, int | None] = {}  # folder id -> levels below the break, None when live

    def below_break(folder_id: str | None, seen: frozenset[str] = frozenset()) -> int | None:
        if folder_id is None:
            return None  # reached the root: live
        if folder_id in distance:
            return distance[folder_id]
        folder = by_id.get(folder_id)
        if folder is None or folder_id in seen:
            return 0  # a missing (deleted) folder, or a cycle, which writes never make
        parent = below_break(folder.parent_id, seen | {folder_id})
        distance[folder_id] = None if parent is None else parent + 1
        return distance[folder_id]

    dead = [(d, f) for f in folders if (d := below_break(f.folder_id)) is not None]
    dead.sort(key=lambda pair: -pair[0])

    def in_dead(folder_id: str | None) -> bool:
        return folder_id is not None and below_break(folder_id) is not None

    return (
        [f for _, f in dead],
        [f for f in files if in_dead(f.folder_id)],
        [u for u in uploads if in_dead(u.folder_id) and u.state in ("pending", "submitting")],
    )


# A sweep pass finding something again means a write landed under the deleted folder during the pass
# (a file recorded into a subfolder not yet swept): a few passes catch those, the next round the rest.
SWEEP_PASSES: Final = 3


def sweep_folder(
    contents: ContentStore,
    cleanups: CleanupStore,
    cleanup: CleanupRecord,
    *,
    clock: Callable[[], datetime] = utc_now,
) -> None:
    """Remove what a deleted folder left unreachable from the table; safe to interrupt and run again.

    Each pass first notes the unfinished uploads under it in an outbox part (so their objects are cleaned
    up whatever happens next), then rejects them (a submitting one's ingest takes its MemOS file back), then
    deletes files in transactions that note their MemOS ids in a part, and folders last, farthest first, so
    whatever an interruption leaves still hangs under a missing folder for the next pass.
    """
    for _ in range(SWEEP_PASSES):
        folders, files, uploads = unreachable(*contents.query_kb_items(cleanup.kb_id))
        if not (folders or files or uploads):
            return
        if uploads:
            cleanups.delete_files_with_part(_part(cleanup, upload_ids=[u.upload_id for u in uploads]), [])
        rejected_until = int((clock() + timedelta(days=7)).timestamp())
        for upload in uploads:
            # Decided meanwhile (ConditionFailed): a file it became is swept below or by the next pass.
            with contextlib.suppress(ConditionFailed):
                contents.update_upload_rejected(
                    upload.kb_id,
                    upload.upload_id,
                    reason=FOLDER_GONE,
                    expires_at=rejected_until,
                    attempt_id=upload.attempt_id if upload.state == "submitting" else None,
                )
        for start in range(0, len(files), SWEEP_CHUNK):
            chunk = files[start : start + SWEEP_CHUNK]
            part = _part(
                cleanup,
                memos_file_ids=[f.memos_file_id for f in chunk],
                upload_ids=upload_ids_of(chunk),
                file_ids=[f.file_id for f in chunk],
            )
            cleanups.delete_files_with_part(part, chunk)
        cleanups.delete_folders(folders)


def upload_ids_of(files: list[FileRecord]) -> list[str]:
    """The uploads whose bytes go with ``files``: each one's current version's and its replace in flight's
    (whose ingest then finds the file gone and ends it)."""
    return [u for f in files for u in (f.upload_id, f.replacing) if u is not None]


def _part(cleanup: CleanupRecord, **ids: list[str]) -> CleanupPart:
    return CleanupPart(cleanup_id=cleanup.cleanup_id, part_id=os.urandom(8).hex(), **ids)
