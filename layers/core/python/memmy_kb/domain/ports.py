"""The ports: what the domain needs from storage, MemOS and the upload bucket, as ``typing.Protocol``s.

Domain functions take these, never a concrete adapter, so unit tests hand in small typed fakes and the
handlers hand in the DynamoDB, MemOS and S3 adapters (``memmy_kb.composition``). One protocol per
aggregate of the table: knowledge bases and their grants, a KB's contents (folders, files, uploads), and
profiles. The values they carry and the errors they raise are the domain's own: writes report what
stopped them with the storage errors of ``memmy_kb.domain.storage`` (``AlreadyExists``, ``ItemMissing``,
``ConditionFailed``, ``RequestSeen``), the knowledge engine speaks ``memmy_kb.domain.engine``; the adapters
translate into these, and the domain translates them into refusals.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Literal, Protocol

from memmy_kb.domain.ports_replacement import ReplacementWrites

if TYPE_CHECKING:
    # Only signatures name these: a function taking a port (recall: ``GrantReader``) imports no model for it.
    from memmy_kb.domain.engine import EngineBackend, EngineFile, FileInput, SearchHit
    from memmy_kb.domain.storage import ObjectInfo, PresignedPost
    from memmy_kb.records import (
        ActivityRecord,
        CleanupPart,
        CleanupRecord,
        CountCap,
        FileRecord,
        FolderRecord,
        GrantRecord,
        KbCapacity,
        KnowledgeBaseRecord,
        ProfileRecord,
        RequestRecord,
        ShareReads,
        UploadRecord,
        WindowCount,
    )

IdentifierKind = Literal["email", "phone"]


class GrantReader(Protocol):
    """The reads every access decision rests on (strongly consistent)."""

    def get_grant(self, user_id: str, kb_id: str) -> GrantRecord | None: ...

    def query_grants(self, user_id: str) -> list[GrantRecord]: ...


class RecallSources(GrantReader, Protocol):
    """What attributed recall reads: the grants, and the KBs' names with their owners' profiles."""

    def batch_get_kbs_and_profiles(
        self, kb_ids: Iterable[str], user_ids: Iterable[str]
    ) -> tuple[dict[str, KnowledgeBaseRecord], dict[str, ProfileRecord]]: ...


class KnowledgeBaseStore(GrantReader, Protocol):
    """KB META items and the grants on them: the single authority for access and recall scope."""

    def put_kb_with_owner_grant(
        self,
        kb: KnowledgeBaseRecord,
        owner_grant: GrantRecord,
        *,
        max_owned: int,
        request: RequestRecord | None,
    ) -> None: ...

    def get_kb(self, kb_id: str) -> KnowledgeBaseRecord | None: ...

    def batch_get_kbs_and_profiles(
        self, kb_ids: Iterable[str], user_ids: Iterable[str]
    ) -> tuple[dict[str, KnowledgeBaseRecord], dict[str, ProfileRecord]]: ...

    def read_share(
        self,
        owner_id: str,
        kb_id: str,
        *,
        identifier: tuple[IdentifierKind, str] | None,
        user_id: str | None,
        counter: tuple[str, int],
    ) -> ShareReads: ...

    def update_kb_name(self, kb_id: str, owner_id: str, name: str) -> KnowledgeBaseRecord: ...

    def update_grant_recall(self, user_id: str, kb_id: str, enabled: bool) -> GrantRecord: ...

    def put_reader_grant(
        self,
        grant: GrantRecord,
        *,
        max_readers: int,
        daily: CountCap,
        activity: ActivityRecord,
        # Optional because the share really omits it: when the attempt was already counted apart (its
        # window filled since the read, or the share is retried after that), the grant is written
        # without counting it again.
        attempts: WindowCount | None = None,
    ) -> None: ...

    def delete_reader_grant(self, kb_id: str, user_id: str, *, activity: ActivityRecord) -> None: ...

    def query_kb_members(self, kb_id: str) -> list[GrantRecord]: ...


class ContentStore(ReplacementWrites, Protocol):
    """A KB's folders, files and uploads (a replace's writes: ``ReplacementWrites``)."""

    def query_kb_items(
        self, kb_id: str
    ) -> tuple[list[FolderRecord], list[FileRecord], list[UploadRecord]]: ...

    def query_folders(self, kb_id: str) -> list[FolderRecord]: ...

    def get_folder(self, kb_id: str, folder_id: str) -> FolderRecord | None: ...

    def get_file(self, kb_id: str, file_id: str) -> FileRecord | None: ...

    def get_upload(self, kb_id: str, upload_id: str) -> UploadRecord | None: ...

    def put_folder(self, folder: FolderRecord) -> None: ...

    def update_folder(
        self, folder: FolderRecord, previous: FolderRecord, ancestors: list[FolderRecord]
    ) -> None: ...

    def update_file_folder(self, kb_id: str, file_id: str, folder_id: str | None) -> None: ...

    def put_upload(self, upload: UploadRecord, *, capacity: KbCapacity) -> None: ...

    def update_upload_submitting(
        self,
        kb_id: str,
        upload_id: str,
        *,
        attempt_id: str,
        now: datetime,
        keep_until: int,
        owner_id: str,
        size: int,
        capacity: KbCapacity,
        sha256: str | None = None,
    ) -> None: ...

    def update_upload_released(
        self, kb_id: str, upload_id: str, *, attempt_id: str, expires_at: int
    ) -> None: ...

    def update_upload_rejected(
        self, kb_id: str, upload_id: str, *, reason: str, expires_at: int, attempt_id: str | None
    ) -> None: ...

    def put_file_for_upload(
        self,
        file: FileRecord,
        *,
        owner_id: str,
        attempt_id: str,
        expires_at: int,
        capacity: KbCapacity,
        activity: ActivityRecord,
    ) -> FileRecord: ...

    def update_upload_expired(self, kb_id: str, upload_id: str, *, expires_at: int) -> None: ...

    def delete_decided_upload(self, kb_id: str, upload_id: str) -> None:
        """Delete a rejected or expired upload's record (nothing when there is none); ConditionFailed("upload")
        when it is in any other state."""
        ...

    def query_upload_queue(
        self, state: Literal["pending", "submitting"], before: datetime, limit: int
    ) -> list[UploadRecord]: ...



class CreateIntents(Protocol):
    """A KB create's intent while MemOS is called (with its KBs-owned check and Idempotency-Key claim), and
    the reconciler's read of the intents nobody finished (``memmy_kb.adapters.dynamodb.intents``)."""

    def put_create_intent(
        self,
        kb_id: str,
        memos_name: str,
        started_at: datetime,
        expires_at: int,
        *,
        owner_id: str,
        max_owned: int,
        request: RequestRecord | None,
        now: int,
    ) -> None: ...

    def delete_create_intent(self, kb_id: str) -> None: ...

    def abandon_create(self, kb_id: str, *, request: RequestRecord | None, keep_intent: bool) -> None: ...

    def query_stale_intents(self, before: datetime, limit: int) -> list[tuple[str, str]]: ...


