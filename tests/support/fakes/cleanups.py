"""Deletes in memory: ``CleanupStore`` (the cleanup outbox) and ``CreateIntents`` (the reconciler's
bookkeeping of KB creates) on the shared ``FakeTable``; ``CleanupExecutions`` (the cleanup state
machine, one execution per name) and ``UploadRequeue`` (the upload queue)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any, Literal

from memmy_kb.domain.storage import ConditionFailed, ItemMissing, RequestSeen
from memmy_kb.records import (
    ActivityRecord,
    CleanupPart,
    CleanupRecord,
    CountCap,
    FileRecord,
    FolderRecord,
    KnowledgeBaseRecord,
    RequestRecord,
)
from tests.support.fakes.table import FakeIntent, FakeTable, ItemKey, _activity_sk, _Transaction


def _cleanup_due(cleanup: CleanupRecord) -> str:
    """GSI2's sort key of a cleanup: when it may next be (re)started."""
    return cleanup.next_attempt_at.isoformat()


class FakeCleanupStore:
    """``CleanupStore`` as ``memmy_kb.adapters.dynamodb.cleanups.DynamoCleanupStore``."""

    def __init__(self, table: FakeTable | None = None) -> None:
        self.table = table if table is not None else FakeTable()

    # -- a delete's visible part, with its outbox item ------------------------------------------------

    def delete_kb_with_outbox(
        self, kb: KnowledgeBaseRecord, reader_ids: Iterable[str], cleanup: CleanupRecord
    ) -> None:
        t = self.table
        meta = t.kbs.get(kb.kb_id)
        unchanged = (
            meta is not None
            and meta.owner_id == kb.owner_id
            and meta.member_version == kb.member_version
            and meta.teams == kb.teams
        )
        txn = _Transaction()
        txn.add(("KB", kb.kb_id), unchanged, self._drop(t.kbs, kb.kb_id))
        for user_id in [kb.owner_id, *reader_ids]:
            txn.add(("USER", user_id, kb.kb_id), True, self._drop(t.grants, (user_id, kb.kb_id)))
        for team_id in sorted(kb.teams):
            txn.add(("TEAM", team_id), team_id in t.teams, self._unlist(kb.kb_id, team_id))
        txn.add(("CLEANUP", cleanup.cleanup_id), cleanup.cleanup_id not in t.cleanups, self._put(cleanup))
        txn.add(("LIMIT", f"kbs#{kb.owner_id}"), True, self._uncount_owned(kb.owner_id))
        if txn.run():
            raise ConditionFailed("kb", kb.kb_id)

    def _unlist(self, kb_id: str, team_id: str) -> Callable[[], None]:
        def unlist() -> None:
            team = self.table.teams[team_id]
            kbs = {k: v for k, v in team.kbs.items() if k != kb_id}
            self.table.teams[team_id] = team.model_copy(
                update={"kbs": kbs, "kb_count": team.kb_count - 1, "version": team.version + 1}
            )

        return unlist

    def delete_file_with_outbox(
        self, file: FileRecord, owner_id: str, cleanup: CleanupRecord, *, activity: ActivityRecord
    ) -> None:
        t = self.table
        key = (file.kb_id, file.file_id)
        current = t.files.get(key)
        there = current is not None and current.memos_file_id == file.memos_file_id and current.version == file.version
        self._delete_visible(
            ("FILE", *key), there, self._drop(t.files, key), "file", file.file_id, file.kb_id, owner_id,
            cleanup, activity, uncount=t.counted(file.kb_id, -1, -file.size_bytes),
        )

    def delete_folder_with_outbox(
        self, folder: FolderRecord, owner_id: str, cleanup: CleanupRecord, *, activity: ActivityRecord
    ) -> None:
        key = (folder.kb_id, folder.folder_id)
        self._delete_visible(
            ("FOLDER", *key), key in self.table.folders, self._drop(self.table.folders, key), "folder",
            folder.folder_id, folder.kb_id, owner_id, cleanup, activity,
        )

    def _delete_visible(
        self,
        key: ItemKey,
        there: bool,
        delete: Callable[[], None],
        item: Literal["file", "folder"],
        item_id: str,
        kb_id: str,
        owner_id: str,
        cleanup: CleanupRecord,
        activity: ActivityRecord,
        uncount: Callable[[], None] | None = None,
    ) -> None:
        t = self.table
        txn = _Transaction()
        txn.add(key, there, delete)
        txn.add(("KB", kb_id), t.owns(kb_id, owner_id), uncount)
        txn.add(("CLEANUP", cleanup.cleanup_id), cleanup.cleanup_id not in t.cleanups, self._put(cleanup))
        txn.add(("ACTIVITY", activity.kb_id, _activity_sk(activity)), True, t.log(activity))
        failed = txn.run()
        if failed:
            raise ItemMissing("kb" if 1 in failed else item, item_id)

    # -- sweeping a deleted folder's subtree ----------------------------------------------------------

    def delete_files_with_part(self, part: CleanupPart, files: list[FileRecord]) -> None:
        """As the adapter: files deleted meanwhile are left out and the transaction redone, files at another
        version than read are redone as they are now; a gone META leaves the files uncounted."""
        t = self.table
        kb_id = files[0].kb_id if files else ""
        counted = True
        part_key = (part.cleanup_id, part.part_id)
        for _ in range(len(files) + 2):
            txn = _Transaction()
            for f in files:
                key = (f.kb_id, f.file_id)
                txn.add(("FILE", *key), key in t.files and t.files[key].version == f.version, self._drop(t.files, key))
            txn.add(("CLEANUP", *part_key), part_key not in t.cleanup_parts, self._put(part))
            if files and counted:
                txn.add(("KB", kb_id), kb_id in t.kbs, t.counted(kb_id, -len(files), -sum(f.size_bytes for f in files)))
            failed = txn.run()
            if not failed:
                return
            if len(files) + 1 in failed:
                counted = False
            now = {i: t.files[(f.kb_id, f.file_id)] for i, f in enumerate(files) if i in failed and (f.kb_id, f.file_id) in t.files}
            files = [now.get(i, f) for i, f in enumerate(files) if i not in failed or i in now]
        raise ConditionFailed("file", part.part_id)

    def delete_folders(self, folders: list[FolderRecord]) -> None:
        for folder in folders:
            self.table.folders.pop((folder.kb_id, folder.folder_id), None)

    # -- the outbox -----------------------------------------------------------------------------------

    def get_cleanup(self, cleanup_id: str) -> tuple[CleanupRecord | None, list[CleanupPart]]:
        head = self.table.cleanups.get(cleanup_id)
        parts = [p.model_copy(deep=True) for (cid, _), p in sorted(self.table.cleanup_parts.items()) if cid == cleanup_id]
        return (head.model_copy(deep=True) if head else None), parts

    def delete_cleanup_parts(self, cleanup_id: str, part_ids: list[str]) -> None:
        for part_id in part_ids:
            self.table.cleanup_parts.pop((cleanup_id, part_id), None)

    def delete_kb_items(self, kb_id: str, limit: int) -> bool:
        """The KB's partition in sort-key order (``FILE#`` < ``FOLDER#`` < ``META`` < ``UPLOAD#``), at most
        ``limit`` items per call."""
        t = self.table
        families: list[tuple[str, dict[Any, Any], list[Any]]] = [
            ("FILE#", t.files, [k for k in t.files if k[0] == kb_id]),
            ("FOLDER#", t.folders, [k for k in t.folders if k[0] == kb_id]),
            ("META", t.kbs, [kb_id] if kb_id in t.kbs else []),
            ("UPLOAD#", t.uploads, [k for k in t.uploads if k[0] == kb_id]),
        ]
        items = [(prefix + (k[1] if isinstance(k, tuple) else ""), family, k) for prefix, family, keys in families for k in keys]
        items.sort(key=lambda item: item[0])
        for _, family, key in items[:limit]:
            del family[key]
        return len(items) <= limit

    def query_due_cleanups(self, now: datetime, limit: int) -> list[CleanupRecord]:
        due: list[CleanupRecord] = []
        for state in ("failed", "pending"):
            queue = sorted(
                (c for c in self.table.cleanups.values() if c.state == state and _cleanup_due(c) <= now.isoformat()),
                key=lambda c: (_cleanup_due(c), c.cleanup_id),
            )
            due.extend(c.model_copy(deep=True) for c in queue[: max(0, limit - len(due))])
        return due

    def update_cleanup_restarted(self, cleanup: CleanupRecord, next_attempt_at: datetime) -> CleanupRecord:
        current = self.table.cleanups.get(cleanup.cleanup_id)
        if current is None or current.attempts != cleanup.attempts:
            raise ConditionFailed("cleanup", cleanup.cleanup_id)
        restarted = current.model_copy(
            update={"attempts": cleanup.attempts + 1, "state": "pending", "next_attempt_at": next_attempt_at}
        )
        self.table.cleanups[cleanup.cleanup_id] = restarted
        return restarted.model_copy(deep=True)

    # -- the residue scan -----------------------------------------------------------------------------

    def query_kbs_after(self, cursor: str | None, limit: int) -> list[KnowledgeBaseRecord]:
        ids = sorted(k for k in self.table.kbs if not cursor or k > cursor)
        return [self.table.kbs[k].model_copy(deep=True) for k in ids[: max(0, limit)]]

    def get_cursor(self, name: str) -> str | None:
        return self.table.cursors.get(name) or None

    def put_cursor(self, name: str, position: str | None) -> None:
        self.table.cursors[name] = position

    # -- plumbing -------------------------------------------------------------------------------------

    def mark_failed(self, cleanup_id: str, error: str) -> None:
        """What the state machine's MarkFailed task does to the outbox item (not a port method)."""
        current = self.table.cleanups[cleanup_id]
        self.table.cleanups[cleanup_id] = current.model_copy(update={"state": "failed", "last_error": error})

    def _put(self, record: CleanupRecord | CleanupPart) -> Callable[[], None]:
        def put() -> None:
            self.table.seed(record)

        return put

    @staticmethod
    def _drop(family: dict[Any, Any], key: Any) -> Callable[[], None]:
        def drop() -> None:
            family.pop(key, None)

        return drop

    def _uncount_owned(self, owner_id: str) -> Callable[[], None]:
        def uncount() -> None:
            counts = self.table.counters.setdefault(f"kbs#{owner_id}", {})
            counts["n"] = counts.get("n", 1) - 1

        return uncount


