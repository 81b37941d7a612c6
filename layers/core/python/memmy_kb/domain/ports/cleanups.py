"""The ports of a delete's cleanup: its outbox and the reconciler's queue and cursor, and the state
machine that works through it."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    # Only signatures name these: a function taking a port imports no model for it.
    from memmy_kb.records import (
        ActivityRecord,
        CleanupPart,
        CleanupRecord,
        FileRecord,
        FolderRecord,
        KnowledgeBaseRecord,
    )


class CleanupStore(Protocol):
    """A delete's transactions with their outbox item, the outbox the cleanup works through, and the
    reconciler's queue of due cleanups and residue cursor (``memmy_kb.adapters.dynamodb.cleanups``)."""

    def delete_kb_with_outbox(
        self, kb: KnowledgeBaseRecord, reader_ids: Iterable[str], cleanup: CleanupRecord
    ) -> None: ...

    def delete_file_with_outbox(
        self,
        file: FileRecord,
        owner_id: str,
        cleanup: CleanupRecord,
        *,
        activity: ActivityRecord,
    ) -> None: ...

    def delete_folder_with_outbox(
        self,
        folder: FolderRecord,
        owner_id: str,
        cleanup: CleanupRecord,
        *,
        activity: ActivityRecord,
    ) -> None: ...

    def delete_files_with_part(self, part: CleanupPart, files: list[FileRecord]) -> None: ...

    def delete_folders(self, folders: list[FolderRecord]) -> None: ...

    def get_cleanup(self, cleanup_id: str) -> tuple[CleanupRecord | None, list[CleanupPart]]: ...

    def delete_cleanup_parts(self, cleanup_id: str, part_ids: list[str]) -> None: ...

    def delete_kb_items(self, kb_id: str, limit: int) -> bool: ...

    def query_due_cleanups(self, now: datetime, limit: int) -> list[CleanupRecord]: ...

    def update_cleanup_restarted(
        self, cleanup: CleanupRecord, next_attempt_at: datetime
    ) -> CleanupRecord: ...

    def query_kbs_after(self, cursor: str | None, limit: int) -> list[KnowledgeBaseRecord]: ...

    def get_cursor(self, name: str) -> str | None: ...

    def put_cursor(self, name: str, position: str | None) -> None: ...


class CleanupExecutions(Protocol):
    """The cleanup state machine (implemented by ``memmy_kb.adapters.stepfunctions.CleanupStateMachine``)."""

    def start(self, cleanup_id: str, execution_name: str) -> None: ...
