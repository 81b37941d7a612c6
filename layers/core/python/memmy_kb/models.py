"""Typed shapes: the API's request and response bodies, and the domain records behind them.

API models are what clients see (``shared/API.md``); domain records are what the repository reads and
writes. They differ on purpose: the MemOS id, for one, never leaves the service.
"""

from __future__ import annotations

import unicodedata
from datetime import UTC, datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints

Role = Literal["owner", "reader"]
MAX_NAME_LENGTH = 100


def _clean_name(value: str) -> str:
    value = value.strip()
    if not 1 <= len(value) <= MAX_NAME_LENGTH:
        raise ValueError(f"must be 1 to {MAX_NAME_LENGTH} characters after trimming")
    if any(unicodedata.category(ch) in ("Cc", "Cf") for ch in value):
        raise ValueError("must not contain control or invisible formatting characters")
    return value


Name = Annotated[str, Field(min_length=1, max_length=1000), AfterValidator(_clean_name)]


def utc_now() -> datetime:
    return datetime.now(UTC)


# -- domain records ------------------------------------------------------------------------------


class KnowledgeBaseRecord(BaseModel):
    """The KB's META item."""

    kb_id: str
    name: str
    owner_id: str
    # The owner's display name when the KB was made, shown if the owner has no profile yet.
    owner_name: str | None = None
    memos_kb_id: str
    member_count: int = 0
    created_at: datetime


class GrantRecord(BaseModel):
    """A user's access to a KB: the single authority for access and recall scope."""

    user_id: str
    kb_id: str
    role: Role
    recall: bool
    memos_kb_id: str
    owner_id: str
    granted_at: datetime


class ProfileRecord(BaseModel):
    user_id: str
    display_name: str
    email: str | None = None
    phone: str | None = None
    updated_at: datetime


FileState = Literal["uploading", "processing", "available", "failed"]
UploadState = Literal["pending", "submitting", "submitted", "rejected", "expired"]


class FolderRecord(BaseModel):
    """An app-side folder (MemOS has none): ``parent_id`` None is the KB's root."""

    kb_id: str
    folder_id: str
    name: str
    parent_id: str | None = None
    created_at: datetime


class FileRecord(BaseModel):
    """A file MemOS accepted; its name and status are read live from MemOS, the folder is ours."""

    kb_id: str
    file_id: str
    memos_file_id: str
    name: str
    folder_id: str | None = None
    size_bytes: int
    upload_id: str
    uploaded_at: datetime


class UploadRecord(BaseModel):
    """One presigned upload, from the POST that issued it to MemOS accepting (or us rejecting) the object.

    ``pending``: waiting for the object; ``submitting``: verified, MemOS call in flight (a crash here is
    what the reconciler looks for); ``submitted``: the FILE item exists; ``rejected``: bytes deleted,
    ``reason`` says why; ``expired``: never arrived.
    """

    kb_id: str
    upload_id: str
    owner_id: str
    object_key: str
    filename: str
    size_bytes: int
    content_type: str
    folder_id: str | None = None
    state: UploadState = "pending"
    reason: str | None = None
    file_id: str | None = None
    memos_file_id: str | None = None
    created_at: datetime
    expires_at: int  # epoch seconds: the table's TTL attribute
    # The ingest attempt that holds the upload while ``submitting`` (a fencing token), and when it began.
    attempt_id: str | None = None
    submitting_at: datetime | None = None


# -- API bodies ----------------------------------------------------------------------------------


class ApiModel(BaseModel):
    model_config = ConfigDict(extra="ignore")


class CreateKnowledgeBaseRequest(ApiModel):
    name: Name


class RenameKnowledgeBaseRequest(ApiModel):
    name: Name


class RecallSettingRequest(ApiModel):
    enabled: Annotated[bool, Field(strict=True)]


class ShareRequest(ApiModel):
    identifier: Annotated[
        str, Field(min_length=1, max_length=320, description="A user id, phone number or email")
    ]


class Member(ApiModel):
    user_id: str
    display_name: str
    role: Role
    shared_at: datetime


class MemberList(ApiModel):
    items: list[Member]


