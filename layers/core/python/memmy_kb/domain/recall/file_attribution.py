"""Which file an excerpt comes from, from its text (docs/architecture.md, "Recall").

MemOS hits name no KB, and no file in any shape MemOS documents. A hit that does give MemOS file ids
(``SearchHit.memos_file_ids``) is named from them first: the files of the KBs *its search covered* that
have those ids (kept on their fingerprint items). Otherwise recall matches the hit's text against the
fingerprints of the file versions of those KBs (``memmy_kb.domain.fingerprints.prints.attribute``): one file
when the match is clear, the few candidates when several files hold the text, none when nothing holds
enough of it. A file of a KB that was not searched is never named, whether by an id or by the text.

The KBs' indexes come from the environment's ``PrintsCache``; the stale or missing ones are loaded on
threads of their own while the searches run (``PrintsLoading``), within the recall budget: a KB whose
index is not ready when the budget ends gets KB-level attribution only this time (its load finishes in
the background and serves the next recall). Once the hits are attributed, one ``BatchGetItem`` of the
named files' ``FILE#`` items gives their current names and folders: a file deleted meanwhile is not
named, nor one whose folder is no longer live (a folder's deletion sweeping its subtree).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import TYPE_CHECKING, Final

from memmy_kb.domain.fingerprints.prints import attribute
from memmy_kb.domain.recall.context_block import SourceFile
from memmy_kb.domain.recall.prints_cache import (
    FileKey,
    KbPrints,
    PrintsCache,
    RecallFiles,
    load_prints,
    stamp_of,
)
from memmy_kb.observability import logger

if TYPE_CHECKING:
    from memmy_kb.records import FileRecord, FolderRecord, KnowledgeBaseRecord

_Paths = dict[tuple[str, str], tuple[str, ...] | None]
# Loads of KB indexes at once for one recall (each is a Query of fingerprints and one of folders).
LOAD_WORKERS: Final = 4


class PrintsLoading:
    """The indexes of one recall's KBs: fresh ones from the cache, the others loading on threads."""

    def __init__(self, files: RecallFiles, cache: PrintsCache) -> None:
        self.files = files
        self.cache = cache
        self.ready: dict[str, KbPrints] = {}
        self.loads: dict[str, Future[KbPrints]] = {}
        self._executor: ThreadPoolExecutor | None = None

    def start(self, kb_ids: Iterable[str], kbs: Mapping[str, KnowledgeBaseRecord]) -> None:
        """Take each KB's index from the cache, or start loading it (a KB without META is gone: none)."""
        for kb_id in dict.fromkeys(kb_ids):
            kb = kbs.get(kb_id)
            if kb is None:
                continue
            entry = self.cache.fresh(kb_id, stamp_of(kb))
            if entry is not None:
                self.ready[kb_id] = entry
                continue
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=LOAD_WORKERS, thread_name_prefix="recall-prints")
            self.loads[kb_id] = self._executor.submit(self._load, kb_id, stamp_of(kb))

    def _load(self, kb_id: str, stamp: tuple[int, int]) -> KbPrints:
        entry = load_prints(self.files, kb_id, stamp, self.cache.clock)
        self.cache.put(entry)
        return entry

    def finish(self, deadline: float) -> dict[str, KbPrints]:
        """The indexes ready by ``deadline`` (monotonic). A load still running ends on its own and fills
        the cache; one that failed is logged and its KB gets KB-level attribution."""
        if self._executor is not None:
            try:
                wait(self.loads.values(), timeout=max(deadline - time.monotonic(), 0))
            finally:
                self._executor.shutdown(wait=False)
        late = failed = 0
        for kb_id, future in self.loads.items():
            if not future.done():
                late += 1
            elif future.exception() is not None:
                failed += 1
                logger.warning(
                    "recall: a KB's fingerprints could not be read; its excerpts name no file",
                    extra={"error_type": type(future.exception()).__name__},
                )
            else:
                self.ready[kb_id] = future.result()
        if self.loads:
            logger.debug("recall: fingerprints loaded", extra={"loaded": len(self.loads) - late - failed, "late": late})
        return self.ready


