"""Factories for stored records and verified claims: valid by default, each field overridable.

Times are fixed (``T0``) unless a rule depends on the wall clock (an upload's expiry, a stale
``submitting``), where the factory's default is relative to now.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

from memmy_kb.domain.directory import VerifiedClaims
from memmy_kb.domain.knowledge_bases.activity import new_activity
from memmy_kb.records import (
    ActivityKind,
    ActivityRecord,
    CountCap,
    FileRecord,
    FolderRecord,
    GrantRecord,
    KbCapacity,
    KnowledgeBaseRecord,
    ProfileRecord,
    Role,
    UploadRecord,
    UploadState,
)

T0 = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)

# The stores take every cap the handlers hold (KBs owned, a KB's files and bytes, new members a day):
# a test or a seed that is not about a cap passes one nothing here reaches, never "no cap".
UNCAPPED_COUNT = 1_000_000_000
UNCAPPED = KbCapacity(max_files=UNCAPPED_COUNT, max_bytes=2**62)


def uncapped_daily(owner_id: str = "alice") -> CountCap:
    """A new-members-a-day counter (as ``memmy_kb.domain.sharing.limits.members_cap``) that never fills."""
    return CountCap(name=f"members#{owner_id}#uncapped", limit=UNCAPPED_COUNT, expires_at=2_000_000_000)


def activity_for(
    kind: ActivityKind, kb_id: str, subject: str, *, actor_id: str = "alice", now: datetime = T0
) -> ActivityRecord:
    """The activity entry a write logs with it (a fresh id each time, kept 180 days)."""
    return new_activity(kind, kb_id, actor_id, subject, now, 180)


def at(minutes: int) -> datetime:
    """``minutes`` after ``T0``: an ordered, readable time for records."""
    return T0 + timedelta(minutes=minutes)


def memos_id_for(kb_id: str) -> str:
    return f"m-{kb_id}"


def kb_record(
    kb_id: str = "kb_1",
    *,
    owner_id: str = "alice",
    name: str = "产品资料",
    owner_name: str | None = None,
    memos_kb_id: str | None = None,
    memos_backend: str | None = None,
    member_count: int = 0,
    created_at: datetime = T0,
) -> KnowledgeBaseRecord:
    return KnowledgeBaseRecord(
        kb_id=kb_id,
        name=name,
        owner_id=owner_id,
        owner_name=owner_name,
        memos_kb_id=memos_kb_id or memos_id_for(kb_id),
        memos_backend=memos_backend,
        member_count=member_count,
        created_at=created_at,
    )


def grant_record(
    user_id: str = "bob",
    kb_id: str = "kb_1",
    *,
    role: Role = "reader",
    recall: bool = True,
    owner_id: str = "alice",
    memos_kb_id: str | None = None,
    memos_backend: str | None = None,
    granted_at: datetime = T0,
) -> GrantRecord:
    return GrantRecord(
        user_id=user_id,
        kb_id=kb_id,
        role=role,
        recall=recall,
        memos_kb_id=memos_kb_id or memos_id_for(kb_id),
        memos_backend=memos_backend,
        owner_id=owner_id,
        granted_at=granted_at,
    )


def owner_grant_for(kb: KnowledgeBaseRecord, *, recall: bool = True) -> GrantRecord:
    return grant_record(
        kb.owner_id,
        kb.kb_id,
        role="owner",
        recall=recall,
        owner_id=kb.owner_id,
        memos_kb_id=kb.memos_kb_id,
        memos_backend=kb.memos_backend,
        granted_at=kb.created_at,
    )


def reader_grant_for(
    kb: KnowledgeBaseRecord, user_id: str, *, recall: bool = True, granted_at: datetime | None = None
) -> GrantRecord:
    return grant_record(
        user_id,
        kb.kb_id,
        role="reader",
        recall=recall,
        owner_id=kb.owner_id,
        memos_kb_id=kb.memos_kb_id,
        memos_backend=kb.memos_backend,
        granted_at=granted_at or kb.created_at,
    )


def folder_record(
    folder_id: str = "fo_1",
    *,
    kb_id: str = "kb_1",
    name: str | None = None,
    parent_id: str | None = None,
    created_at: datetime = T0,
) -> FolderRecord:
    return FolderRecord(
        kb_id=kb_id, folder_id=folder_id, name=name or folder_id, parent_id=parent_id, created_at=created_at
    )


def file_record(
    file_id: str = "fi_1",
    *,
    kb_id: str = "kb_1",
    memos_file_id: str | None = None,
    name: str | None = None,
    folder_id: str | None = None,
    size_bytes: int = 10,
    upload_id: str | None = None,
    uploaded_at: datetime = T0,
) -> FileRecord:
    return FileRecord(
        kb_id=kb_id,
        file_id=file_id,
        memos_file_id=memos_file_id or f"mf-{file_id}",
        name=name or f"{file_id}.md",
        folder_id=folder_id,
        size_bytes=size_bytes,
        upload_id=upload_id or f"up-{file_id}",
        uploaded_at=uploaded_at,
    )


def upload_record(
    upload_id: str = "up_1",
    *,
    kb_id: str = "kb_1",
    owner_id: str = "alice",
    filename: str | None = None,
    size_bytes: int = 10,
    content_type: str = "text/markdown",
    folder_id: str | None = None,
    state: UploadState = "pending",
    reason: str | None = None,
    created_at: datetime | None = None,
    expires_at: int | None = None,
    attempt_id: str | None = None,
    submitting_at: datetime | None = None,
) -> UploadRecord:
    """An upload; by default created now and expiring in an hour (pending uploads are shown until then)."""
    return UploadRecord(
        kb_id=kb_id,
        upload_id=upload_id,
        owner_id=owner_id,
        object_key=f"uploads/{kb_id}/{upload_id}",
        filename=filename or f"{upload_id}.md",
        size_bytes=size_bytes,
        content_type=content_type,
        folder_id=folder_id,
        state=state,
        reason=reason,
        created_at=created_at or datetime.now(UTC),
        expires_at=expires_at if expires_at is not None else int(time.time()) + 3600,
        attempt_id=attempt_id,
        submitting_at=submitting_at,
    )


def profile_record(
    user_id: str = "bob",
    *,
    display_name: str | None = None,
    email: str | None = None,
    phone: str | None = None,
    updated_at: datetime = T0,
) -> ProfileRecord:
    return ProfileRecord(
        user_id=user_id,
        display_name=display_name or user_id.title(),
        email=email,
        phone=phone,
        updated_at=updated_at,
    )


def claims(
    user_id: str = "alice",
    *,
    name: str | None = None,
    email: str | None = None,
    phone: str | None = None,
    issued_at: int | None = None,
) -> VerifiedClaims:
    return VerifiedClaims(user_id=user_id, name=name, email=email, phone=phone, issued_at=issued_at)


def replacement_record(
    upload_id: str,
    file: FileRecord,
    *,
    size_bytes: int | None = None,
    state: UploadState = "pending",
    created_at: datetime | None = None,
    expires_at: int | None = None,
    owner_id: str = "alice",
) -> UploadRecord:
    """A replace of ``file``: an upload of its next version, replacing the version it is at now."""
    return upload_record(
        upload_id,
        kb_id=file.kb_id,
        owner_id=owner_id,
        filename=file.name,
        size_bytes=file.size_bytes if size_bytes is None else size_bytes,
        state=state,
        created_at=created_at,
        expires_at=expires_at,
    ).model_copy(
        update={
            "memos_file_id": file.memos_file_id,
            "replaces": file.file_id,
            "if_version": file.version,
            "replaced_size": file.size_bytes,
            "replaced_upload": file.upload_id,
        }
    )
