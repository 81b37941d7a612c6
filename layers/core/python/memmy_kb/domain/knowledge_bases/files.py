"""A knowledge base's files as users see them: one level of the tree with live status, and moving files.

Folders and the file-to-folder mapping are ours (MemOS has no folders); each file's name and processing
status come live from MemOS, in batched calls per listing, so status has a single source. Nothing here
writes MemOS, and moving never re-uploads anything.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final, Literal

from aws_lambda_powertools import Logger

from memmy_kb.domain.access import require_access, require_owner
from memmy_kb.domain.engine import EngineFile, FileStatus, MemosApiKeyError, MemosError, backend_of
from memmy_kb.domain.knowledge_bases.folders import is_live
from memmy_kb.domain.knowledge_bases.naming import shown_name
from memmy_kb.domain.knowledge_bases.sibling_names import file_name_holder, name_taken
from memmy_kb.domain.ports.contents import ContentStore
from memmy_kb.domain.ports.engines import KnowledgeEngines
from memmy_kb.domain.ports.knowledge_bases import GrantReader
from memmy_kb.domain.storage import ItemMissing
from memmy_kb.errors import NotFound, UpstreamUnavailable, file_not_found, folder_not_found
from memmy_kb.records import FileRecord, FolderRecord, UploadRecord

logger = Logger(child=True)

FileState = Literal["uploading", "processing", "available", "failed"]

REFRESH_AFTER_SECONDS: Final = 3
# MemOS's ids mode may page at its default page size of 20: never ask for more ids than that at once.
_MEMOS_BATCH: Final = 20
# A MemOS add normally settles in seconds; past this the outcome is unknown until the reconciler decides,
# and the user is better told to upload again than shown "uploading" for days.
SUBMITTING_GRACE: Final = timedelta(minutes=15)
_STATUS: Final[dict[FileStatus, FileState]] = {
    FileStatus.PROCESSING: "processing",
    FileStatus.AVAILABLE: "available",
    FileStatus.FAILED: "failed",
}
GONE_FROM_MEMOS: Final = "The file is no longer held by the knowledge engine."
MEMOS_FAILED: Final = "The knowledge engine could not process this file."
UNCONFIRMED: Final = "The upload could not be confirmed; please upload the file again."
VERSION_FAILED: Final = "The knowledge engine could not process this version; the previous version still answers."


@dataclass(frozen=True)
class Replacement:
    """A file's replace shown beside it: in flight (``uploading``), or ``failed`` with its reason (the file
    keeps its current version) until the owner dismisses it or replaces the file again."""

    upload_id: str
    status: Literal["uploading", "failed"]
    reason: str | None = None


@dataclass(frozen=True)
class FileEntry:
    """One entry of a listing: a file MemOS holds, or an upload not (or never) submitted."""

    id: str
    name: str
    status: FileState
    size_bytes: int | None
    folder_id: str | None
    reason: str | None
    upload_id: str | None
    # A file's current version, the SHA-256 of its bytes and when it took them (None for an upload).
    version: int | None = None
    sha256: str | None = None
    updated_at: datetime | None = None
    replacement: Replacement | None = None
    origin: str | None = None  # ``sync``: a folder sync's file


@dataclass(frozen=True)
class Listing:
    """One level of a KB: its subfolders and its entries, each sorted by name."""

    folders: list[FolderRecord]
    files: list[FileEntry]

    @property
    def refresh_after_seconds(self) -> int | None:
        """When to list again: while anything is uploading or processing."""
        busy = any(
            f.status in ("uploading", "processing") or (f.replacement and f.replacement.status == "uploading")
            for f in self.files
        )
        return REFRESH_AFTER_SECONDS if busy else None


def list_files(
    grants: GrantReader,
    contents: ContentStore,
    memos: KnowledgeEngines,
    user_id: str,
    kb_id: str,
    folder_id: str | None,
) -> Listing:
    """One level of a KB (the root when ``folder_id`` is None), for owners and readers."""
    grant = require_access(grants, user_id, kb_id)
    folders, files, uploads = contents.query_kb_items(kb_id)
    if folder_id is not None and not is_live({f.folder_id: f for f in folders}, folder_id):
        raise folder_not_found()
    here = [f for f in files if f.folder_id == folder_id]
    live = _memos_files(memos, backend_of(grant.memos_backend), [f.memos_file_id for f in here])
    entries = [_file_entry(f, live.get(f.memos_file_id), _replacement(f, uploads)) for f in here]
    # An upload that is already a file is listed once, as its file: a Query may read the new FILE item
    # and the UPLOAD item not yet marked submitted by the same transaction (DynamoDB's Query is
    # read-committed per item, not a snapshot of the partition).
    filed = {f.upload_id for f in files}
    entries += [
        _upload_entry(u)
        for u in uploads
        if u.folder_id == folder_id and u.replaces is None and u.upload_id not in filed and _shown(u)
    ]
    entries.sort(key=lambda f: (f.name.casefold(), f.id))
    level = sorted((f for f in folders if f.parent_id == folder_id), key=lambda f: (f.name.casefold(), f.folder_id))
    return Listing(folders=level, files=entries)


def get_file(
    grants: GrantReader, contents: ContentStore, memos: KnowledgeEngines, user_id: str, kb_id: str, file_id: str
) -> FileEntry:
    """One file as a listing shows it (its version, live status and replace), for owners and readers."""
    grant = require_access(grants, user_id, kb_id)
    folders, files, uploads = contents.query_kb_items(kb_id)
    record = next((f for f in files if f.file_id == file_id), None)
    # A file under a deleted folder is gone for everyone already, as in the listing.
    if record is None or (record.folder_id is not None and not is_live({f.folder_id: f for f in folders}, record.folder_id)):
        raise file_not_found()
    live = _memos_files(memos, backend_of(grant.memos_backend), [record.memos_file_id])
    return _file_entry(record, live.get(record.memos_file_id), _replacement(record, uploads))


def move_file(
    grants: GrantReader,
    contents: ContentStore,
    memos: KnowledgeEngines,
    user_id: str,
    kb_id: str,
    file_id: str,
    folder_id: str | None,
) -> FileEntry:
    """Move a file to another folder (None: the root); only our mapping changes. A file of that folder with
    the same name (once normalised) refuses it: 409 ``name_taken``."""
    grant = require_owner(grants, user_id, kb_id)
    folders, files, uploads = contents.query_kb_items(kb_id)
    record = next((f for f in files if f.file_id == file_id), None)
    if record is None:
        raise file_not_found()
    if folder_id is not None and not is_live({f.folder_id: f for f in folders}, folder_id):
        raise folder_not_found()
    if folder_id != record.folder_id:
        sibling = file_name_holder(record.name, folder_id, files, uploads, ignore_file=file_id)
        if sibling is not None:
            raise name_taken(sibling)
    try:
        contents.update_file_folder(kb_id, file_id, folder_id)
    except ItemMissing:
        raise NotFound("The file or the folder no longer exists.", code="file_not_found") from None
    record = record.model_copy(update={"folder_id": folder_id})
    live = _memos_files(memos, backend_of(grant.memos_backend), [record.memos_file_id])
    return _file_entry(record, live.get(record.memos_file_id))


def _memos_files(memos: KnowledgeEngines, backend: str, memos_ids: list[str]) -> dict[str, EngineFile]:
    """The live files of ``memos_ids`` on the KB's own ``backend``; 503 when it cannot say (MemOS failed,
    or the secret has no usable key for that backend: no other backend is asked instead)."""
    found: dict[str, EngineFile] = {}
    if not memos_ids:
        return found
    try:
        engine = memos.engine(backend)
        for start in range(0, len(memos_ids), _MEMOS_BATCH):
            for f in engine.get_knowledgebase_files(memos_ids[start : start + _MEMOS_BATCH]):
                found[f.id] = f
    except (MemosError, MemosApiKeyError) as err:
        logger.warning(
            "MemOS file status unavailable",
            extra={"error": type(err).__name__, "memos_code": getattr(err, "code", None), "memos_backend": backend},
        )
        raise UpstreamUnavailable("File status is unavailable right now; try again shortly.") from err
    return found


def _file_entry(record: FileRecord, live: EngineFile | None, replacement: Replacement | None = None) -> FileEntry:
    status: FileState = "failed"
    name: str = record.name
    reason: str | None = GONE_FROM_MEMOS
    if live is not None:
        status = _STATUS[live.status]
        name = shown_name(live.name) if live.name else record.name
        # A later version MemOS failed leaves the one before it answering (docs/memos.md, "Updating a file").
        failed = VERSION_FAILED if record.version > 1 else MEMOS_FAILED
        reason = failed if status == "failed" else None
    return FileEntry(
        id=record.file_id,
        name=name,
        status=status,
        size_bytes=record.size_bytes,
        folder_id=record.folder_id,
        reason=reason,
        upload_id=record.upload_id,
        version=record.version,
        sha256=record.sha256,
        updated_at=record.updated_at or record.uploaded_at,
        replacement=replacement,
        origin=record.origin,
    )


def _replacement(file: FileRecord, uploads: list[UploadRecord]) -> Replacement | None:
    """The file's replace in flight, else its latest failed one (of the version it is at), else None.

    One in flight stays ``uploading`` also once its MemOS outcome is overdue: unlike an upload's, it is the
    reconciler's to record or send again, and another replace is refused until then."""
    mine = [u for u in uploads if u.replaces == file.file_id]
    for upload in mine:
        if upload.upload_id == file.replacing and _shown(upload) and upload.state != "rejected":
            return Replacement(upload.upload_id, "uploading")
    failed = [u for u in mine if u.state == "rejected" and u.if_version == file.version]
    if not failed:
        return None
    latest = max(failed, key=lambda u: u.created_at)
    return Replacement(latest.upload_id, "failed", latest.reason)


def _shown(upload: UploadRecord) -> bool:
    """In-flight uploads show as uploading, rejected ones as failed; submitted ones are FILE items."""
    if upload.state == "pending":
        return upload.expires_at > time.time()
    return upload.state in ("submitting", "rejected")


def _upload_entry(upload: UploadRecord) -> FileEntry:
    status: FileState = "uploading"
    reason = None
    if upload.state == "rejected":
        status, reason = "failed", upload.reason
    elif upload.state == "submitting" and _stale(upload):
        status, reason = "failed", UNCONFIRMED
    return FileEntry(
        id=upload.upload_id,
        name=upload.filename,
        status=status,
        size_bytes=upload.size_bytes,
        folder_id=upload.folder_id,
        reason=reason,
        upload_id=upload.upload_id,
        origin=upload.origin,
    )


def _stale(upload: UploadRecord) -> bool:
    started = upload.submitting_at or upload.created_at
    return datetime.now(UTC) - started > SUBMITTING_GRACE