def attribute_files(
    text: str, kb_ids: Iterable[str], ready: Mapping[str, KbPrints], memos_file_ids: Sequence[str] = ()
) -> tuple[FileKey, ...]:
    """The file versions a hit comes from, among those of ``kb_ids`` only: one, the candidates, or none.

    A hit that names MemOS files (``memos_file_ids``) names those of them that are files of ``kb_ids``,
    each at the version its ``text`` matches (else its latest with fingerprints); when none is, or it
    names none, its ``text`` decides: versions of one file count as that file once (its best-matching)."""
    searched = [ready[kb_id] for kb_id in dict.fromkeys(kb_ids) if kb_id in ready]
    if not searched:
        return ()
    named = _named_by_id(memos_file_ids, searched)
    if not named:
        return _matched(text, searched)
    if all(len(versions) == 1 for versions in named):
        return tuple(versions[0] for versions in named)
    matched = _matched(text, searched)
    return tuple(next((key for key in matched if key[:2] == versions[0][:2]), versions[-1]) for versions in named)


def _named_by_id(memos_file_ids: Sequence[str], searched: Sequence[KbPrints]) -> list[tuple[FileKey, ...]]:
    """The versions (oldest first) of each file of ``searched`` whose MemOS id is one of ``memos_file_ids``."""
    named: dict[tuple[str, str], tuple[FileKey, ...]] = {}
    for memos_id in memos_file_ids:
        for entry in searched:
            versions = entry.memos_files.get(memos_id, ())
            for key in versions:
                named.setdefault(key[:2], tuple(v for v in versions if v[:2] == key[:2]))
    return list(named.values())


def _matched(text: str, searched: Sequence[KbPrints]) -> tuple[FileKey, ...]:
    """The file versions ``text`` matches, each file once (its best-matching version)."""
    seen: set[tuple[str, str]] = set()
    files: list[FileKey] = []
    for key in attribute(text, [entry.index for entry in searched]).files:
        if (key[0], key[1]) not in seen:
            seen.add((key[0], key[1]))
            files.append(key)
    return tuple(files)


def folder_path(folders: Mapping[str, FolderRecord], folder_id: str | None) -> tuple[str, ...] | None:
    """The folder names from the KB's root down to ``folder_id`` (() at the root), or None when the
    folder is not live (missing, or under a missing one)."""
    names: list[str] = []
    seen: set[str] = set()
    current = folder_id
    while current is not None:
        folder = folders.get(current)
        if folder is None or current in seen:
            return None
        seen.add(current)
        names.append(folder.name)
        current = folder.parent_id
    return tuple(reversed(names))


def name_files(
    files: RecallFiles, ready: Mapping[str, KbPrints], attributed: Sequence[tuple[FileKey, ...]]
) -> list[tuple[SourceFile, ...]]:
    """Each hit's attributed file versions as the files they are now (name, folder path), from one
    ``BatchGetItem``; a file gone, or in a folder that is not live, is left out."""
    keys = list(dict.fromkeys((kb_id, file_id) for found in attributed for kb_id, file_id, _ in found))
    records = files.batch_get_files(keys) if keys else {}
    folders = {kb_id: entry.folders for kb_id, entry in ready.items()}
    paths: _Paths = {}
    refreshed: set[str] = set()
    for key, record in records.items():
        path = folder_path(folders.get(record.kb_id, {}), record.folder_id)
        if path is None and record.kb_id not in refreshed:
            # Moved into a folder made after the KB's index was loaded: its folders read again, once.
            refreshed.add(record.kb_id)
            folders[record.kb_id] = {f.folder_id: f for f in files.query_folders(record.kb_id)}
            path = folder_path(folders[record.kb_id], record.folder_id)
        paths[key] = path
    return [tuple(_named(key, records, paths) for key in found if _live(key, records, paths)) for found in attributed]


def _live(key: FileKey, records: Mapping[tuple[str, str], FileRecord], paths: _Paths) -> bool:
    return (key[0], key[1]) in records and paths.get((key[0], key[1])) is not None


def _named(key: FileKey, records: Mapping[tuple[str, str], FileRecord], paths: _Paths) -> SourceFile:
    record, path = records[(key[0], key[1])], paths[(key[0], key[1])]
    return SourceFile(record.kb_id, record.file_id, record.name, path_text(path or ()), key[2])


def path_text(names: Sequence[str]) -> str:
    """Folder names joined by ``/``, a ``/`` within a name shown as ``∕`` (U+2215) so the path stays
    unambiguous."""
    return "/".join(name.replace("/", "\u2215") for name in names)