class Folder(ApiModel):
    id: str
    name: str
    parent_id: str | None = None


class File(ApiModel):
    id: str
    name: str
    status: FileState
    size_bytes: int | None = None
    folder_id: str | None = None
    reason: str | None = None
    upload_id: str | None = Field(default=None, description="The upload this file came from")


class FileListing(ApiModel):
    folders: list[Folder]
    files: list[File]
    refresh_after_seconds: int | None = None


class CreateFolderRequest(ApiModel):
    name: Name
    parent_id: str | None = None


class UpdateFolderRequest(ApiModel):
    """``parent_id`` given as null moves the folder to the root; left out, it stays where it is."""

    name: Name | None = None
    parent_id: str | None = None


class MoveFileRequest(ApiModel):
    folder_id: str | None = Field(description="The destination folder; null for the root")


class Owner(ApiModel):
    user_id: str
    display_name: str


class KnowledgeBase(ApiModel):
    id: str
    name: str
    role: Role
    recall: bool
    owner: Owner
    created_at: datetime


class KnowledgeBaseList(ApiModel):
    items: list[KnowledgeBase]


class Me(ApiModel):
    user_id: str
    display_name: str
    email: str | None = None
    phone: str | None = None


# -- uploads -------------------------------------------------------------------------------------

MAX_FILENAME_LENGTH = 255


def _clean_filename(value: str) -> str:
    value = value.strip()
    if not 1 <= len(value) <= MAX_FILENAME_LENGTH:
        raise ValueError(f"must be 1 to {MAX_FILENAME_LENGTH} characters after trimming")
    if "/" in value or "\\" in value or value in (".", ".."):
        raise ValueError("must be a file name, not a path")
    # Cf covers the bidi overrides that make "exe\u202efdp.pdf" look like a PDF.
    if any(unicodedata.category(ch) in ("Cc", "Cf") for ch in value):
        raise ValueError("must not contain control or invisible formatting characters")
    return value


Filename = Annotated[str, Field(min_length=1, max_length=1000), AfterValidator(_clean_filename)]


class CreateUploadRequest(ApiModel):
    filename: Annotated[Filename, Field(description="The file's name, with one of the supported extensions")]
    size_bytes: Annotated[
        int, Field(strict=True, ge=1, description="The file's exact size in bytes (1 B to 100 MB)")
    ]
    content_type: Annotated[
        str | None, Field(max_length=255, description="Must fit the extension; derived from it when absent")
    ] = None
    folder_id: Annotated[
        str | None, Field(max_length=64, description="The destination folder; none for the root")
    ] = None


class UploadTicket(ApiModel):
    """A presigned POST: send ``fields`` as form fields, then the file as the last field, ``file``."""

    upload_id: str
    url: str
    fields: dict[str, str]
    expires_at: datetime


# -- recall --------------------------------------------------------------------------------------

MAX_QUERY_LENGTH = 4000
MAX_RECALL_LIMIT = 25
DEFAULT_RECALL_LIMIT = 9


class RecallRequest(ApiModel):
    query: Annotated[
        str,
        StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_QUERY_LENGTH),
        # repr=False: Powertools logs a route's arguments at debug level, and queries are never logged.
        Field(
            description="The question or the agent turn's prompt (1-4000 characters after trimming)",
            repr=False,
        ),
    ]
    limit: Annotated[int, Field(ge=1, le=MAX_RECALL_LIMIT, description="At most this many excerpts")] = (
        DEFAULT_RECALL_LIMIT
    )


class RecallItem(ApiModel):
    """One excerpt as it appears in ``context``: sanitised, with its source title."""

    title: str = Field(repr=False)
    content: str = Field(repr=False)
    score: float | None = None


class RecallResponse(ApiModel):
    items: list[RecallItem]
    context: str = Field(
        description='The block a hook adds to the turn ("" when there are no items)', repr=False
    )
    scope_size: int = Field(description="How many knowledge bases were searched")
    discarded: bool = Field(description="The scope changed during the search and the result was dropped")


class ErrorBody(ApiModel):
    code: str
    message: str
    details: object | None = None


class ErrorResponse(ApiModel):
    error: ErrorBody
