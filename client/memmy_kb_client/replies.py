"""The cloud's replies as the client receives them: one ``TypedDict`` per response schema of the API
(docs/openapi.json), with the schema's name, its fields, and the fields it does not require as
``NotRequired``. ``tests/unit/client/test_replies.py`` reads the document and fails when a field is added,
renamed, dropped or retyped on either side. Types only: nothing here checks a reply at run time (the
client carries no validation library); a reply is trusted to be the shape its route documents."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, NotRequired, TypedDict, TypeGuard

from memmy_kb_client.team_replies import KbTeam, RecallTeam

if TYPE_CHECKING:
    from typing_extensions import TypeIs

Role = Literal["owner", "reader"]
FileStatus = Literal["uploading", "processing", "available", "failed"]


class ErrorBody(TypedDict):
    code: str
    message: str
    details: NotRequired[object | None]


class ErrorResponse(TypedDict):
    """Every error the service answers: ``{"error": {"code", "message", "details"?}}``."""

    error: ErrorBody


class GatewayRefusal(TypedDict):
    """The gateway's own 401 for a missing or bad token."""

    message: str


# A 401: the gateway's refusal, or the error format for a token whose subject cannot be a user id.
UnauthorizedResponse = ErrorResponse | GatewayRefusal


class CleanupAccepted(TypedDict):
    """202 to a delete: the data leaves in the background."""

    cleanup_id: str


class Me(TypedDict):
    """The caller's profile."""

    user_id: str
    display_name: str
    email: NotRequired[str | None]
    phone: NotRequired[str | None]
    recall_new_shares: NotRequired[bool]


class Owner(TypedDict):
    user_id: str
    display_name: str
    contact: NotRequired[str | None]


class KnowledgeBase(TypedDict):
    id: str
    name: str
    role: Role
    recall: bool
    owner: Owner
    created_at: str
    file_count: NotRequired[int]
    bytes_used: NotRequired[int]
    # The teams through which the caller reads it (empty when read directly, or owned).
    teams: NotRequired[list[KbTeam]]


class KnowledgeBaseList(TypedDict):
    items: list[KnowledgeBase]


class Member(TypedDict):
    user_id: str
    display_name: str
    role: Role
    shared_at: str


class MemberList(TypedDict):
    items: list[Member]


class BlockedUser(TypedDict):
    user_id: str
    display_name: NotRequired[str | None]


class BlockedList(TypedDict):
    items: list[BlockedUser]


class Activity(TypedDict):
    id: str
    kind: Literal[
        "shared",
        "revoked",
        "left",
        "renamed",
        "uploaded",
        "replaced",
        "file_deleted",
        "folder_deleted",
        "team_shared",
        "team_unshared",
        "invited",
        "joined",
        "declined",
        "removed",
        "team_left",
        "role_changed",
        "team_renamed",
    ]
    actor_id: str
    subject: str
    at: str


class ActivityList(TypedDict):
    items: list[Activity]
    next_cursor: NotRequired[str | None]


class Replacement(TypedDict):
    """A replace of a file's content in flight (``uploading``) or ``failed``, shown beside the file."""

    upload_id: str
    status: Literal["uploading", "failed"]
    reason: NotRequired[str | None]
    reason_code: NotRequired[str | None]


class File(TypedDict):
    """A file of a knowledge base, or an upload not (or never) a file yet (``version`` null)."""

    id: str
    name: str
    status: FileStatus
    size_bytes: NotRequired[int | None]
    folder_id: NotRequired[str | None]
    reason: NotRequired[str | None]
    reason_code: NotRequired[str | None]
    upload_id: NotRequired[str | None]
    version: NotRequired[int | None]
    sha256: NotRequired[str | None]
    updated_at: NotRequired[str | None]
    replacement: NotRequired[Replacement | None]
    origin: NotRequired[Literal["sync"] | None]


class Folder(TypedDict):
    id: str
    name: str
    parent_id: NotRequired[str | None]


class FileListing(TypedDict):
    """One folder's listing: its subfolders and its files (and uploads)."""

    folders: list[Folder]
    files: list[File]
    refresh_after_seconds: NotRequired[int | None]


class UploadTicket(TypedDict):
    """A presigned POST for one upload's bytes, straight to storage."""

    upload_id: str
    url: str
    fields: dict[str, str]
    expires_at: str


class ReplacementTicket(TypedDict):
    """A presigned POST for a file's new content (201)."""

    status: NotRequired[Literal["issued"]]
    file_id: str
    replaces_version: int
    upload_id: str
    url: str
    fields: dict[str, str]
    expires_at: str


class ReplacementUnchanged(TypedDict):
    """200: the bytes offered are the file's current version's; nothing to send."""

    status: NotRequired[Literal["unchanged"]]
    file_id: str
    version: int


# What a request to replace a file's content gets.
ReplacementAnswer = ReplacementTicket | ReplacementUnchanged


def unchanged(answer: ReplacementAnswer) -> TypeIs[ReplacementUnchanged]:
    """Did the service answer ``unchanged`` (else ``answer`` is a ticket)?"""
    return answer.get("status") == "unchanged"


def issued(answer: ReplacementAnswer) -> TypeGuard[ReplacementTicket]:
    """Does ``answer`` say ``issued`` in so many words (a ticket to send the bytes with)?"""
    return answer.get("status") == "issued"


class RecallKb(TypedDict):
    id: str
    name: str


class RecallOwner(TypedDict):
    name: str
    contact: NotRequired[str | None]


class RecallGroupKb(TypedDict):
    id: str
    name: str
    owner: NotRequired[RecallOwner | None]
    # Set when the caller reads this KB only through a team.
    team: NotRequired[RecallTeam | None]


class RecallFile(TypedDict):
    """The document an excerpt comes from, as the reply sends it (``recall_reply`` reads it warily)."""

    id: str
    name: str
    folder_path: str
    version: int
    knowledge_base_id: str


class RecallItem(TypedDict):
    """One excerpt, with its source: one knowledge base (``knowledge_base``, ``owner``), or the several
    that hold the same text (``knowledge_bases``); its file, or the candidate ``files``."""

    title: str
    content: str
    score: NotRequired[float | None]
    knowledge_base: NotRequired[RecallKb | None]
    owner: NotRequired[RecallOwner | None]
    knowledge_bases: NotRequired[list[RecallGroupKb] | None]
    file: NotRequired[RecallFile | None]
    files: NotRequired[list[RecallFile]]
    # Set when the caller reads the excerpt's KB only through a team (a direct share wins).
    team: NotRequired[RecallTeam | None]


class RecallResponse(TypedDict):
    """``POST /recall``: the excerpts, the block built of them, and how many knowledge bases were searched."""

    items: list[RecallItem]
    context: str
    scope_size: int
    discarded: bool
    partial: NotRequired[bool]


class LoginConfiguration(TypedDict):
    """How a desktop signs in to this cloud."""

    issuer: str
    client_id: str
    audience: str
    scopes: list[str]
    bearer_token: Literal["access_token", "id_token"]
