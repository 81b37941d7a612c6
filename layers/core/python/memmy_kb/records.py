"""Stored records: the items of the service's table as typed values (docs/architecture.md, "Data").

They are the vocabulary the domain and the storage adapters share, so this module sits below both and
imports nothing of the service. API bodies are different types (``memmy_kb.api.models``): a record holds
what clients never see, the MemOS ids first of all.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Role = Literal["owner", "reader"]
TeamRole = Literal["owner", "admin", "member"]
MembershipState = Literal["invited", "member"]
UploadState = Literal["pending", "submitting", "submitted", "rejected", "expired"]
CleanupTarget = Literal["kb", "folder", "files", "team"]
CleanupState = Literal["pending", "failed"]
ActivityKind = Literal[
    "shared",
    "revoked",
    "left",
    "renamed",
    "uploaded",
    "replaced",
    "file_deleted",
    "folder_deleted",
    # A team's log (``ACTIVITY#TEAM#<team>``), and a KB's for its team shares (docs/teams.md).
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


def utc_now() -> datetime:
    return datetime.now(UTC)


class _Record(BaseModel):
    """A stored record's model: its validator is built when the record type is first used, not at import.

    Every handler imports this module and uses a few of its records; recall reads grants and KB names
    only, and building the other records' validators at import was about a tenth of its cold start.
    """

    model_config = ConfigDict(defer_build=True)


class KnowledgeBaseRecord(_Record):
    """The KB's META item."""

    kb_id: str
    name: str
    owner_id: str
    # The owner's display name when the KB was made, shown if the owner has no profile yet.
    owner_name: str | None = None
    memos_kb_id: str
    # The MemOS backend (project) holding it, chosen at create; None on KBs made before there were
    # several: the default backend (``memmy_kb.domain.engine.backend_of``).
    memos_backend: str | None = None
    member_count: int = 0
    # The readers' user ids and a counter bumped by every share and revoke, kept on META in the same
    # writes as ``member_count``: deleting the KB removes exactly these grants, conditioned on the
    # counter, so a share that lands meanwhile cannot leave a grant behind (GSI1 may lag).
    readers: frozenset[str] = frozenset()
    member_version: int = 0
    created_at: datetime
    # Capacity (``KbCapacity``): the files recorded in the KB and their bytes, kept
    # by the ingest's record transaction and the file and folder delete transactions.
    file_count: int = 0
    bytes_used: int = 0
    # The teams it is shared with (docs/teams.md), kept with each team's ``kbs`` in one transaction.
    teams: frozenset[str] = frozenset()


class GrantRecord(_Record):
    """A user's access to a KB: the single authority for access and recall scope."""

    user_id: str
    kb_id: str
    role: Role
    recall: bool
    memos_kb_id: str
    memos_backend: str | None = None  # the KB's, copied (recall routes by it without reading META)
    owner_id: str
    granted_at: datetime


class ProfileRecord(_Record):
    user_id: str
    display_name: str
    email: str | None = None
    phone: str | None = None
    updated_at: datetime
    # The user's own choices: whether KBs shared with them from now on arrive with recall on (the seed's
    # behaviour, so the default), and the owners whose shares they refuse (blocking is not observable).
    recall_new_shares: bool = True
    blocked: frozenset[str] = frozenset()
    # The display name the user already knew for a blocked id when blocking it (the owner of a KB shared
    # with them), by id; ids blocked without one are absent. Never looked up from the directory later, so
    # the block list says nothing about who has an account. Profiles written before it have none.
    blocked_names: dict[str, str] = Field(default_factory=dict)
    # The teams whose invitations the user refuses (docs/teams.md); a team's owner is blocked in ``blocked``.
    blocked_teams: frozenset[str] = frozenset()


class FolderRecord(_Record):
    """An app-side folder (MemOS has none): ``parent_id`` None is the KB's root."""

    kb_id: str
    folder_id: str
    name: str
    parent_id: str | None = None
    created_at: datetime


