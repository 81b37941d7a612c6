"""``RecallFiles`` in memory: a KB's fingerprints and folders, and its files' items, as recall reads them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from datetime import UTC, datetime

from memmy_kb.domain.fingerprints.prints import fingerprint
from memmy_kb.domain.fingerprints.store import FilePrints
from memmy_kb.records import FileRecord, FolderRecord

_NOW = datetime(2026, 1, 1, tzinfo=UTC)


class FakeRecallFiles:
    """Files added with their text (``add_file``: FILE# and PRINT# at once, as the ingest leaves them);
    ``prints_queries`` counts each KB's fingerprint reads; ``before_prints(kb_id)`` runs before one answers
    (a slow read)."""

    def __init__(self) -> None:
        self.prints: dict[str, dict[tuple[str, int], FilePrints]] = {}
        self.files: dict[tuple[str, str], FileRecord] = {}
        self.folders: dict[str, dict[str, FolderRecord]] = {}
        self.prints_queries: Counter[str] = Counter()
        self.folder_queries: Counter[str] = Counter()
        self.batch_gets: list[list[tuple[str, str]]] = []
        self.before_prints: Callable[[str], None] | None = None

    def add_folder(self, kb_id: str, folder_id: str, name: str, parent_id: str | None = None) -> None:
        self.folders.setdefault(kb_id, {})[folder_id] = FolderRecord(
            kb_id=kb_id, folder_id=folder_id, name=name, parent_id=parent_id, created_at=_NOW
        )

    def add_file(
        self,
        kb_id: str,
        file_id: str,
        name: str,
        text: str,
        *,
        version: int = 1,
        folder_id: str | None = None,
        prints_memos_id: bool = True,
    ) -> FileRecord:
        """The file's item at ``version`` (MemOS id ``m-<file_id>``) and that version's fingerprints (older
        versions' stay), with the MemOS id unless ``prints_memos_id`` is False (an item written before it was kept)."""
        record = FileRecord(
            kb_id=kb_id, file_id=file_id, memos_file_id=f"m-{file_id}", name=name, folder_id=folder_id,
            size_bytes=len(text.encode()), upload_id=f"up-{file_id}-{version}", uploaded_at=_NOW, version=version,
        )  # fmt: skip
        self.files[(kb_id, file_id)] = record
        self.prints.setdefault(kb_id, {})[(file_id, version)] = FilePrints(
            kb_id, file_id, version, fingerprint(text.splitlines(keepends=True)),
            record.memos_file_id if prints_memos_id else None,
        )
        return record

    def delete_file(self, kb_id: str, file_id: str) -> None:
        """The file's item gone (its fingerprints not yet: the cleanup takes them later)."""
        del self.files[(kb_id, file_id)]

    # -- the port ------------------------------------------------------------------------------------

    def query_prints(self, kb_id: str) -> list[FilePrints]:
        self.prints_queries[kb_id] += 1
        if self.before_prints is not None:
            self.before_prints(kb_id)
        return list(self.prints.get(kb_id, {}).values())

    def query_folders(self, kb_id: str) -> list[FolderRecord]:
        self.folder_queries[kb_id] += 1
        return list(self.folders.get(kb_id, {}).values())

    def batch_get_files(self, keys: Iterable[tuple[str, str]]) -> dict[tuple[str, str], FileRecord]:
        asked = list(keys)
        self.batch_gets.append(asked)
        return {key: self.files[key] for key in asked if key in self.files}
