"""Issuing uploads: the owner asks, the service records the upload and hands out a presigned POST.

File bytes never pass through API Gateway or a Lambda: the client POSTs them straight to S3, under an
opaque key the service chose, within limits the signed policy pins (exact key, exact size, content type,
minutes of validity). What arrives is verified by the ingest (``memmy_kb.domain.uploads.ingest``) before MemOS
sees it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

from memmy_kb.domain.access import require_owner
from memmy_kb.domain.knowledge_bases.capacity import capacity_refused
from memmy_kb.domain.knowledge_bases.folders import is_live
from memmy_kb.domain.knowledge_bases.sibling_names import file_name_holder, name_taken, normal_name
from memmy_kb.domain.ports.contents import ContentStore
from memmy_kb.domain.ports.knowledge_bases import GrantReader
from memmy_kb.domain.ports.uploads import UploadObjects
from memmy_kb.domain.storage import ConditionFailed, ItemMissing, PresignedPost, upload_object_key
from memmy_kb.domain.uploads.formats import (
    ACCEPTED_CONTENT_TYPES,
    ACCEPTED_EXTENSIONS,
    CONTENT_TYPES,
    CONVERTED,
    MAX_CONVERTED_BYTES,
    SUPPORTED_EXTENSIONS,
    accepted_formats,
    file_extension,
)
from memmy_kb.errors import (
    Conflict,
    InvalidInput,
    PayloadTooLarge,
    UnsupportedMediaType,
    folder_not_found,
    kb_not_found,
)
from memmy_kb.records import KbCapacity, UploadRecord, utc_now

MAX_UPLOAD_BYTES: Final = 100 * 1024 * 1024
# How long after the POST expires an upload may stay pending before the reconciler (and the file list)
# treats it as abandoned: time for the object's event to be ingested. An ingest that has to wait for
# MemOS extends it (``memmy_kb.domain.uploads.ingest.PENDING_KEEP``).
PENDING_GRACE: Final = timedelta(hours=1)
# Labels that say nothing about the file: treated as "not given".
_UNSPECIFIED_TYPES: Final = frozenset({"", "application/octet-stream", "binary/octet-stream"})


@dataclass(frozen=True)
class IssuedUpload:
    """A recorded upload and the presigned POST for its bytes, valid until ``post_expires_at``."""

    upload: UploadRecord
    post: PresignedPost
    post_expires_at: datetime


def new_upload_id() -> str:
    return "up_" + os.urandom(12).hex()  # as ``secrets.token_hex``, without its imports


def content_type_for(extension: str, declared: str | None) -> str:
    """The content type to pin in the policy: derived from the extension, or the declared one if it fits.

    Raises InvalidInput (422 ``content_type_mismatch``) for a declared type the extension cannot have.
    """
    media_type = (declared or "").split(";", 1)[0].strip().lower()
    if media_type in _UNSPECIFIED_TYPES:
        return CONTENT_TYPES[extension]
    if media_type not in ACCEPTED_CONTENT_TYPES[extension]:
        raise InvalidInput(
            f"The content type {media_type!r} does not fit a .{extension} file.",
            code="content_type_mismatch",
        )
    return media_type


def validate_upload(filename: str, size_bytes: int, content_type: str | None) -> tuple[str, str]:
    """``(extension, content_type)`` of an acceptable request; 415 for the type, 413 for the size."""
    extension = file_extension(filename)
    # A name that is only a dot and an extension (".pdf") has no extension, but is no plain-text name.
    only_extension = not extension and filename.startswith(".") and filename[1:].lower() in SUPPORTED_EXTENSIONS
    if extension not in ACCEPTED_EXTENSIONS or only_extension:
        raise UnsupportedMediaType(
            f"Only {accepted_formats()} files can be uploaded.", code="unsupported_file_type"
        )
    if size_bytes > MAX_UPLOAD_BYTES:
        raise PayloadTooLarge("Files can be at most 100 MB.", code="file_too_large")
    if extension in CONVERTED and size_bytes > MAX_CONVERTED_BYTES:
        # Converted to Markdown in one piece by the ingest (memmy_kb.domain.uploads.conversion).
        raise PayloadTooLarge(
            f"HTML files can be at most {MAX_CONVERTED_BYTES // (1024 * 1024)} MB.", code="file_too_large"
        )
    return extension, content_type_for(extension, content_type)


def request_upload(
    grants: GrantReader,
    contents: ContentStore,
    storage: UploadObjects,
    *,
    user_id: str,
    kb_id: str,
    filename: str,
    size_bytes: int,
    content_type: str | None,
    folder_id: str | None,
    post_ttl_seconds: int,
    capacity: KbCapacity,
    sha256: str | None = None,
    origin: str | None = None,
    clock: Callable[[], datetime] = utc_now,
    new_id: Callable[[], str] = new_upload_id,
) -> IssuedUpload:
    """Record a pending upload into ``kb_id`` (owner only) and return the presigned POST for its bytes.

    The upload is written before the POST is signed, so that every object that can arrive has a record;
    the write is conditioned on the KB still existing, being the caller's and, under ``capacity``, having
    room for one more file of this size (409 ``kb_file_limit_reached``, 413 ``kb_storage_limit_reached``),
    so a full KB refuses before the bytes are sent. The ingest holds the cap again when it records the file.
    ``sha256``, when the client declares it, is what the bytes must hash to (else the ingest rejects them).
    ``origin`` (``sync``) marks the upload, and the file it becomes, as a folder sync's. The name is stored
    normalised, and one a file of the folder has is refused (409 ``name_taken``,
    ``memmy_kb.domain.knowledge_bases.sibling_names``); the ingest checks it again.
    """
    grant = require_owner(grants, user_id, kb_id)
    filename = normal_name(filename)
    _, pinned_type = validate_upload(filename, size_bytes, content_type)
    folders, files, uploads = contents.query_kb_items(kb_id)
    if folder_id is not None and not is_live({f.folder_id: f for f in folders}, folder_id):
        raise folder_not_found()
    sibling = file_name_holder(filename, folder_id, files, uploads)
    if sibling is not None:
        raise name_taken(sibling)
    now = clock()
    upload_id = new_id()
    key = upload_object_key(kb_id, upload_id)
    post_expires_at = now + timedelta(seconds=post_ttl_seconds)
    upload = UploadRecord(
        kb_id=kb_id,
        upload_id=upload_id,
        owner_id=user_id,
        memos_kb_id=grant.memos_kb_id,
        memos_backend=grant.memos_backend,
        object_key=key,
        filename=filename,
        size_bytes=size_bytes,
        content_type=pinned_type,
        folder_id=folder_id,
        created_at=now,
        expires_at=int((post_expires_at + PENDING_GRACE).timestamp()),
        sha256=sha256,
        origin=origin,
    )
    try:
        contents.put_upload(upload, capacity=capacity)
    except ItemMissing:
        raise kb_not_found() from None
    except ConditionFailed as full:
        raise capacity_refused(capacity, full.item) from None
    post = storage.presign_post(
        key, size_bytes=size_bytes, content_type=pinned_type, expires_in=post_ttl_seconds
    )
    return IssuedUpload(upload=upload, post=post, post_expires_at=post_expires_at)


def dismiss_upload(
    grants: GrantReader, contents: ContentStore, *, user_id: str, kb_id: str, upload_id: str
) -> None:
    """Remove a failed upload from the KB's listing (owner only): its record goes, in one conditional delete.

    Only a decided upload that never became a file (rejected, or expired unused) can go, and a replace not
    yet handed on (pending: its POST unused, or its bytes not yet checked), which also frees its file for
    another replace at once (docs/uploads.md, "Replacing a file"); any other upload still pending or
    submitting, or one that became a file, is refused with 409 ``upload_not_failed`` (delete the file
    instead). Idempotent: an upload already gone (or never there) answers the same. Its bytes, if any were
    left or arrive later, have no record now: the ingest drops them, and the reconciler's sweep removes
    any left (``memmy_kb.domain.uploads.residue``).
    """
    require_owner(grants, user_id, kb_id)
    try:
        contents.delete_decided_upload(kb_id, upload_id)
        return
    except ConditionFailed:
        pass
    current = contents.get_upload(kb_id, upload_id)
    if current is not None and current.replaces is not None and current.state == "pending":
        try:
            contents.delete_pending_replacement(current)
            return
        except ConditionFailed:
            pass  # held by its ingest (or decided) since the read
    raise Conflict(
        "Only a failed upload, or a replace not yet sent on, can be dismissed; this one is in progress or"
        " became a file.",
        code="upload_not_failed",
    )