class CleanupStore(Protocol):
    """A delete's transactions with their outbox item, the outbox the cleanup works through, and the
    reconciler's queue of due cleanups and residue cursor (``memmy_kb.adapters.dynamodb.cleanups``)."""

    def delete_kb_with_outbox(
        self, kb: KnowledgeBaseRecord, reader_ids: Iterable[str], cleanup: CleanupRecord
    ) -> None: ...

    def delete_file_with_outbox(
        self,
        file: FileRecord,
        owner_id: str,
        cleanup: CleanupRecord,
        *,
        activity: ActivityRecord,
    ) -> None: ...

    def delete_folder_with_outbox(
        self,
        folder: FolderRecord,
        owner_id: str,
        cleanup: CleanupRecord,
        *,
        activity: ActivityRecord,
    ) -> None: ...

    def delete_files_with_part(self, part: CleanupPart, files: list[FileRecord]) -> None: ...

    def delete_folders(self, folders: list[FolderRecord]) -> None: ...

    def get_cleanup(self, cleanup_id: str) -> tuple[CleanupRecord | None, list[CleanupPart]]: ...

    def delete_cleanup_parts(self, cleanup_id: str, part_ids: list[str]) -> None: ...

    def delete_kb_items(self, kb_id: str, limit: int) -> bool: ...

    def query_due_cleanups(self, now: datetime, limit: int) -> list[CleanupRecord]: ...

    def update_cleanup_restarted(
        self, cleanup: CleanupRecord, next_attempt_at: datetime
    ) -> CleanupRecord: ...

    def query_kbs_after(self, cursor: str | None, limit: int) -> list[KnowledgeBaseRecord]: ...

    def get_cursor(self, name: str) -> str | None: ...

    def put_cursor(self, name: str, position: str | None) -> None: ...


class CleanupExecutions(Protocol):
    """The cleanup state machine (implemented by ``memmy_kb.adapters.stepfunctions.CleanupStateMachine``)."""

    def start(self, cleanup_id: str, execution_name: str) -> None: ...


class UploadRequeue(Protocol):
    """Hands an upload's object to the ingest again, as S3's notification would.

    Implemented in ``memmy_kb.adapters.sqs``.
    """

    def requeue(self, object_key: str) -> None: ...


class ProfileStore(Protocol):
    """Directory profiles and the email/phone lookups that point at them."""

    def get_profile(self, user_id: str) -> ProfileRecord | None: ...

    def batch_get_profiles(self, user_ids: Iterable[str]) -> dict[str, ProfileRecord]: ...

    def get_lookup_claimants(self, kind: IdentifierKind, value: str) -> frozenset[str]: ...

    def put_profile_with_lookups(
        self, profile: ProfileRecord, previous: ProfileRecord | None
    ) -> ProfileRecord: ...

    def update_profile_settings(
        self, user_id: str, *, recall_new_shares: bool, now: datetime
    ) -> ProfileRecord: ...

    def add_blocked(
        self, user_id: str, blocked_id: str, *, name: str | None, max_blocked: int, now: datetime
    ) -> ProfileRecord: ...

    def remove_blocked(self, user_id: str, blocked_id: str, *, now: datetime) -> ProfileRecord: ...