class FakeCreateIntents:
    """``CreateIntents`` as ``memmy_kb.adapters.dynamodb.intents.DynamoCreateIntents``, Idempotency-Key
    claims included (``FakeKnowledgeBaseStore.put_kb_with_owner_grant`` completes them)."""

    def __init__(self, table: FakeTable | None = None) -> None:
        self.table = table if table is not None else FakeTable()

    def put_create_intent(
        self,
        kb_id: str,
        memos_name: str,
        started_at: datetime,
        expires_at: int,
        *,
        owner_id: str,
        max_owned: int,
        request: RequestRecord | None,
        now: int,
    ) -> None:
        t = self.table
        intent = FakeIntent(memos_name, started_at, expires_at)
        txn = _Transaction()

        def note() -> None:
            t.intents[kb_id] = intent

        txn.add(("INTENT", kb_id), kb_id not in t.intents, note)
        held: RequestRecord | None = None
        if request is not None:
            key = (request.operation, request.key_hash)
            held = t.requests.get(key)
            free = (
                held is None
                or held.expires_at < now
                or (held.status == "in_progress" and held.in_progress_until < now)
            )

            def claim() -> None:
                t.requests[key] = request.model_copy(deep=True)

            txn.add(("IDEMPOTENCY", *key), free, claim)
        cap = CountCap(name=f"kbs#{owner_id}", limit=max_owned, expires_at=0)
        txn.add(("LIMIT", cap.name), t.under_cap(cap))
        failed = txn.run()
        if request is not None and 1 in failed:
            assert held is not None
            raise RequestSeen(held.model_copy(deep=True))
        if failed:
            raise ConditionFailed("kb_count", str(max_owned))

    def delete_create_intent(self, kb_id: str) -> None:
        self.table.intents.pop(kb_id, None)

    def abandon_create(self, kb_id: str, *, request: RequestRecord | None, keep_intent: bool) -> None:
        t = self.table
        if request is None:
            if not keep_intent:
                self.delete_create_intent(kb_id)
            return
        key = (request.operation, request.key_hash)
        held = t.requests.get(key)
        txn = _Transaction()
        if not keep_intent:
            txn.add(("INTENT", kb_id), True, t.drop_intent(kb_id))

        def release() -> None:
            del t.requests[key]

        txn.add(("IDEMPOTENCY", *key), held is not None and held.attempt == request.attempt, release)
        if txn.run() and not keep_intent:
            self.delete_create_intent(kb_id)

    def query_stale_intents(self, before: datetime, limit: int) -> list[tuple[str, str]]:
        stale = sorted(
            ((i.started_at.isoformat(), kb_id, i.memos_name) for kb_id, i in self.table.intents.items()),
        )
        return [(kb_id, name) for started, kb_id, name in stale if started < before.isoformat()][: max(0, limit)]




class FakeCleanupExecutions:
    """``CleanupExecutions`` as ``memmy_kb.adapters.stepfunctions.CleanupStateMachine``: one execution per
    name, a repeated start of a name counts as started. ``fail_next(error)`` makes the next start raise."""

    def __init__(self) -> None:
        self.executions: dict[str, str] = {}  # execution name -> cleanup id, in start order
        self._failures: list[Exception] = []

    def fail_next(self, error: Exception) -> None:
        self._failures.append(error)

    def start(self, cleanup_id: str, execution_name: str) -> None:
        if self._failures:
            raise self._failures.pop(0)
        self.executions.setdefault(execution_name, cleanup_id)


class FakeUploadRequeue:
    """``UploadRequeue`` as ``memmy_kb.adapters.sqs.UploadQueue``: the object keys handed to the ingest again."""

    def __init__(self) -> None:
        self.requeued: list[str] = []

    def requeue(self, object_key: str) -> None:
        self.requeued.append(object_key)
