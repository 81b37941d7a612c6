"""Replacing a file in place: the owner asks, the service records the replace and hands out a presigned POST.

A replace is an upload of a file's next version (docs/uploads.md, "Replacing a file"). The file keeps its
id, name, folder and everyone's access; its bytes are checked as an upload's are, against the file's own
name, and the ingest hands them to MemOS as the file's next version (``memmy_kb.domain.uploads.replace_ingest``).
Until MemOS has processed that version, the current one keeps answering recall.

Issuing one checks, in this order: the caller owns the KB, the file exists, it is still at the version the
caller replaces (``if_version``, 409 ``version_conflict``), no other replace of it is in flight (409
``replace_in_progress``), and the bytes differ from the current version's (a ``sha256`` equal to the
stored one answers ``unchanged`` and writes nothing, unless MemOS failed that version: the same bytes then
take a new replace, or they could never be sent again). Then one transaction records the pending replace,
marks the file ``replacing`` it and checks the KB has room for the growth.

A replace in flight gives way to a new one once it can no longer be completed: its upload is gone or
decided, or still pending after its presigned POST expired (then the new one's transaction also checks that
it has not been held meanwhile, and the old one's ingest finds the file taken over and ends rejected).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from memmy_kb.domain.access import require_owner
from memmy_kb.domain.engine import FileStatus, MemosApiKeyError, MemosError, backend_of
from memmy_kb.domain.knowledge_bases.capacity import capacity_refused
from memmy_kb.domain.ports.contents import ContentStore
from memmy_kb.domain.ports.engines import KnowledgeEngines
from memmy_kb.domain.ports.knowledge_bases import GrantReader
from memmy_kb.domain.ports.uploads import UploadObjects
from memmy_kb.domain.storage import ConditionFailed, ItemMissing, PresignedPost, upload_object_key
from memmy_kb.domain.uploads.issuing import PENDING_GRACE, new_upload_id, validate_upload
from memmy_kb.errors import Conflict, UpstreamUnavailable, file_not_found, kb_not_found
from memmy_kb.records import FileRecord, KbCapacity, UploadRecord, utc_now


@dataclass(frozen=True)
class IssuedReplacement:
    """A recorded replace and the presigned POST for its bytes, valid until ``post_expires_at``."""

    upload: UploadRecord
    post: PresignedPost
    post_expires_at: datetime


@dataclass(frozen=True)
class Unchanged:
    """The bytes offered are the file's current version's: nothing was recorded or signed."""

    file: FileRecord


@dataclass(frozen=True)
class ReplacementRequest:
    """What the owner asks: the file, the new bytes' size (and type, and hash), the version replaced."""

    kb_id: str
    file_id: str
    size_bytes: int
    content_type: str | None = None
    sha256: str | None = None
    if_version: int | None = None


def version_conflict(current: int) -> Conflict:
    return Conflict(
        f"The file is at version {current} now; look at it again before replacing it.",
        code="version_conflict",
        details={"version": current},
    )


def replace_in_progress() -> Conflict:
    return Conflict("The file is being replaced already; wait for that to finish.", code="replace_in_progress")


def request_replacement(
    grants: GrantReader,
    contents: ContentStore,
    storage: UploadObjects,
    memos: KnowledgeEngines,
    *,
    user_id: str,
    request: ReplacementRequest,
    post_ttl_seconds: int,
    capacity: KbCapacity,
    clock: Callable[[], datetime] = utc_now,
    new_id: Callable[[], str] = new_upload_id,
) -> IssuedReplacement | Unchanged:
    """Record a replace of ``request.file_id`` (owner only) and return the presigned POST for its bytes,
    or ``Unchanged`` when the declared hash is the current version's and MemOS did not fail it."""
    grant = require_owner(grants, user_id, request.kb_id)
    file = contents.get_file(request.kb_id, request.file_id)
    if file is None:
        raise file_not_found()
    if request.if_version is not None and request.if_version != file.version:
        raise version_conflict(file.version)
    now = clock()
    take_over = _replace_in_flight(contents, file, now - timedelta(seconds=post_ttl_seconds))
    if request.sha256 is not None and request.sha256 == file.sha256 and not _failed(memos, grant.memos_backend, file):
        return Unchanged(file)
    _, pinned_type = validate_upload(file.name, request.size_bytes, request.content_type)
    upload_id = new_id()
    key = upload_object_key(request.kb_id, upload_id)
    post_expires_at = now + timedelta(seconds=post_ttl_seconds)
    upload = UploadRecord(
        kb_id=request.kb_id,
        upload_id=upload_id,
        owner_id=user_id,
        memos_kb_id=grant.memos_kb_id,
        memos_backend=grant.memos_backend,
        object_key=key,
        filename=file.name,
        size_bytes=request.size_bytes,
        content_type=pinned_type,
        created_at=now,
        expires_at=int((post_expires_at + PENDING_GRACE).timestamp()),
        sha256=request.sha256,
        memos_file_id=file.memos_file_id,
        replaces=file.file_id,
        if_version=file.version,
        replaced_size=file.size_bytes,
        replaced_upload=file.upload_id,
    )
    try:
        contents.put_replacement(upload, take_over=take_over, capacity=capacity)
    except ItemMissing as missing:
        raise (kb_not_found() if missing.item == "kb" else file_not_found()) from None
    except ConditionFailed as refused:
        if refused.item == "kb_bytes":
            raise capacity_refused(capacity, "kb_bytes") from None
        raise _why_refused(contents, file) from None
    post = storage.presign_post(
        key, size_bytes=request.size_bytes, content_type=pinned_type, expires_in=post_ttl_seconds
    )
    return IssuedReplacement(upload=upload, post=post, post_expires_at=post_expires_at)


def _failed(memos: KnowledgeEngines, backend: str | None, file: FileRecord) -> bool:
    """Whether MemOS failed the file's current version (asked only when the bytes offered are its bytes)."""
    try:
        live = memos.engine(backend_of(backend)).get_knowledgebase_files([file.memos_file_id])
    except (MemosError, MemosApiKeyError) as err:
        raise UpstreamUnavailable("File status is unavailable right now; try again shortly.") from err
    return any(f.id == file.memos_file_id and f.status == FileStatus.FAILED for f in live)


def _replace_in_flight(contents: ContentStore, file: FileRecord, posts_from: datetime) -> str | None:
    """The upload of the file's replace in flight when it can no longer be completed (the new replace takes
    it over), None when there is none; 409 ``replace_in_progress`` while it still can be: submitting, or
    pending with a POST issued after ``posts_from`` (still valid)."""
    if file.replacing is None:
        return None
    holder = contents.get_upload(file.kb_id, file.replacing)
    if holder is not None and (
        holder.state == "submitting" or (holder.state == "pending" and holder.created_at > posts_from)
    ):
        raise replace_in_progress()
    return file.replacing


def _why_refused(contents: ContentStore, seen: FileRecord) -> Exception:
    """The file changed between our read and the write: a new version (409 ``version_conflict``), another
    replace (409 ``replace_in_progress``), or it is gone (404)."""
    current = contents.get_file(seen.kb_id, seen.file_id)
    if current is None:
        return file_not_found()
    if current.version != seen.version:
        return version_conflict(current.version)
    return replace_in_progress()
