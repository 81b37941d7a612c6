"""Reconciliation: the scheduled repair pass that makes MemOS, S3 and the table agree again.

Each run does bounded work (``ReconcileLimits``) and stops early when the invocation's time runs low;
the residue scan resumes from a cursor kept in the table. Every action is conditioned on the state it
read, so two runs at once, or a run racing the ingest or a cleanup, only repeat work:

1. **Cleanups** still pending or failed when their next attempt is due get a new execution (named
   ``<cleanup id>-<attempt>``), with a backoff that doubles per attempt; one past ``STUCK_ATTEMPTS``
   is reported (metric ``CleanupStuck``, alarmed).
2. **Submitting uploads** whose MemOS add has an unknown outcome are resolved by looking for the file in
   the KB's MemOS files (its MemOS name carries the upload id, ``memmy_kb.domain.knowledge_bases.naming``): found, it is
   recorded as submitted; not found, the upload goes back to pending and its object to the ingest queue.
   A file is never added twice: only an add known not to have happened is retried. A replace whose update
   has an unknown outcome is looked for the same way, by the name of the file it updates: taken, it is
   recorded; not, it is handed to the ingest again (docs/memos.md, "Updating a file"); its file gone, it
   ends rejected.
3. **Pending uploads** whose presigned POST lapsed long ago are marked expired and their objects deleted
   (a replace's file is unmarked with it).
4. **Create intents** older than a grace period are KB creates whose MemOS outcome nobody learned: MemOS
   cannot list KBs, so they can only be counted (``KbCreateOutcomeUnknown``, alarmed) and logged.
5. **Residue**: MemOS files of live KBs that no FILE item references and no upload in flight claims are
   deleted (``ResidueFound`` / ``ResidueRemoved``); a file still marked ``replacing`` an upload that is no
   longer in flight (its end died before unmarking it) is unmarked (``ReplaceUnlocked``); fingerprints
   no current file version needs go (``memmy_kb.domain.fingerprints.residue``; ``PrintsRemoved``).
6. **Upload objects** whose upload is gone (with its KB) or final are deleted: a page of at most
   ``ReconcileLimits.objects`` keys of the bucket per run, from a cursor of its own
   (``memmy_kb.domain.uploads.residue``; ``UploadObjectsRemoved``). Never those of an upload pending or submitting.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Final

from aws_lambda_powertools import Logger

from memmy_kb.domain.engine import (
    EngineFile,
    MemosApiKeyError,
    MemosBackendUnknown,
    MemosError,
    MemosNotFound,
    backend_of,
)
from memmy_kb.domain.fingerprints.residue import sweep_prints
from memmy_kb.domain.fingerprints.store import FingerprintStore
from memmy_kb.domain.knowledge_bases.naming import upload_id_in
from memmy_kb.domain.knowledge_bases.placement import capacity_used_percent
from memmy_kb.domain.ports.cleanups import CleanupExecutions, CleanupStore
from memmy_kb.domain.ports.contents import ContentStore
from memmy_kb.domain.ports.engines import BackendSlots, KnowledgeEngine, KnowledgeEngines
from memmy_kb.domain.ports.knowledge_bases import CreateIntents, KnowledgeBaseStore
from memmy_kb.domain.ports.uploads import UploadObjects, UploadRequeue
from memmy_kb.domain.reconcile.report import STUCK_ATTEMPTS, ReconcileReport
from memmy_kb.domain.storage import ConditionFailed, verified_object_key
from memmy_kb.domain.uploads.delivery import ingestion_of
from memmy_kb.domain.uploads.ingest import IngestConfig, Ingestion
from memmy_kb.domain.uploads.replace_ingest import FILE_GONE
from memmy_kb.domain.uploads.residue import sweep_upload_objects
from memmy_kb.records import CleanupRecord, FileRecord, KbCapacity, KnowledgeBaseRecord, UploadRecord, utc_now

logger = Logger(child=True)

CLEANUP_BACKOFF: Final = timedelta(minutes=15)
CLEANUP_BACKOFF_CAP: Final = timedelta(hours=6)
# A MemOS add still unresolved after this is taken for lost (the ingest's own calls end in minutes).
SUBMITTING_GRACE: Final = timedelta(minutes=15)
INTENT_GRACE: Final = timedelta(minutes=15)
# MemOS files younger than this are never taken for residue, whatever our records say.
RESIDUE_GRACE: Final = timedelta(minutes=15)
EXPIRED_KEEP: Final = timedelta(days=1)
RESIDUE_CURSOR: Final = "residue"
LOST: Final = "The upload could not be completed; please upload the file again."
_RESERVE_SECONDS: Final = 10.0


@dataclass(frozen=True)
class ReconcileLimits:
    cleanups: int = 25
    uploads: int = 50
    intents: int = 25
    kbs: int = 20
    objects: int = 200


@dataclass
class Reconciler:
    kbs: KnowledgeBaseStore
    contents: ContentStore
    cleanups: CleanupStore
    intents: CreateIntents
    executions: CleanupExecutions
    requeue: UploadRequeue
    memos: KnowledgeEngines
    objects: UploadObjects
    slots: BackendSlots
    # Recording a found file holds the KB's capacity and logs the upload, as the ingest does.
    capacity: KbCapacity
    activity_retention_days: int
    limits: ReconcileLimits = field(default_factory=ReconcileLimits)
    clock: Callable[[], datetime] = utc_now
    time_left: Callable[[], float | None] = lambda: None
    report: ReconcileReport = field(default_factory=ReconcileReport)
    prints: FingerprintStore | None = None
    _memos_files: dict[str, list[EngineFile]] = field(default_factory=dict)

    def run(self) -> ReconcileReport:
        steps = (self.measure_backends, self.restart_cleanups, self.resolve_submitting, self.expire_pending)
        for step in (*steps, self.count_intents):
            if self._out_of_time():
                break
            step()
        for last in (self.remove_residue, self.sweep_objects):
            if not self._out_of_time():
                last()
        logger.info("reconcile run", extra={"counts": self.report.counts})
        return self.report

    def _out_of_time(self) -> bool:
        left = self.time_left()
        return left is not None and left < _RESERVE_SECONDS

    # -- 0. capacity of the MemOS backends -----------------------------------------------------------

    def measure_backends(self) -> None:
        try:
            backends = self.memos.backends()
        except MemosApiKeyError as err:
            # The secret is unusable: every MemOS step fails too, the others (no MemOS) still run.
            logger.error("MemOS secret unusable; capacity not measured", extra={"error": str(err)})
            return
        used = self.slots.used_slots([b.id for b in backends])
        self.report.backend_used = used
        self.report.backend_max = {b.id: b.max_kbs for b in backends}
        self.report.capacity_used_percent = capacity_used_percent(backends, used)

    # -- 1. cleanups -------------------------------------------------------------------------------

    def restart_cleanups(self) -> None:
        now = self.clock()
        for cleanup in self.cleanups.query_due_cleanups(now, self.limits.cleanups):
            self._restart(cleanup, now)

    def _restart(self, cleanup: CleanupRecord, now: datetime) -> None:
        backoff = min(CLEANUP_BACKOFF * 2 ** max(0, cleanup.attempts - 1), CLEANUP_BACKOFF_CAP)
        try:
            started = self.cleanups.update_cleanup_restarted(cleanup, now + backoff)
        except ConditionFailed:
            return  # finished meanwhile, or another run counted this attempt
        log = {"cleanup_id": cleanup.cleanup_id, "attempts": started.attempts, "last_error": cleanup.last_error}
        if started.attempts > STUCK_ATTEMPTS:
            logger.error("cleanup keeps failing", extra=log)
            self.report.add("CleanupStuck")
        self.executions.start(cleanup.cleanup_id, f"{cleanup.cleanup_id}-{started.attempts}")
        logger.info("cleanup restarted", extra=log)
        self.report.add("CleanupRestarted")

    # -- 2. submitting uploads of unknown outcome --------------------------------------------------

    def resolve_submitting(self) -> None:
        before = self.clock() - SUBMITTING_GRACE
        for upload in self.contents.query_upload_queue("submitting", before, self.limits.uploads):
            if self._out_of_time():
                return
            try:
                self._resolve(upload)
            except MemosBackendUnknown:
                self._backend_unknown(upload.kb_id, upload.memos_backend, upload_id=upload.upload_id)
            except (MemosError, MemosApiKeyError) as err:
                logger.warning(
                    "MemOS unavailable; upload left for the next run",
                    extra={"upload_id": upload.upload_id, "error": type(err).__name__},
                )
                return

    def _resolve(self, upload: UploadRecord) -> None:
        fresh = self.contents.get_upload(upload.kb_id, upload.upload_id)
        if fresh is None or fresh.state != "submitting" or fresh.attempt_id is None:
            return
        # The ingest's own transitions (record, take_back, release, reject), fenced by the upload's
        # attempt; the config only matters for submitting, which the reconciler never does.
        ingestion = ingestion_of(fresh)(
            self.kbs, self.contents, self.objects, self.memos.engine(backend_of(fresh.memos_backend)), fresh,
            IngestConfig(
                inline_max_bytes=0,
                get_url_ttl_seconds=1,
                capacity=self.capacity,
                activity_retention_days=self.activity_retention_days,
            ),
            clock=self.clock,
            attempt_id=fresh.attempt_id,
        )
        kb = self.kbs.get_kb(fresh.kb_id)
        if kb is None:
            ingestion.reject("The knowledge base was deleted.")  # its cleanup removes it from MemOS
            self.report.add("UploadResolvedRejected")
            return
        if fresh.replaces is not None:
            self._resend(fresh, ingestion)
            return
        found = next((f for f in self._files_of(kb) if upload_id_in(f.name) == fresh.upload_id), None)
        if found is not None:
            outcome = ingestion.record(found.id)
            self.report.add("UploadResolvedSubmitted" if outcome.result == "submitted" else "UploadResolvedRejected")
            return
        if self.objects.head(fresh.object_key) is None:
            ingestion.reject(LOST)
            self.report.add("UploadResolvedRejected")
            return
        ingestion.release()
        self.requeue.requeue(fresh.object_key)
        logger.info("upload not in MemOS; handed to the ingest again", extra={"upload_id": fresh.upload_id})
        self.report.add("UploadRequeued")

    def _resend(self, upload: UploadRecord, ingestion: Ingestion) -> None:
        """A replace whose update has an unknown outcome: recorded when MemOS's file carries its upload id
        (the update was taken), else handed to the ingest again, unless its file is gone or its bytes are.

        A replace handed back is pending again, so it may then end without MemOS being asked (taken over
        by a new replace, refused for room, expired): only one MemOS certainly did not take may go back.
        """
        assert upload.replaces is not None
        assert upload.memos_file_id is not None
        if self.contents.get_file(upload.kb_id, upload.replaces) is None:
            ingestion.reject(FILE_GONE)  # the file's cleanup removes the MemOS file, new version and all
            self.report.add("UploadResolvedRejected")
            return
        seen = self.memos.engine(backend_of(upload.memos_backend)).get_knowledgebase_files([upload.memos_file_id])
        if any(upload_id_in(f.name) == upload.upload_id for f in seen):
            outcome = ingestion.record(upload.memos_file_id)
            self.report.add("UploadResolvedSubmitted" if outcome.result == "submitted" else "UploadResolvedRejected")
            return
        if self.objects.head(upload.object_key) is None:
            ingestion.reject(LOST)
            self.report.add("UploadResolvedRejected")
            return
        ingestion.release()
        self.requeue.requeue(upload.object_key)
        logger.info("replace of unknown outcome handed to the ingest again", extra={"upload_id": upload.upload_id})
        self.report.add("UploadRequeued")

    def _files_of(self, kb: KnowledgeBaseRecord) -> list[EngineFile]:
        if kb.kb_id not in self._memos_files:
            try:
                self._memos_files[kb.kb_id] = list(self._engine(kb).iter_knowledgebase_files(kb.memos_kb_id))
            except MemosNotFound:
                logger.error("a live KB is unknown to MemOS", extra={"kb_id": kb.kb_id})
                self._memos_files[kb.kb_id] = []
        return self._memos_files[kb.kb_id]

    def _backend_unknown(self, kb_id: str, backend: str | None, **extra: str) -> None:
        """A record names a backend the secret no longer lists: skipped (no other backend's key may serve
        it, nothing is released), reported, and the run goes on to the rest."""
        logger.error(
            "a KB's MemOS backend is not in the secret; put its entry back",
            extra={"kb_id": kb_id, "memos_backend": backend_of(backend), **extra},
        )
        self.report.add("KbBackendUnknown")

    def _placed(self, kb_id: str) -> str | None:
        try:
            backends = self.memos.backends()
        except MemosApiKeyError:
            return None  # the secret is unusable (logged by measure_backends): the intent is reported all the same
        return self.slots.slot_of(kb_id, [b.id for b in backends])

    def _engine(self, kb: KnowledgeBaseRecord) -> KnowledgeEngine:
        """The backend holding ``kb``: every scan and repair of a KB goes to its own MemOS project."""
        return self.memos.engine(backend_of(kb.memos_backend))

    # -- 3. pending uploads never completed ---------------------------------------------------------

    def expire_pending(self) -> None:
        now = self.clock()
        for upload in self.contents.query_upload_queue("pending", now, self.limits.uploads):
            until = int((now + EXPIRED_KEEP).timestamp())
            try:
                if upload.replaces is not None:
                    self.contents.update_replacement_expired(upload, expires_at=until)
                else:
                    self.contents.update_upload_expired(upload.kb_id, upload.upload_id, expires_at=until)
            except ConditionFailed:
                continue
            self.objects.delete(upload.object_key)
            self.objects.delete(verified_object_key(upload.kb_id, upload.upload_id))
            self.report.add("UploadExpired")

    # -- 4. creates of unknown outcome --------------------------------------------------------------

    def count_intents(self) -> None:
        for kb_id, memos_name in self.intents.query_stale_intents(
            self.clock() - INTENT_GRACE, self.limits.intents
        ):
            # The create's slot names the backend it was placed on (None: it died before placement): the
            # operator looks in that project's console. The slot stays taken: the KB may exist there.
            logger.error(
                "KB create with unknown MemOS outcome; a MemOS KB may be orphaned",
                extra={"kb_id": kb_id, "memos_name": memos_name, "memos_backend": self._placed(kb_id)},
            )
            self.intents.delete_create_intent(kb_id)
            self.report.add("KbCreateOutcomeUnknown")

    # -- 5. MemOS residue ---------------------------------------------------------------------------

    def remove_residue(self) -> None:
        cursor = self.cleanups.get_cursor(RESIDUE_CURSOR)
        kbs = self.cleanups.query_kbs_after(cursor, self.limits.kbs)
        for kb in kbs:
            if self._out_of_time():
                self.cleanups.put_cursor(RESIDUE_CURSOR, cursor)
                return
            try:
                self._remove_residue_of(kb)
            except MemosBackendUnknown:
                self._backend_unknown(kb.kb_id, kb.memos_backend)
            except (MemosError, MemosApiKeyError) as err:
                logger.warning("residue scan stopped", extra={"kb_id": kb.kb_id, "error": type(err).__name__})
                self.cleanups.put_cursor(RESIDUE_CURSOR, cursor)
                return
            cursor = kb.kb_id
        # A short page is the end of the KBs: the next run starts from the beginning again.
        self.cleanups.put_cursor(RESIDUE_CURSOR, cursor if len(kbs) == self.limits.kbs else None)

    # -- 6. upload objects nothing needs -----------------------------------------------------------

    def sweep_objects(self) -> None:
        swept = sweep_upload_objects(self.contents, self.objects, self.cleanups, limit=self.limits.objects)
        if swept.deleted:
            self.report.add("UploadObjectsRemoved", swept.deleted)

    def _remove_residue_of(self, kb: KnowledgeBaseRecord) -> None:
        printed = self.prints.query_print_versions(kb.kb_id) if self.prints else []  # before the files
        _, files, uploads = self.contents.query_kb_items(kb.kb_id)
        referenced = {f.memos_file_id for f in files}
        in_flight = {u.upload_id for u in uploads if u.state in ("pending", "submitting")}
        self._unlock(files, in_flight)
        if self.prints and printed:
            live = self._files_of(kb)
            self.report.add("PrintsRemoved", sweep_prints(self.prints, self.contents, kb.kb_id, printed, files, live))
        young = self.clock() - RESIDUE_GRACE
        residue = [
            f.id
            for f in self._files_of(kb)
            if f.id not in referenced
            and upload_id_in(f.name) not in in_flight
            and (f.created_at is None or f.created_at < young)
        ]
        if not residue:
            return
        self.report.add("ResidueFound", len(residue))
        for start in range(0, len(residue), 20):
            self._engine(kb).delete_knowledgebase_files(residue[start : start + 20])
        logger.warning("MemOS residue removed", extra={"kb_id": kb.kb_id, "count": len(residue)})
        self.report.add("ResidueRemoved", len(residue))

    def _unlock(self, files: list[FileRecord], in_flight: set[str]) -> None:
        """Unmark files whose replace is no longer in flight (an end that died before unmarking them)."""
        for file in files:
            stale = file.replacing is not None and file.replacing not in in_flight
            if stale and self.contents.clear_replacing(file.kb_id, file.file_id, file.replacing or ""):
                logger.warning("file unmarked: its replace had ended", extra={"file_id": file.file_id})
                self.report.add("ReplaceUnlocked")
