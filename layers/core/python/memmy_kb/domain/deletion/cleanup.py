"""The cleanup: the background half of a delete, which removes what the outbox item names from MemOS,
S3 and the table (``memmy_kb.domain.deletion.delete`` is the request that hides it at once and writes the item).

The cleanup state machine (infra/statemachines/cleanup.asl.json) calls ``Cleaner.run`` until it answers
done, then deletes the outbox item; every call does a bounded round that fits the invocation's time, and
every step is idempotent, so a retry, a restart by the reconciler or two executions at once only repeat
work. MemOS answering "not found" or "not linked" counts as done (the client says so).

* **KB**: its MemOS files, listed page by page and deleted 20 at a time, then the MemOS KB itself with
  ``delete_all`` (MemOS's public docs only describe the unlink, so files go first); the objects under
  ``uploads/<kb>/`` and ``verified/<kb>/``; the rest of the KB's partition (folders, files, uploads).
* **Folder**: the subtree is swept again (``memmy_kb.domain.deletion.delete.sweep_folder``), then as for files.
* **Team**: its memberships and invitations (GSI1 ``TEAM#<team>``), each member taken off their teams
  counter; nothing in MemOS or S3 (the outbox item names the team in ``kb_id``).
* **Files**: the MemOS files named by the outbox item and its parts, their uploads' objects, and their
  fingerprints (``PRINT#`` items; a KB's go with the rest of its partition).

Transient failures (MemOS unavailable or rate limited; the table or the bucket throttled, failing or
unreachable, which the adapters report as ``StoreUnavailable``) raise ``CleanupRetryable``, the error the
state machine's Retry names; anything else fails the execution at once, and its Catch marks the outbox
item failed for the reconciler.

The state machine's task state that calls ``Cleaner.run`` is ``CleanUp``, one round of this module each.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from aws_lambda_powertools import Logger

from memmy_kb.domain.deletion.delete import sweep_folder
from memmy_kb.domain.engine import MemosError, MemosNotFound, MemosRateLimited, MemosUnavailable, backend_of
from memmy_kb.domain.fingerprints.file_prints import drop_prints
from memmy_kb.domain.fingerprints.store import FingerprintStore
from memmy_kb.domain.ports.cleanups import CleanupStore
from memmy_kb.domain.ports.contents import ContentStore
from memmy_kb.domain.ports.engines import BackendSlots, KnowledgeEngines
from memmy_kb.domain.ports.teams import TeamStore
from memmy_kb.domain.ports.uploads import UploadObjects
from memmy_kb.domain.storage import (
    UPLOAD_PREFIX,
    VERIFIED_PREFIX,
    StoreUnavailable,
    upload_object_key,
    verified_object_key,
)
from memmy_kb.records import CleanupPart, CleanupRecord, utc_now

logger = Logger(child=True)

MEMOS_DELETE_BATCH: Final = 20  # MemOS takes at most 20 file ids per request
TABLE_DELETE_BATCH: Final = 500
# A round stops starting new steps when less than this is left of the invocation.
ROUND_RESERVE_SECONDS: Final = 5.0


class CleanupRetryable(Exception):
    """A transient failure: the state machine retries the round with backoff (its Retry names this class)."""


class CleanupFailed(Exception):
    """A failure retrying will not cure soon (MemOS refused the call, a bad key): the execution fails and
    the reconciler restarts it after its grace period."""


@dataclass
class Cleaner:
    """One bounded round of a cleanup, with its collaborators (the cleanup function builds one per call)."""

    cleanups: CleanupStore
    contents: ContentStore
    memos: KnowledgeEngines
    objects: UploadObjects
    slots: BackendSlots
    clock: Callable[[], datetime] = utc_now
    # Seconds left in this invocation (None: unbounded), from the Lambda context.
    time_left: Callable[[], float | None] = lambda: None
    prints: FingerprintStore | None = None
    teams: TeamStore | None = None

    def run(self, cleanup_id: str) -> bool:
        """One bounded round; True when nothing is left to clean up (or the outbox item is already gone)."""
        try:
            return self._round(cleanup_id)
        except (MemosUnavailable, MemosRateLimited) as err:
            raise CleanupRetryable(f"MemOS unavailable: {type(err).__name__} (code {err.code})") from err
        except MemosError as err:
            raise CleanupFailed(f"MemOS refused the cleanup: {type(err).__name__} (code {err.code})") from err
        except StoreUnavailable as err:
            raise CleanupRetryable(str(err)) from err

    def _round(self, cleanup_id: str) -> bool:
        head, parts = self.cleanups.get_cleanup(cleanup_id)
        if head is None:
            return True
        log = {"cleanup_id": cleanup_id, "kb_id": head.kb_id, "target": head.target}
        if head.target == "kb":
            done = self._clean_kb(head)
        elif head.target == "team":
            done = self._clean_team(head)
        else:
            if head.target == "folder":
                sweep_folder(self.contents, self.cleanups, head, clock=self.clock)
                head, parts = self.cleanups.get_cleanup(cleanup_id)
                if head is None:
                    return True
            done = self._clean_files(head, parts)
        logger.info("cleanup round finished" if done else "cleanup round to be continued", extra=log)
        return done

    def _out_of_time(self) -> bool:
        left = self.time_left()
        return left is not None and left < ROUND_RESERVE_SECONDS

    def _clean_kb(self, head: CleanupRecord) -> bool:
        backend = backend_of(head.memos_backend)
        memos = self.memos.engine(backend)
        try:
            ids = [f.id for f in memos.iter_knowledgebase_files(head.memos_kb_id)]
        except MemosNotFound:
            ids = []  # the MemOS KB is gone (or unlinked) already
        for start in range(0, len(ids), MEMOS_DELETE_BATCH):
            if self._out_of_time():
                return False
            memos.delete_knowledgebase_files(ids[start : start + MEMOS_DELETE_BATCH])
        memos.delete_knowledgebase(head.memos_kb_id, delete_all=True)
        # MemOS holds the KB no more: its place on the backend is free (once, however often this runs).
        self.slots.release_slot(backend, head.kb_id)
        for prefix in (f"{UPLOAD_PREFIX}{head.kb_id}/", f"{VERIFIED_PREFIX}{head.kb_id}/"):
            while not self.objects.delete_prefix(prefix, 1000):
                if self._out_of_time():
                    return False
        while not self.cleanups.delete_kb_items(head.kb_id, TABLE_DELETE_BATCH):
            if self._out_of_time():
                return False
        return True

    def _clean_team(self, head: CleanupRecord) -> bool:
        if self.teams is None:
            raise CleanupFailed("a team's cleanup needs the team store")
        while not self.teams.delete_team_memberships(head.kb_id, TABLE_DELETE_BATCH):
            if self._out_of_time():
                return False
        return True

    def _clean_files(self, head: CleanupRecord, parts: list[CleanupPart]) -> bool:
        memos_ids = list(dict.fromkeys([*head.memos_file_ids, *(i for p in parts for i in p.memos_file_ids)]))
        upload_ids = list(dict.fromkeys([*head.upload_ids, *(i for p in parts for i in p.upload_ids)]))
        memos = self.memos.engine(backend_of(head.memos_backend))
        for start in range(0, len(memos_ids), MEMOS_DELETE_BATCH):
            if self._out_of_time():
                return False
            memos.delete_knowledgebase_files(memos_ids[start : start + MEMOS_DELETE_BATCH])
        for upload_id in upload_ids:
            self.objects.delete(upload_object_key(head.kb_id, upload_id))
            self.objects.delete(verified_object_key(head.kb_id, upload_id))
        for file_id in dict.fromkeys([*head.file_ids, *(i for p in parts for i in p.file_ids)]):
            drop_prints(self.prints, head.kb_id, file_id, None)
        self.cleanups.delete_cleanup_parts(head.cleanup_id, [p.part_id for p in parts])
        return True
