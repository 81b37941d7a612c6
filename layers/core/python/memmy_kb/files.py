"""A knowledge base's folders and files as users see them.

Folders and the file-to-folder mapping are ours (MemOS has no folders); each file's name and processing
status come live from MemOS, in one batched call per listing, so status has a single source. Nothing here
writes MemOS, and moving never re-uploads anything.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from aws_lambda_powertools import Logger

from memmy_kb.errors import Conflict, InvalidInput, NotFound, UpstreamUnavailable
from memmy_kb.knowledge_bases import require_access, require_owner
from memmy_kb.memos import FileStatus, MemosClient, MemosError, MemosFile
from memmy_kb.models import (
    File,
    FileListing,
    FileRecord,
    Folder,
    FolderRecord,
    UploadRecord,
    utc_now,
)
from memmy_kb.repository import Repository

logger = Logger(child=True)

# Deep enough for any real tree; bounded so a move's cycle check stays one transaction (<= 100 items).
MAX_FOLDER_DEPTH = 20
REFRESH_AFTER_SECONDS = 3
# MemOS's ids mode may page at its default page size of 20: never ask for more ids than that at once.
_MEMOS_BATCH = 20
# A MemOS add normally settles in seconds; past this the outcome is unknown until the reconciler decides,
# and the user is better told to upload again than shown "uploading" for days.
SUBMITTING_GRACE = timedelta(minutes=15)
_STATUS = {
    FileStatus.PROCESSING: "processing",
    FileStatus.AVAILABLE: "available",
    FileStatus.FAILED: "failed",
}


def new_folder_id() -> str:
    return "fo_" + secrets.token_hex(10)


def folder_not_found() -> NotFound:
    return NotFound("Folder not found.", code="folder_not_found")


def file_not_found() -> NotFound:
    return NotFound("File not found.", code="file_not_found")


# -- listing -------------------------------------------------------------------------------------


def list_files(
    repo: Repository, memos: MemosClient, user_id: str, kb_id: str, folder_id: str | None = None
) -> FileListing:
    """One level of a KB (the root when ``folder_id`` is None), for owners and readers."""
    require_access(repo, user_id, kb_id)
    folders, files, uploads = repo.list_kb_contents(kb_id)
    if folder_id is not None and all(f.folder_id != folder_id for f in folders):
        raise folder_not_found()
    here = [f for f in files if f.folder_id == folder_id]
    live = _memos_files(memos, [f.memos_file_id for f in here])
    entries = [_file(f, live.get(f.memos_file_id)) for f in here]
    entries += [_upload(u) for u in uploads if u.folder_id == folder_id and _shown(u)]
    entries.sort(key=lambda f: (f.name.casefold(), f.id))
    level = sorted(
        (_folder(f) for f in folders if f.parent_id == folder_id), key=lambda f: (f.name.casefold(), f.id)
    )
    busy = any(f.status in ("uploading", "processing") for f in entries)
    return FileListing(
        folders=level, files=entries, refresh_after_seconds=REFRESH_AFTER_SECONDS if busy else None
    )


def _memos_files(memos: MemosClient, memos_ids: list[str]) -> dict[str, MemosFile]:
    found: dict[str, MemosFile] = {}
    try:
        for start in range(0, len(memos_ids), _MEMOS_BATCH):
            for f in memos.get_files(memos_ids[start : start + _MEMOS_BATCH]):
                found[f.id] = f
    except MemosError as err:
        logger.warning(
            "MemOS file status unavailable", extra={"error": type(err).__name__, "memos_code": err.code}
        )
        raise UpstreamUnavailable("File status is unavailable right now; try again shortly.") from err
    return found


def _file(record: FileRecord, live: MemosFile | None) -> File:
    if live is None:
        return File(
            id=record.file_id,
            name=record.name,
            status="failed",
            size_bytes=record.size_bytes,
            folder_id=record.folder_id,
            reason="The file is no longer held by the knowledge engine.",
            upload_id=record.upload_id,
        )
    status = _STATUS[live.status]
    return File(
        id=record.file_id,
        name=live.name or record.name,
        status=status,
        size_bytes=record.size_bytes,
        folder_id=record.folder_id,
        reason="The knowledge engine could not process this file." if status == "failed" else None,
        upload_id=record.upload_id,
    )


def _shown(upload: UploadRecord) -> bool:
    """In-flight uploads show as uploading, rejected ones as failed; submitted ones are FILE items."""
    if upload.state == "pending":
        return upload.expires_at > time.time()
    return upload.state in ("submitting", "rejected")


def _upload(upload: UploadRecord) -> File:
    status, reason = "uploading", None
    if upload.state == "rejected":
        status, reason = "failed", upload.reason
    elif upload.state == "submitting" and _stale(upload):
        status, reason = "failed", "The upload could not be confirmed; please upload the file again."
    return File(
        id=upload.upload_id,
        name=upload.filename,
        status=status,
        size_bytes=upload.size_bytes,
        folder_id=upload.folder_id,
        reason=reason,
        upload_id=upload.upload_id,
    )


def _stale(upload: UploadRecord) -> bool:
    started = upload.submitting_at or upload.created_at
    return datetime.now(UTC) - started > SUBMITTING_GRACE


def _folder(record: FolderRecord) -> Folder:
    return Folder(id=record.folder_id, name=record.name, parent_id=record.parent_id)


# -- folders -------------------------------------------------------------------------------------


def create_folder(
    repo: Repository,
    user_id: str,
    kb_id: str,
    name: str,
    parent_id: str | None,
    *,
    clock: Callable[[], datetime] = utc_now,
    new_id: Callable[[], str] = new_folder_id,
) -> Folder:
    require_owner(repo, user_id, kb_id)
    if parent_id is not None:
        folders = {f.folder_id: f for f in repo.list_kb_contents(kb_id)[0]}
        if parent_id not in folders:
            raise folder_not_found()
        if len(_chain(folders, parent_id)) >= MAX_FOLDER_DEPTH:
            raise InvalidInput(f"Folders nest at most {MAX_FOLDER_DEPTH} deep.", code="folder_too_deep")
    folder = FolderRecord(kb_id=kb_id, folder_id=new_id(), name=name, parent_id=parent_id, created_at=clock())
    if not repo.create_folder(folder):
        raise folder_not_found()
    return _folder(folder)


def update_folder(
    repo: Repository,
    user_id: str,
    kb_id: str,
    folder_id: str,
    *,
    name: str | None,
    parent_id: str | None,
    move: bool,
) -> Folder:
    """Rename and/or move (``move``: ``parent_id`` was given, None meaning the root) a folder.

    Moving a folder into itself or its own subtree is refused with 409.
    """
    require_owner(repo, user_id, kb_id)
    folders = {f.folder_id: f for f in repo.list_kb_contents(kb_id)[0]}
    current = folders.get(folder_id)
    if current is None:
        raise folder_not_found()
    new_parent = parent_id if move else current.parent_id
    ancestors: list[FolderRecord] = []
    if move and new_parent is not None:
        if new_parent not in folders:
            raise folder_not_found()
        ancestors = _chain(folders, new_parent)
        if any(a.folder_id == folder_id for a in ancestors):
            raise Conflict("A folder cannot move into itself or its own subfolders.", code="folder_cycle")
        if len(ancestors) + _height(folders, folder_id) > MAX_FOLDER_DEPTH:
            raise InvalidInput(f"Folders nest at most {MAX_FOLDER_DEPTH} deep.", code="folder_too_deep")
    updated = current.model_copy(update={"name": name or current.name, "parent_id": new_parent})
    if not repo.update_folder(updated, current, ancestors):
        raise Conflict("The folders changed at the same time; try again.", code="folders_changed")
    return _folder(updated)


def _chain(folders: dict[str, FolderRecord], folder_id: str) -> list[FolderRecord]:
    """``folder_id`` and its ancestors up to the root (stops on a cycle, which writes never create)."""
    chain: list[FolderRecord] = []
    seen: set[str] = set()
    current: str | None = folder_id
    while current is not None and current in folders and current not in seen:
        seen.add(current)
        chain.append(folders[current])
        current = folders[current].parent_id
    return chain


def _height(folders: dict[str, FolderRecord], folder_id: str) -> int:
    """Levels in the subtree rooted at ``folder_id`` (1 for a folder without subfolders)."""
    children = [f.folder_id for f in folders.values() if f.parent_id == folder_id]
    return 1 + max((_height(folders, c) for c in children), default=0)


# -- files ---------------------------------------------------------------------------------------


def move_file(
    repo: Repository, memos: MemosClient, user_id: str, kb_id: str, file_id: str, folder_id: str | None
) -> File:
    """Move a file to another folder (None: the root); only our mapping changes."""
    require_owner(repo, user_id, kb_id)
    record = repo.get_file(kb_id, file_id)
    if record is None:
        raise file_not_found()
    if folder_id is not None and repo.get_folder(kb_id, folder_id) is None:
        raise folder_not_found()
    if not repo.move_file(kb_id, file_id, folder_id):
        raise NotFound("The file or the folder no longer exists.", code="file_not_found")
    record = record.model_copy(update={"folder_id": folder_id})
    return _file(record, _memos_files(memos, [record.memos_file_id]).get(record.memos_file_id))
