"""The fingerprints of the KBs recall searches, kept per Lambda environment (docs/architecture.md, "Recall").

Recall names an excerpt's file from its text (``memmy_kb.domain.recall.file_attribution``), against a
``FileIndex`` of each searched KB's file versions, built from one Query of the KB's ``PRINT#`` items and
one of its ``FOLDER#`` items (for the files' folder paths); the same items give the versions by their
file's MemOS id, for a hit that names its MemOS file. Built once, an index serves every recall of
this environment while it is fresh: while the KB's META still counts the same files and bytes
(``file_count``, ``bytes_used``: an upload, a replace or a delete moves one of them) and for at most
``PRINTS_TTL_SECONDS`` (a change that moves neither, or a folder renamed, shows within that time).

Memory is bounded: at most ``MAX_CACHED_HASHES`` hashes (about 8 bytes each in an index) over all KBs;
past that the least recently used KBs are forgotten. A KB whose index alone is larger is not kept.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, Protocol

from memmy_kb.domain.fingerprints.prints import FileIndex

if TYPE_CHECKING:
    from memmy_kb.domain.fingerprints.store import FilePrints
    from memmy_kb.records import FileRecord, FolderRecord, KnowledgeBaseRecord

PRINTS_TTL_SECONDS: Final = 300.0
# 4 million hashes: about 32 MB of indexes, a thousand files of 4,096 hashes each (their maximum).
MAX_CACHED_HASHES: Final = 4_000_000

FileKey = tuple[str, str, int]  # (kb_id, file_id, version): what an index names


class RecallFiles(Protocol):
    """What file attribution reads: a KB's fingerprints and folders, and the named files' items."""

    def query_prints(self, kb_id: str) -> list[FilePrints]:
        """Every file version's fingerprints in the KB."""
        ...

    def query_folders(self, kb_id: str) -> list[FolderRecord]: ...

    def batch_get_files(self, keys: Iterable[tuple[str, str]]) -> dict[tuple[str, str], FileRecord]:
        """The FILE# items of ``(kb_id, file_id)`` keys, strongly consistent; a missing one is absent."""
        ...


def stamp_of(kb: KnowledgeBaseRecord) -> tuple[int, int]:
    """What META says of the KB's files: an upload, a replace or a delete changes it."""
    return kb.file_count, kb.bytes_used


@dataclass(frozen=True)
class KbPrints:
    """One KB's index of file versions and its folders, as loaded at ``loaded_at`` (monotonic);
    ``memos_files``: the file versions by their file's MemOS id (of the items that keep it)."""

    kb_id: str
    index: FileIndex[FileKey]
    folders: Mapping[str, FolderRecord]
    stamp: tuple[int, int]
    loaded_at: float
    hashes: int
    memos_files: Mapping[str, tuple[FileKey, ...]] = field(default_factory=dict)


def load_prints(
    files: RecallFiles, kb_id: str, stamp: tuple[int, int], clock: Callable[[], float] = time.monotonic
) -> KbPrints:
    """The KB's index, built from one Query of its fingerprints and one of its folders."""
    records = files.query_prints(kb_id)
    folders = {f.folder_id: f for f in files.query_folders(kb_id)}
    index = FileIndex({(kb_id, r.file_id, r.version): r.prints for r in records})
    hashes = sum(len(r.prints.hashes) for r in records)
    memos_files: dict[str, list[FileKey]] = {}
    for r in records:
        if r.memos_file_id is not None:
            memos_files.setdefault(r.memos_file_id, []).append((kb_id, r.file_id, r.version))
    by_memos_id = {memos_id: tuple(sorted(keys)) for memos_id, keys in memos_files.items()}
    return KbPrints(kb_id, index, folders, stamp, clock(), hashes, by_memos_id)


class PrintsCache:
    """The KBs' indexes of this environment, least recently used forgotten first (thread-safe: loads
    finish on threads of their own)."""

    def __init__(
        self,
        *,
        max_hashes: int = MAX_CACHED_HASHES,
        ttl_seconds: float = PRINTS_TTL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_hashes = max_hashes
        self.ttl_seconds = ttl_seconds
        self.clock = clock
        self._entries: OrderedDict[str, KbPrints] = OrderedDict()
        self._hashes = 0
        self._lock = threading.Lock()

    def fresh(self, kb_id: str, stamp: tuple[int, int]) -> KbPrints | None:
        """The KB's index when it was loaded at this ``stamp`` less than the TTL ago, else None."""
        with self._lock:
            entry = self._entries.get(kb_id)
            if entry is None or entry.stamp != stamp or self.clock() - entry.loaded_at >= self.ttl_seconds:
                return None
            self._entries.move_to_end(kb_id)
            return entry

    def put(self, entry: KbPrints) -> None:
        """Keep ``entry`` (replacing the KB's older one), forgetting the least recently used past the bound."""
        with self._lock:
            old = self._entries.pop(entry.kb_id, None)
            if old is not None:
                self._hashes -= old.hashes
            if entry.hashes > self.max_hashes:
                return
            self._entries[entry.kb_id] = entry
            self._hashes += entry.hashes
            while self._hashes > self.max_hashes:
                _, dropped = self._entries.popitem(last=False)
                self._hashes -= dropped.hashes

    @property
    def hashes(self) -> int:
        return self._hashes

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._hashes = 0
