"""The API's request and response bodies: what clients send and see (docs/openapi.json).

They differ from the stored records (``memmy_kb.records``) on purpose: the MemOS ids, for one, never
leave the service. Each response body is built from what the domain returns by a ``from_*`` classmethod,
so the mapping from domain to wire lives here and nowhere else.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, RootModel, StringConstraints

from memmy_kb.domain.display import hidden_characters, shown
from memmy_kb.domain.files import FileEntry, FileState, Listing
from memmy_kb.domain.recall import DEFAULT_RECALL_LIMIT, RecallResult
from memmy_kb.records import ActivityKind, FolderRecord, ProfileRecord, Role

if TYPE_CHECKING:
    # Only the ``from_*`` signatures name these: a function imports the domain modules its routes use.
    from memmy_kb.domain.activity import ActivityPage
    from memmy_kb.domain.knowledge_bases import KnowledgeBaseView
    from memmy_kb.domain.sharing import MemberView
    from memmy_kb.domain.uploads import IssuedUpload

MAX_NAME_LENGTH = 100


def _clean_name(value: str) -> str:
    value = value.strip()
    if not 1 <= len(value) <= MAX_NAME_LENGTH:
        raise ValueError(f"must be 1 to {MAX_NAME_LENGTH} characters after trimming")
    if hidden_characters(value):
        raise ValueError("must not contain control, invisible or unassigned characters")
    return value


Name = Annotated[str, Field(min_length=1, max_length=1000), AfterValidator(_clean_name)]


# -- API bodies ----------------------------------------------------------------------------------


class ApiModel(BaseModel):
    # Validators are built when a body is first read or written, not at import: a function serves a few
    # of these routes, and the import is on every cold start.
    model_config = ConfigDict(extra="ignore", defer_build=True)


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

    @classmethod
    def from_view(cls, view: MemberView) -> Member:
        return cls(
            user_id=view.grant.user_id,
            display_name=shown(view.display_name) or view.grant.user_id,
            role=view.grant.role,
            shared_at=view.grant.granted_at,
        )


class MemberList(ApiModel):
    items: list[Member]

    @classmethod
    def from_views(cls, views: list[MemberView]) -> MemberList:
        return cls(items=[Member.from_view(v) for v in views])


class Folder(ApiModel):
    id: str
    name: str
    parent_id: str | None = None

    @classmethod
    def from_record(cls, record: FolderRecord) -> Folder:
        return cls(id=record.folder_id, name=shown(record.name), parent_id=record.parent_id)


class File(ApiModel):
    id: str
    name: str
    status: FileState
    size_bytes: int | None = None
    folder_id: str | None = None
    reason: str | None = None
    upload_id: str | None = Field(default=None, description="The upload this file came from")

    @classmethod
    def from_entry(cls, entry: FileEntry) -> File:
        # The name may come live from MemOS, which keeps whatever it was given.
        return cls.model_validate(entry, from_attributes=True).model_copy(update={"name": shown(entry.name)})


class FileListing(ApiModel):
    folders: list[Folder]
    files: list[File]
    refresh_after_seconds: int | None = None

    @classmethod
    def from_listing(cls, listing: Listing) -> FileListing:
        return cls(
            folders=[Folder.from_record(f) for f in listing.folders],
            files=[File.from_entry(f) for f in listing.files],
            refresh_after_seconds=listing.refresh_after_seconds,
        )


class CreateFolderRequest(ApiModel):
    name: Name
    parent_id: str | None = None


class UpdateFolderRequest(ApiModel):
    """``parent_id`` given as null moves the folder to the root; left out, it stays where it is."""

    name: Name | None = None
    parent_id: str | None = None


class MoveFileRequest(ApiModel):
    folder_id: str | None = Field(description="The destination folder; null for the root")


class CleanupAccepted(ApiModel):
    """A deletion accepted: gone in Memmy already, purged from MemOS and storage in the background."""

    cleanup_id: str


class Owner(ApiModel):
    user_id: str
    display_name: str
    contact: str | None = Field(
        default=None, description="The owner's verified phone or email, masked (138****8000, a***@example.com)"
    )


class KnowledgeBase(ApiModel):
    id: str
    name: str
    role: Role
    recall: bool
    owner: Owner
    created_at: datetime

    @classmethod
    def from_view(cls, view: KnowledgeBaseView) -> KnowledgeBase:
        return cls(
            id=view.kb.kb_id,
            name=shown(view.kb.name),
            role=view.grant.role,
            recall=view.grant.recall,
            owner=Owner(
                user_id=view.kb.owner_id,
                display_name=shown(view.owner_name) or view.kb.owner_id,
                contact=view.owner_contact,
            ),
            created_at=view.kb.created_at,
        )


class KnowledgeBaseList(ApiModel):
    items: list[KnowledgeBase]

    @classmethod
    def from_views(cls, views: list[KnowledgeBaseView]) -> KnowledgeBaseList:
        return cls(items=[KnowledgeBase.from_view(v) for v in views])


class Me(ApiModel):
    user_id: str
    display_name: str
    email: str | None = None
    phone: str | None = None
    recall_new_shares: bool = Field(
        default=True, description="Whether KBs shared with you from now on arrive with recall on"
    )

    @classmethod
    def from_record(cls, profile: ProfileRecord) -> Me:
        return cls(
            user_id=profile.user_id,
            display_name=shown(profile.display_name) or profile.user_id,
            email=profile.email,
            phone=profile.phone,
            recall_new_shares=profile.recall_new_shares,
        )


class UpdateMeRequest(ApiModel):
    recall_new_shares: Annotated[bool, Field(strict=True)]


def _clean_user_id(value: str) -> str:
    if hidden_characters(value):
        raise ValueError("must not contain control, invisible or unassigned characters")
    return value


class BlockRequest(ApiModel):
    user_id: Annotated[str, Field(min_length=1, max_length=256), AfterValidator(_clean_user_id)]


class BlockedUser(ApiModel):
    user_id: str
    display_name: str | None = None


class BlockedList(ApiModel):
    items: list[BlockedUser]

    @classmethod
    def from_pairs(cls, pairs: list[tuple[str, str | None]]) -> BlockedList:
        return cls(items=[BlockedUser(user_id=u, display_name=shown(n) if n else None) for u, n in pairs])


class Activity(ApiModel):
    id: str
    kind: ActivityKind
    actor_id: str
    subject: str
    at: datetime


class ActivityList(ApiModel):
    items: list[Activity]
    next_cursor: str | None = None

    @classmethod
    def from_page(cls, page: ActivityPage) -> ActivityList:
        return cls(
            items=[
                Activity(id=r.activity_id, kind=r.kind, actor_id=r.actor_id, subject=shown(r.subject), at=r.at)
                for r in page.items
            ],
            next_cursor=page.next_cursor,
        )


# -- uploads -------------------------------------------------------------------------------------

MAX_FILENAME_LENGTH = 255


def _clean_filename(value: str) -> str:
    value = value.strip()
    if not 1 <= len(value) <= MAX_FILENAME_LENGTH:
        raise ValueError(f"must be 1 to {MAX_FILENAME_LENGTH} characters after trimming")
    if "/" in value or "\\" in value or value in (".", ".."):
        raise ValueError("must be a file name, not a path")
    # The bidi overrides that make "exe\u202efdp.pdf" look like a PDF are among the hidden characters.
    if hidden_characters(value):
        raise ValueError("must not contain control, invisible or unassigned characters")
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

    @classmethod
    def from_issued(cls, issued: IssuedUpload) -> UploadTicket:
        return cls(
            upload_id=issued.upload.upload_id,
            url=issued.post.url,
            fields=issued.post.fields,
            expires_at=issued.post_expires_at,
        )


# -- recall --------------------------------------------------------------------------------------

MAX_QUERY_LENGTH = 4000
MAX_RECALL_LIMIT = 25


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
    limit: Annotated[
        int, Field(strict=True, ge=1, le=MAX_RECALL_LIMIT, description="At most this many excerpts")
    ] = (
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

    @classmethod
    def from_result(cls, result: RecallResult) -> RecallResponse:
        return cls(
            items=[RecallItem(title=e.title, content=e.content, score=e.score) for e in result.block.excerpts],
            context=result.block.text,
            scope_size=result.scope_size,
            discarded=result.discarded,
        )


class ErrorBody(ApiModel):
    code: str
    message: str
    details: object | None = None


class ErrorResponse(ApiModel):
    error: ErrorBody


class GatewayRefusal(ApiModel):
    """What API Gateway's JWT authorizer answers itself (401), before any function runs."""

    message: str


class UnauthorizedResponse(RootModel[ErrorResponse | GatewayRefusal]):
    """A 401: the authorizer's own ``{"message"}`` for a missing or bad token, or our error shape for a
    token whose subject cannot be a Memmy user id."""