class ActivityLog(Protocol):
    """Each KB's activity log, newest first (implemented in ``memmy_kb.adapters.dynamodb.activity``)."""

    def put_activity(self, record: ActivityRecord) -> None: ...

    def query_activity(
        self, kb_id: str, *, limit: int, cursor: str | None, now: int
    ) -> tuple[list[ActivityRecord], str | None]: ...


class RateCounters(Protocol):
    """Windowed counts for the rate limits (one conditional update per event)."""

    def count_in_window(
        self, name: str, window: int, *, cap: int, expires_at: int
    ) -> tuple[int, int] | None: ...


class KnowledgeEngine(Protocol):
    """MemOS, as far as the domain uses it (implemented by ``memmy_kb.adapters.memos.client.MemosClient``)."""

    def create_knowledgebase(self, name: str, description: str | None = None) -> str: ...

    def delete_knowledgebase(self, kb_id: str, *, delete_all: bool) -> None: ...

    def add_knowledgebase_files(self, kb_id: str, files: list[FileInput]) -> list[EngineFile]: ...

    # The file's next version under the same id (docs/memos.md, "Updating a file").
    def update_knowledgebase_file(self, file_id: str, file: FileInput) -> EngineFile: ...

    def get_knowledgebase_files(self, file_ids: list[str]) -> list[EngineFile]: ...

    def iter_knowledgebase_files(
        self, kb_id: str, *, page_size: int = 20, max_pages: int = 10_000
    ) -> Iterator[EngineFile]: ...

    def delete_knowledgebase_files(self, file_ids: list[str]) -> None: ...

    def search_memory(
        self, user_id: str, query: str, kb_ids: list[str], *, limit: int = 9, relativity: float | None = None
    ) -> list[SearchHit]: ...


class KnowledgeEngines(Protocol):
    """The pool of MemOS backends (projects), each with its own key and KB cap
    (implemented by ``memmy_kb.adapters.memos.backends.MemosBackends``).

    A KB lives in the backend recorded on it at create (``backend_of(record.memos_backend)``) and every
    MemOS call about it goes to ``engine(that id)``.
    """

    def backends(self) -> list[EngineBackend]:
        """The backends configured now (re-read within the secret cache's lifetime), in order."""
        ...

    def engine(self, backend_id: str) -> KnowledgeEngine:
        """The engine of one backend; ``MemosBackendUnknown`` when none has that id."""
        ...


class BackendSlots(Protocol):
    """One counter per MemOS backend of the KBs placed there, with the KBs' ids (``BACKEND#<id>``).

    ``claim`` is conditional (``used < max_kbs``), so concurrent creates never place more than
    ``max_kbs`` KBs on a backend; ``release`` frees a KB's slot once, however often it is called.
    """

    def claim_slot(self, backend_id: str, kb_id: str, *, max_kbs: int) -> bool:
        """Take a slot for ``kb_id``; False when the backend is full."""
        ...

    def release_slot(self, backend_id: str, kb_id: str) -> None: ...

    def slot_of(self, kb_id: str, backend_ids: list[str]) -> str | None:
        """The backend of ``backend_ids`` ``kb_id``'s slot was taken on (None: it holds none there)."""
        ...

    def used_slots(self, backend_ids: list[str]) -> dict[str, int]:
        """The KBs placed on each backend now (0 for a backend never used)."""
        ...


class UploadObjects(Protocol):
    """The upload bucket (implemented by ``memmy_kb.adapters.s3.UploadStorage``)."""

    def presign_post(
        self, key: str, *, size_bytes: int, content_type: str, expires_in: int
    ) -> PresignedPost: ...

    def presign_get(self, key: str, *, expires_in: int) -> str: ...

    def head(self, key: str) -> ObjectInfo | None: ...

    def read_start(self, key: str, length: int) -> tuple[ObjectInfo, bytes] | None: ...

    def read_range(self, info: ObjectInfo, start: int, length: int) -> bytes: ...

    def iter_chunks(self, info: ObjectInfo, chunk_size: int = ...) -> Iterator[bytes]: ...

    def copy(self, info: ObjectInfo, destination_key: str) -> None: ...

    def delete(self, key: str) -> None: ...

    def delete_prefix(self, prefix: str, limit: int) -> bool: ...

    def list_keys(self, *, start_after: str | None, limit: int) -> list[str]:
        """Up to ``limit`` keys of the bucket in key order, after ``start_after`` (from the start: None)."""
        ...