class FileRecord(_Record):
    """A file MemOS accepted; its name and status are read live from MemOS, the folder is ours.

    ``version`` counts the contents the file has had (1 for the first upload; a replace's record moves it
    on, conditioned on the version it replaced); ``size_bytes``, ``sha256`` (of the bytes the ingest
    verified; None on files recorded before hashes were kept), ``upload_id`` and ``updated_at`` are the
    current version's. ``replacing`` names the upload of a replace in flight: one at a time per file.
    """

    kb_id: str
    file_id: str
    memos_file_id: str
    name: str
    folder_id: str | None = None
    size_bytes: int
    upload_id: str
    uploaded_at: datetime
    version: int = 1
    sha256: str | None = None
    updated_at: datetime | None = None
    replacing: str | None = None
    # ``sync`` when a folder sync uploaded it (docs/sync.md): any sync of the KB may replace or delete it.
    origin: str | None = None


class UploadRecord(_Record):
    """One presigned upload, from the POST that issued it to MemOS accepting (or us rejecting) the object.

    ``pending``: waiting for the object; ``submitting``: verified, MemOS call in flight (a crash here is
    what the reconciler looks for); ``submitted``: the FILE item exists; ``rejected``: bytes
    deleted, ``reason`` says why; ``expired``: never arrived.
    """

    kb_id: str
    upload_id: str
    owner_id: str
    # The KB's MemOS id, copied from the owner's grant when the upload is issued (the ingest needs no read
    # of META for it); None on uploads issued before it was kept.
    memos_kb_id: str | None = None
    memos_backend: str | None = None  # the KB's, copied from the grant with ``memos_kb_id``
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
    # The SHA-256 the client declared for the bytes (a mismatch rejects them), and the one the ingest
    # computed, kept by the hold so that whoever records the file has it.
    sha256: str | None = None
    content_sha256: str | None = None
    # A replace (docs/uploads.md, "Replacing a file"): the file whose next version these bytes are, the
    # version they replace, that version's size and upload (whose bytes go once this one is recorded). Its
    # bytes are checked against the file's name; ``memos_file_id`` is the file's from the start.
    replaces: str | None = None
    if_version: int | None = None
    replaced_size: int | None = None
    replaced_upload: str | None = None
    # ``sync`` when a folder sync asked for it; the file it becomes keeps it (``FileRecord.origin``).
    origin: str | None = None

    @property
    def growth(self) -> int:
        """The bytes a replace adds to its KB (0 for a new file, or a replace that shrinks the file): held
        on META from the hold until the replace is recorded or given up, so MemOS is never handed a
        version the KB has no room for."""
        if self.replaces is None:
            return 0
        return max(0, self.size_bytes - (self.replaced_size or 0))


class CleanupRecord(_Record):
    """The outbox item of one deletion (``CLEANUP#<id>/CLEANUP``): what is left to clean up in MemOS and S3.

    Written in the same transaction that made the thing invisible; deleted by the cleanup state machine
    when the cleanup is done. ``target`` says what was deleted: a whole KB (everything under its MemOS id
    and its S3 prefixes), a folder (its subtree, swept in bounded transactions whose files are noted in
    the item's parts), or files (``memos_file_ids``, ``upload_ids`` and ``file_ids`` here). ``next_attempt_at`` is when
    the reconciler may (re)start it if it is still here; ``attempts`` counts executions started.
    """

    cleanup_id: str
    target: CleanupTarget
    kb_id: str
    memos_kb_id: str
    memos_backend: str | None = None  # the KB's: the backend the cleanup calls
    owner_id: str
    folder_id: str | None = None
    memos_file_ids: list[str] = []
    upload_ids: list[str] = []
    # The files whose fingerprints go (items written before they were kept name none: the reconciler's
    # sweep removes those).
    file_ids: list[str] = []
    state: CleanupState = "pending"
    attempts: int = 1
    created_at: datetime
    next_attempt_at: datetime
    last_error: str | None = None


class CleanupPart(_Record):
    """Files a folder sweep removed from the table in one transaction, still to clean up (``CLEANUP#<id>/PART#<part>``)."""

    cleanup_id: str
    part_id: str
    memos_file_ids: list[str] = []
    upload_ids: list[str] = []
    file_ids: list[str] = []


