"""The reconciler's sweep of a KB's fingerprints (``PRINT#`` items): what no current file version needs goes.

A version's fingerprints are needed while its text may answer a search. So the sweep deletes those

* of a file that is gone (its cleanup died before deleting them, or it was deleted before cleanups
  named the files whose fingerprints go);
* of a version past the file's (written by a run whose record was then undone: never expected);
* of a version before the file's, once MemOS has switched to the file's version: MemOS's file is
  ``available`` (processed) and carries the name of the file's current upload (docs/memos.md, "Updating a file"; a
  listing older than the replace carries the previous upload's name, and keeps them).

The fingerprints must be listed before the files: the ingest writes a version's fingerprints only after
its FILE item says that version, so whatever the list holds, a later read of the files accounts for. A
version the files read does not account for is read again, alone and consistently, before it goes.
"""

from __future__ import annotations

from collections.abc import Iterable

from memmy_kb.domain.engine import EngineFile, FileStatus
from memmy_kb.domain.fingerprints.file_prints import drop_prints
from memmy_kb.domain.fingerprints.store import FingerprintStore
from memmy_kb.domain.knowledge_bases.naming import upload_id_in
from memmy_kb.domain.ports.contents import ContentStore
from memmy_kb.records import FileRecord


def unneeded_versions(file: FileRecord | None, versions: Iterable[int], live: dict[str, EngineFile]) -> list[int]:
    """Which of a file's fingerprinted ``versions`` no search can need (``live``: MemOS's files by id)."""
    if file is None:
        return sorted(versions)
    engine_file = live.get(file.memos_file_id)
    switched = (
        engine_file is not None
        and engine_file.status == FileStatus.AVAILABLE
        and file.upload_id is not None
        and upload_id_in(engine_file.name) == file.upload_id
    )
    return sorted(v for v in versions if v > file.version or (switched and v < file.version))


def sweep_prints(
    prints: FingerprintStore,
    contents: ContentStore,
    kb_id: str,
    printed: list[tuple[str, int]],
    files: list[FileRecord],
    live: Iterable[EngineFile],
) -> int:
    """Delete the KB's unneeded fingerprints; how many versions' went. ``printed`` was listed before
    ``files`` was read; ``live`` is MemOS's listing of the KB's files."""
    by_file: dict[str, list[int]] = {}
    for file_id, version in printed:
        by_file.setdefault(file_id, []).append(version)
    known = {f.file_id: f for f in files}
    engine_files = {f.id: f for f in live}
    removed = 0
    for file_id, versions in by_file.items():
        file = known.get(file_id)
        if file is None or any(v > file.version for v in versions):
            file = contents.get_file(kb_id, file_id)  # a record after our read, or a file gone: read it again
        unneeded = unneeded_versions(file, versions, engine_files)
        if unneeded and drop_prints(prints, kb_id, file_id, unneeded):
            removed += len(unneeded)
    return removed