class ActivityRecord(_Record):
    """One entry of a KB's activity log (``ACTIVITY#<kb>/<at>#<id>``), kept until ``expires_at`` (TTL).

    ``actor_id`` did it; ``subject`` is what it was done to (a user id for shares, revokes, leaves and
    blocks; a file or folder id, or the new name, otherwise).
    """

    kb_id: str
    activity_id: str
    kind: ActivityKind
    actor_id: str
    subject: str
    at: datetime
    expires_at: int


class CountCap(_Record):
    """A counter a write must stay under (``LIMIT#<name>``): e.g. new members of one owner on one day."""

    name: str
    limit: int
    expires_at: int


class RequestRecord(_Record):
    """One ``Idempotency-Key`` of one caller for one operation (``IDEMPOTENCY#<operation>/<key_hash>``).

    Written ``in_progress`` by the first write of the request it guards and completed, with the answer's
    ``result``, by its last (``memmy_kb.domain.knowledge_bases.manage``: the create intent and the create
    transaction), so remembering the request costs no round trip of its own. ``attempt`` names the run
    that holds it; a run that died is taken over once ``in_progress_until`` (epoch seconds) has passed.
    """

    operation: str
    key_hash: str
    payload_hash: str
    attempt: str
    status: Literal["in_progress", "completed"] = "in_progress"
    in_progress_until: int
    expires_at: int
    result: str | None = None


class KbCapacity(_Record):
    """What one KB may hold: files recorded in it and their bytes, counted on META (``file_count``,
    ``bytes_used``). Issuing an upload checks it, the ingest's record transaction holds it."""

    max_files: int = 1000
    max_bytes: int = 2 * 1024**3


class WindowCount(_Record):
    """One more event in window ``window`` of a windowed counter (``LIMIT#<name>``), for a transaction:
    allowed while that window holds fewer than ``room`` and the previous one still holds ``previous`` at
    most (what the sliding estimate was computed from)."""

    name: str
    window: int
    room: int
    previous: int
    expires_at: int


class ShareReads(_Record):
    """What a share reads before its transaction, in one batched read (``KnowledgeBaseStore.read_share``)."""

    owner_grant: GrantRecord | None = None
    kb: KnowledgeBaseRecord | None = None
    # The accounts holding a verified claim on the email or phone asked for (empty: nobody).
    claimants: frozenset[str] = frozenset()
    # The profile of the user id asked for, when it has one.
    profile: ProfileRecord | None = None
    # The attempt counter's count in the window asked for and in the one before it.
    attempts: tuple[int, int] = (0, 0)


class TeamKb(_Record):
    """A KB as a team's META lists it: what a member's recall needs without reading the KB's grants."""

    memos_kb_id: str
    memos_backend: str | None = None
    owner_id: str
    shared_by: str
    shared_at: datetime


class TeamRecord(_Record):
    """A team's META item (docs/teams.md, "Data")."""

    team_id: str
    name: str
    owner_id: str
    member_count: int = 0  # members, admins and the owner; invitations are counted apart
    invited_count: int = 0
    kbs: dict[str, TeamKb] = Field(default_factory=dict)
    kb_count: int = 0
    created_at: datetime
    version: int = 0  # bumped by every change of ``kbs``


class MembershipRecord(_Record):
    """One user's place in one team (``USER#<user>`` / ``TEAM#<team>``): an invitation until accepted."""

    user_id: str
    team_id: str
    state: MembershipState
    role: TeamRole = "member"
    invited_by: str | None = None
    invited_at: datetime | None = None
    joined_at: datetime | None = None
    # The member's "recall new shares" when they joined, and their own choices for the team's KBs.
    recall_default: bool = True
    recall: dict[str, bool] = Field(default_factory=dict)

    def recalls(self, kb_id: str) -> bool:
        """Whether this member's recall covers the team's KB ``kb_id``: their choice, else their default."""
        return self.recall.get(kb_id, self.recall_default)
