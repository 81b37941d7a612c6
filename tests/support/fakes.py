"""In-memory fakes of the domain's ports (``memmy_kb.domain.ports``), for unit tests in milliseconds.

The stores (KBs and grants, contents, profiles, activity and counters, deletes with the cleanup outbox,
create intents) share one ``FakeTable``, as the DynamoDB adapters share one table, so that a write can
check another aggregate's item the way the adapters' transactions do (an upload needs the KB's META and
its owner, a folder needs its KB). Each write is written as the adapter's transaction is: every action's
condition is evaluated against the state before the write, the indexes of the failed ones decide which
``memmy_kb.domain.storage`` error (and ``.item``) is raised, and nothing is applied unless all pass.
Like DynamoDB, a transaction that touches one item twice, or more than 100 items, is invalid
(``InvalidTransaction``, not a store error). ``tests/integration/test_store_contract.py`` runs the same
cases against these fakes and the real adapters (moto, the MemOS emulator), so the two cannot drift
apart, and fails when a port has no fake there.

Records go in and come out as copies: a test holding a record cannot change the table behind the store's
back. ``FakeTable.seed`` puts records as they are, for states the stores' writes never produce on their
own (a rejected upload, a grant without its META, a stale ``submitting``).

``FakeKnowledgeEngine`` stands in for MemOS: knowledge bases, files with a settable status, memories
searched by KB, every call counted, and failures injected per method. ``FakeUploadObjects`` is the
upload bucket (ETags, reads pinned to them, deterministic presigned values), ``FakeCleanupExecutions``
the cleanup state machine (one execution per name) and ``FakeUploadRequeue`` the upload queue.
"""

from __future__ import annotations

import hashlib
import itertools
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Final, Literal

from memmy_kb.adapters.memos.client import MAX_SEARCH_LIMIT
from memmy_kb.adapters.memos.errors import family_for_code
from memmy_kb.adapters.s3 import STREAM_CHUNK_BYTES
from memmy_kb.domain.engine import (
    DEFAULT_BACKEND,
    EngineBackend,
    EngineFile,
    FileInput,
    FileStatus,
    MemosBackendUnknown,
    MemosError,
    MemosNotFound,
    SearchHit,
)
from memmy_kb.domain.ports import (
    ActivityLog,
    BackendSlots,
    CleanupExecutions,
    CleanupStore,
    ContentStore,
    CreateIntents,
    GrantReader,
    IdentifierKind,
    KnowledgeBaseStore,
    KnowledgeEngine,
    KnowledgeEngines,
    ProfileStore,
    RateCounters,
    UploadObjects,
    UploadRequeue,
)
from memmy_kb.domain.storage import (
    AlreadyExists,
    ConditionFailed,
    ItemMissing,
    ObjectChanged,
    ObjectInfo,
    PresignedPost,
    RequestSeen,
)
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

__all__ = [
    "EngineMethod",
    "FakeActivityLog",
    "FakeBackendSlots",
    "FakeCleanupExecutions",
    "FakeCleanupStore",
    "FakeContentStore",
    "FakeCreateIntents",
    "FakeEngines",
    "FakeKnowledgeBaseStore",
    "FakeKnowledgeEngine",
    "FakeMemosKnowledgeBase",
    "FakeProfileStore",
    "FakeRateCounters",
    "FakeStores",
    "FakeTable",
    "FakeUploadObjects",
    "FakeUploadRequeue",
    "InvalidTransaction",
    "SearchCall",
    "fake_stores",
    "memos_error",
]

_TRANSACTION_LIMIT: Final = 100
_IDENTIFIER_KINDS: Final[tuple[IdentifierKind, ...]] = ("email", "phone")

# An item's key in the fake table: (family, id, id...), the counterpart of the adapters' PK/SK.
ItemKey = tuple[str, ...]
Record = (
    KnowledgeBaseRecord
    | GrantRecord
    | FolderRecord
    | FileRecord
    | UploadRecord
    | ProfileRecord
    | CleanupRecord
    | CleanupPart
)


class InvalidTransaction(Exception):
    """What DynamoDB answers a malformed transaction with (a ValidationException): not a failed condition."""


@dataclass
class _Action:
    key: ItemKey
    ok: bool
    apply: Callable[[], None] | None = None


class _Transaction:
    """Actions whose conditions were evaluated on the state before the write; applied all or none."""

    def __init__(self) -> None:
        self._actions: list[_Action] = []

    def add(self, key: ItemKey, ok: bool, apply: Callable[[], None] | None = None) -> None:
        self._actions.append(_Action(key, ok, apply))

    def __len__(self) -> int:
        return len(self._actions)

    def run(self) -> list[int]:
        """Apply every action and return []; or apply none and return the indexes of the failed ones."""
        keys = [action.key for action in self._actions]
        if len(keys) > _TRANSACTION_LIMIT:
            raise InvalidTransaction(f"{len(keys)} actions: a transaction holds at most {_TRANSACTION_LIMIT}")
        if len(set(keys)) != len(keys):
            raise InvalidTransaction("Transaction request cannot include multiple operations on one item")
        failed = [i for i, action in enumerate(self._actions) if not action.ok]
        if not failed:
            for action in self._actions:
                if action.apply is not None:
                    action.apply()
        return failed


@dataclass(frozen=True)
class FakeIntent:
    """An ``INTENT#<kb>`` item: a KB create that is calling MemOS."""

    memos_name: str
    started_at: datetime
    expires_at: int


@dataclass
class FakeTable:
    """The one table the fake stores share, item family by item family (keys as in the adapters)."""

    kbs: dict[str, KnowledgeBaseRecord] = field(default_factory=dict)
    grants: dict[tuple[str, str], GrantRecord] = field(default_factory=dict)  # (user_id, kb_id)
    folders: dict[tuple[str, str], FolderRecord] = field(default_factory=dict)  # (kb_id, folder_id)
    files: dict[tuple[str, str], FileRecord] = field(default_factory=dict)  # (kb_id, file_id)
    uploads: dict[tuple[str, str], UploadRecord] = field(default_factory=dict)  # (kb_id, upload_id)
    profiles: dict[str, ProfileRecord] = field(default_factory=dict)
    # An ``EMAIL#``/``PHONE#`` lookup item: the accounts holding a verified claim on it (never empty).
    lookups: dict[tuple[IdentifierKind, str], frozenset[str]] = field(default_factory=dict)
    activity: dict[tuple[str, str], ActivityRecord] = field(default_factory=dict)  # (kb_id, sort key)
    counters: dict[str, dict[str, int]] = field(default_factory=dict)  # LIMIT#<name> -> attribute -> count
    cleanups: dict[str, CleanupRecord] = field(default_factory=dict)  # the outbox: CLEANUP#<id>/CLEANUP
    cleanup_parts: dict[tuple[str, str], CleanupPart] = field(default_factory=dict)  # (cleanup_id, part_id)
    intents: dict[str, FakeIntent] = field(default_factory=dict)  # INTENT#<kb_id>
    requests: dict[tuple[str, str], RequestRecord] = field(default_factory=dict)  # (operation, key_hash)
    cursors: dict[str, str | None] = field(default_factory=dict)  # RECONCILE/CURSOR#<name>

    def log(self, record: ActivityRecord) -> Callable[[], None]:
        def put() -> None:
            self.activity[(record.kb_id, _activity_sk(record))] = record.model_copy(deep=True)

        return put

    def owned(self, owner_id: str) -> int:
        """How many KBs ``owner_id`` owns by the counter capped creates and deletes keep (for assertions)."""
        return self.counters.get(f"kbs#{owner_id}", {}).get("n", 0)

    def under_cap(self, cap: CountCap) -> bool:
        return self.counters.get(cap.name, {}).get("n", 0) < cap.limit

    def count(self, cap: CountCap) -> Callable[[], None]:
        def bump() -> None:
            counts = self.counters.setdefault(cap.name, {})
            counts["n"] = counts.get("n", 0) + 1

        return bump

    def seed(self, *records: Record) -> None:
        """Put records as they are, unconditionally (no counts kept, no checks): arranging a test's state."""
        for record in records:
            copy = record.model_copy(deep=True)
            if isinstance(copy, KnowledgeBaseRecord):
                self.kbs[copy.kb_id] = copy
            elif isinstance(copy, GrantRecord):
                self.grants[(copy.user_id, copy.kb_id)] = copy
            elif isinstance(copy, FolderRecord):
                self.folders[(copy.kb_id, copy.folder_id)] = copy
            elif isinstance(copy, FileRecord):
                self.files[(copy.kb_id, copy.file_id)] = copy
            elif isinstance(copy, UploadRecord):
                self.uploads[(copy.kb_id, copy.upload_id)] = copy
            elif isinstance(copy, CleanupRecord):
                self.cleanups[copy.cleanup_id] = copy
            elif isinstance(copy, CleanupPart):
                self.cleanup_parts[(copy.cleanup_id, copy.part_id)] = copy
            else:
                self.profiles[copy.user_id] = copy

    def drop_intent(self, kb_id: str) -> Callable[[], None]:
        def drop() -> None:
            self.intents.pop(kb_id, None)

        return drop

    def seed_lookup(
        self, kind: IdentifierKind, value: str, user_id: str, verified_at: int | None = None
    ) -> None:
        """A lookup with one claimant (the adapters' contract seeds the older single-holder item shape)."""
        self.lookups[(kind, value)] = frozenset({user_id})

    def window_has_room(self, slot: WindowCount) -> bool:
        counts = self.counters.get(slot.name, {})
        return counts.get(f"w{slot.window}", 0) < slot.room and counts.get(f"w{slot.window - 1}", 0) <= slot.previous

    def count_window(self, slot: WindowCount) -> Callable[[], None]:
        def bump() -> None:
            counts = self.counters.setdefault(slot.name, {})
            counts[f"w{slot.window}"] = counts.get(f"w{slot.window}", 0) + 1
            counts.pop(f"w{slot.window - 2}", None)

        return bump

    def owns(self, kb_id: str, owner_id: str) -> bool:
        """The adapters' ``owner_check``: META exists and is still ``owner_id``'s."""
        kb = self.kbs.get(kb_id)
        return kb is not None and kb.owner_id == owner_id

    def room(self, kb_id: str, owner_id: str, size: int, capacity: KbCapacity) -> bool:
        """The adapters' ``kb_room_action`` condition: owned by ``owner_id``, with room for ``size`` bytes."""
        kb = self.kbs.get(kb_id)
        if kb is None or kb.owner_id != owner_id:
            return False
        return kb.file_count < capacity.max_files and kb.bytes_used <= capacity.max_bytes - size

    def bytes_room(self, kb_id: str, owner_id: str, grow: int, capacity: KbCapacity) -> bool:
        """The adapters' ``kb_bytes_room_action`` condition: owned by ``owner_id``, with room for ``grow`` bytes."""
        kb = self.kbs.get(kb_id)
        return kb is not None and kb.owner_id == owner_id and (grow <= 0 or kb.bytes_used <= capacity.max_bytes - grow)

    def bytes_refusal(self, kb_id: str, owner_id: str) -> Exception:
        """``kb_bytes_refusal``: why ``bytes_room`` was False."""
        return ItemMissing("kb", kb_id) if not self.owns(kb_id, owner_id) else ConditionFailed("kb_bytes", kb_id)

    def room_refusal(self, kb_id: str, owner_id: str, capacity: KbCapacity) -> Exception:
        """``kb_room_refusal``: why ``room`` was False."""
        kb = self.kbs.get(kb_id)
        if kb is None or kb.owner_id != owner_id:
            return ItemMissing("kb", kb_id)
        return ConditionFailed("kb_files" if kb.file_count >= capacity.max_files else "kb_bytes", kb_id)

    def counted(self, kb_id: str, files: int, size: int) -> Callable[[], None]:
        """Add ``files`` files of ``size`` bytes in all to META's counts (negative: take them off)."""

        def add() -> None:
            kb = self.kbs[kb_id]
            self.kbs[kb_id] = kb.model_copy(
                update={"file_count": kb.file_count + files, "bytes_used": kb.bytes_used + size}
            )

        return add


# -- knowledge bases and grants ---------------------------------------------------------------------


class FakeKnowledgeBaseStore:
    """``KnowledgeBaseStore`` as ``memmy_kb.adapters.dynamodb.knowledge_bases.DynamoKnowledgeBaseStore``."""

    def __init__(self, table: FakeTable | None = None) -> None:
        self.table = table if table is not None else FakeTable()

    def put_kb_with_owner_grant(
        self,
        kb: KnowledgeBaseRecord,
        owner_grant: GrantRecord,
        *,
        max_owned: int,
        request: RequestRecord | None,
    ) -> None:
        t = self.table
        txn = _Transaction()
        txn.add(("KB", kb.kb_id), kb.kb_id not in t.kbs, lambda: t.seed(kb))
        grant_key = (owner_grant.user_id, owner_grant.kb_id)
        txn.add(("USER", *grant_key), grant_key not in t.grants, lambda: t.seed(owner_grant))
        txn.add(("INTENT", kb.kb_id), True, t.drop_intent(kb.kb_id))
        cap = CountCap(name=f"kbs#{kb.owner_id}", limit=max_owned, expires_at=0)
        txn.add(("LIMIT", cap.name), t.under_cap(cap), t.count(cap))
        if request is not None:
            key = (request.operation, request.key_hash)
            held = t.requests.get(key)
            holds = held is not None and held.attempt == request.attempt and held.status == "in_progress"

            def complete() -> None:
                t.requests[key] = t.requests[key].model_copy(
                    update={"status": "completed", "result": request.result or ""}
                )

            txn.add(("IDEMPOTENCY", *key), holds, complete)
        failed = txn.run()
        if request is not None and len(txn) - 1 in failed:
            raise ConditionFailed("request", request.key_hash)
        if 3 in failed:
            raise ConditionFailed("kb_count", str(max_owned))
        if failed:
            raise AlreadyExists("kb", kb.kb_id)

    def get_kb(self, kb_id: str) -> KnowledgeBaseRecord | None:
        kb = self.table.kbs.get(kb_id)
        return kb.model_copy(deep=True) if kb else None

    def batch_get_kbs_and_profiles(
        self, kb_ids: Iterable[str], user_ids: Iterable[str]
    ) -> tuple[dict[str, KnowledgeBaseRecord], dict[str, ProfileRecord]]:
        kbs = {
            kb_id: kb.model_copy(deep=True)
            for kb_id in dict.fromkeys(kb_ids)
            if (kb := self.table.kbs.get(kb_id)) is not None
        }
        return kbs, FakeProfileStore(self.table).batch_get_profiles(user_ids)

    def read_share(
        self,
        owner_id: str,
        kb_id: str,
        *,
        identifier: tuple[IdentifierKind, str] | None,
        user_id: str | None,
        counter: tuple[str, int],
    ) -> ShareReads:
        t = self.table
        name, window = counter
        counts = t.counters.get(name, {})
        profile = t.profiles.get(user_id) if user_id is not None else None
        return ShareReads(
            owner_grant=self.get_grant(owner_id, kb_id),
            kb=self.get_kb(kb_id),
            claimants=t.lookups.get(identifier, frozenset()) if identifier else frozenset(),
            profile=profile.model_copy(deep=True) if profile else None,
            attempts=(counts.get(f"w{window}", 0), counts.get(f"w{window - 1}", 0)),
        )

    def get_grant(self, user_id: str, kb_id: str) -> GrantRecord | None:
        grant = self.table.grants.get((user_id, kb_id))
        return grant.model_copy(deep=True) if grant else None

    def query_grants(self, user_id: str) -> list[GrantRecord]:
        """In sort-key order (``KB#<kb_id>``), as the Query returns them."""
        return [
            grant.model_copy(deep=True)
            for (uid, _), grant in sorted(self.table.grants.items())
            if uid == user_id
        ]

    def update_kb_name(self, kb_id: str, owner_id: str, name: str) -> KnowledgeBaseRecord:
        if not self.table.owns(kb_id, owner_id):
            raise ItemMissing("kb", kb_id)
        kb = self.table.kbs[kb_id].model_copy(update={"name": name})
        self.table.kbs[kb_id] = kb
        return kb.model_copy(deep=True)

    def update_grant_recall(self, user_id: str, kb_id: str, enabled: bool) -> GrantRecord:
        current = self.table.grants.get((user_id, kb_id))
        if current is None:
            raise ItemMissing("grant", kb_id)
        grant = current.model_copy(update={"recall": enabled})
        self.table.grants[(user_id, kb_id)] = grant
        return grant.model_copy(deep=True)

    def put_reader_grant(
        self,
        grant: GrantRecord,
        *,
        max_readers: int,
        daily: CountCap,
        activity: ActivityRecord,
        attempts: WindowCount | None = None,
    ) -> None:
        t = self.table
        key = (grant.user_id, grant.kb_id)
        kb = t.kbs.get(grant.kb_id)

        def count() -> None:
            meta = t.kbs[grant.kb_id]
            t.kbs[grant.kb_id] = meta.model_copy(
                update={
                    "member_count": meta.member_count + 1,
                    "readers": meta.readers | {grant.user_id},
                    "member_version": meta.member_version + 1,
                }
            )

        txn = _Transaction()
        txn.add(("USER", *key), key not in t.grants, lambda: t.seed(grant))
        has_room = kb is not None and kb.owner_id == grant.owner_id and kb.member_count < max_readers
        txn.add(("KB", grant.kb_id), has_room, count)
        reader = t.profiles.get(grant.user_id)
        txn.add(("PROFILE", grant.user_id), reader is None or grant.owner_id not in reader.blocked)
        txn.add(("LIMIT", daily.name), t.under_cap(daily), t.count(daily))
        attempts_at = 4
        if attempts is not None:
            txn.add(("LIMIT", attempts.name), t.window_has_room(attempts), t.count_window(attempts))
        txn.add(("ACTIVITY", activity.kb_id, _activity_sk(activity)), True, t.log(activity))
        failed = txn.run()
        if 0 in failed:
            raise AlreadyExists("grant", grant.user_id)
        if 1 in failed:
            if not t.owns(grant.kb_id, grant.owner_id):
                raise ItemMissing("kb", grant.kb_id)
            raise ConditionFailed("member_count", str(max_readers))
        if 2 in failed:
            raise ConditionFailed("blocked", grant.user_id)
        if attempts is not None and attempts_at in failed:
            raise ConditionFailed("attempts", attempts.name)
        if failed:
            raise ConditionFailed("daily", daily.name)

    def delete_reader_grant(self, kb_id: str, user_id: str, *, activity: ActivityRecord) -> None:
        t = self.table
        key = (user_id, kb_id)
        current = t.grants.get(key)

        def uncount() -> None:
            meta = t.kbs[kb_id]
            t.kbs[kb_id] = meta.model_copy(
                update={
                    "member_count": meta.member_count - 1,
                    "readers": meta.readers - {user_id},
                    "member_version": meta.member_version + 1,
                }
            )

        def delete() -> None:
            del t.grants[key]

        txn = _Transaction()
        is_reader = current is not None and current.role == "reader"
        txn.add(("USER", *key), is_reader, delete)
        txn.add(("KB", kb_id), kb_id in t.kbs, uncount)
        txn.add(("ACTIVITY", activity.kb_id, _activity_sk(activity)), True, t.log(activity))
        failed = txn.run()
        if 0 in failed:
            raise ItemMissing("grant", user_id)
        if failed:  # META is gone (the KB was deleted): the grant goes on its own
            delete()

    def query_kb_members(self, kb_id: str) -> list[GrantRecord]:
        """In GSI1's sort-key order (``USER#<user_id>``)."""
        return [
            grant.model_copy(deep=True)
            for (_, kid), grant in sorted(self.table.grants.items())
            if kid == kb_id
        ]


# -- folders, files and uploads ---------------------------------------------------------------------


class FakeContentStore:
    """``ContentStore`` as ``memmy_kb.adapters.dynamodb.contents.DynamoContentStore``."""

    def __init__(self, table: FakeTable | None = None) -> None:
        self.table = table if table is not None else FakeTable()

    def query_kb_items(self, kb_id: str) -> tuple[list[FolderRecord], list[FileRecord], list[UploadRecord]]:
        """Each family in sort-key order (by id), as the Query of the KB's partition returns them."""
        t = self.table
        return (
            [f.model_copy(deep=True) for (kid, _), f in sorted(t.folders.items()) if kid == kb_id],
            [f.model_copy(deep=True) for (kid, _), f in sorted(t.files.items()) if kid == kb_id],
            [u.model_copy(deep=True) for (kid, _), u in sorted(t.uploads.items()) if kid == kb_id],
        )

    def query_folders(self, kb_id: str) -> list[FolderRecord]:
        return [f.model_copy(deep=True) for (kid, _), f in sorted(self.table.folders.items()) if kid == kb_id]

    def get_folder(self, kb_id: str, folder_id: str) -> FolderRecord | None:
        folder = self.table.folders.get((kb_id, folder_id))
        return folder.model_copy(deep=True) if folder else None

    def get_file(self, kb_id: str, file_id: str) -> FileRecord | None:
        file = self.table.files.get((kb_id, file_id))
        return file.model_copy(deep=True) if file else None

    def get_upload(self, kb_id: str, upload_id: str) -> UploadRecord | None:
        upload = self.table.uploads.get((kb_id, upload_id))
        return upload.model_copy(deep=True) if upload else None

    def put_folder(self, folder: FolderRecord) -> None:
        t = self.table
        key = (folder.kb_id, folder.folder_id)
        txn = _Transaction()
        txn.add(("FOLDER", *key), key not in t.folders, lambda: t.seed(folder))
        txn.add(("KB", folder.kb_id), folder.kb_id in t.kbs)
        if folder.parent_id:
            parent = (folder.kb_id, folder.parent_id)
            txn.add(("FOLDER", *parent), parent in t.folders)
        failed = txn.run()
        if failed:
            raise ItemMissing("kb" if 1 in failed else "folder", folder.kb_id)

    def update_folder(
        self, folder: FolderRecord, previous: FolderRecord, ancestors: list[FolderRecord]
    ) -> None:
        t = self.table
        key = (folder.kb_id, folder.folder_id)
        current = t.folders.get(key)

        def move() -> None:
            t.folders[key] = t.folders[key].model_copy(
                update={"name": folder.name, "parent_id": folder.parent_id}
            )

        txn = _Transaction()
        txn.add(("FOLDER", *key), current is not None and current.parent_id == previous.parent_id, move)
        for ancestor in ancestors:
            seen = t.folders.get((ancestor.kb_id, ancestor.folder_id))
            unchanged = seen is not None and seen.parent_id == ancestor.parent_id
            txn.add(("FOLDER", ancestor.kb_id, ancestor.folder_id), unchanged)
        if txn.run():
            raise ConditionFailed("folders", folder.folder_id)

    def update_file_folder(self, kb_id: str, file_id: str, folder_id: str | None) -> None:
        t = self.table
        key = (kb_id, file_id)

        def point() -> None:
            t.files[key] = t.files[key].model_copy(update={"folder_id": folder_id})

        txn = _Transaction()
        txn.add(("FILE", *key), key in t.files, point)
        if folder_id:
            txn.add(("FOLDER", kb_id, folder_id), (kb_id, folder_id) in t.folders)
        failed = txn.run()
        if failed:
            raise ItemMissing("file" if 0 in failed else "folder", file_id)

    def put_upload(self, upload: UploadRecord, *, capacity: KbCapacity) -> None:
        t = self.table
        key = (upload.kb_id, upload.upload_id)
        txn = _Transaction()
        txn.add(("UPLOAD", *key), key not in t.uploads, lambda: t.seed(upload))
        txn.add(("KB", upload.kb_id), t.room(upload.kb_id, upload.owner_id, upload.size_bytes, capacity))
        failed = txn.run()
        if 1 in failed:
            raise t.room_refusal(upload.kb_id, upload.owner_id, capacity)
        if failed:
            raise ItemMissing("kb", upload.kb_id)

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
    ) -> None:
        t = self.table
        if self._pending(kb_id, upload_id) and not t.room(kb_id, owner_id, size, capacity):
            raise t.room_refusal(kb_id, owner_id, capacity)
        held: dict[str, object] = {
            "state": "submitting", "attempt_id": attempt_id, "submitting_at": now, "expires_at": keep_until
        }
        self._update_upload(
            kb_id, upload_id, lambda u: u.state == "pending", held | ({"content_sha256": sha256} if sha256 else {})
        )

    def _pending(self, kb_id: str, upload_id: str) -> bool:
        upload = self.table.uploads.get((kb_id, upload_id))
        return upload is not None and upload.state == "pending"

    def update_upload_released(self, kb_id: str, upload_id: str, *, attempt_id: str, expires_at: int) -> None:
        self._update_upload(
            kb_id,
            upload_id,
            lambda u: u.state == "submitting" and u.attempt_id == attempt_id,
            {"state": "pending", "expires_at": expires_at, "attempt_id": None, "submitting_at": None},
        )

    def update_upload_rejected(
        self, kb_id: str, upload_id: str, *, reason: str, expires_at: int, attempt_id: str | None
    ) -> None:
        """From pending, or from submitting held by ``attempt_id``; the holder's fields are kept, as in the adapter."""

        def holds(u: UploadRecord) -> bool:
            if attempt_id is None:
                return u.state == "pending"
            return u.state == "submitting" and u.attempt_id == attempt_id

        self._update_upload(
            kb_id, upload_id, holds, {"state": "rejected", "reason": reason, "expires_at": expires_at}
        )

    def update_upload_expired(self, kb_id: str, upload_id: str, *, expires_at: int) -> None:
        self._update_upload(
            kb_id, upload_id, lambda u: u.state == "pending", {"state": "expired", "expires_at": expires_at}
        )

    def delete_decided_upload(self, kb_id: str, upload_id: str) -> None:
        current = self.table.uploads.get((kb_id, upload_id))
        if current is None:
            return
        if current.state not in ("rejected", "expired"):
            raise ConditionFailed("upload", upload_id)
        del self.table.uploads[(kb_id, upload_id)]

    def query_upload_queue(
        self, state: Literal["pending", "submitting"], before: datetime, limit: int
    ) -> list[UploadRecord]:
        """GSI2's upload queues: pending by expiry, submitting by when the hold began, oldest first."""
        queue = sorted(
            (sort_key, u.kb_id, u.upload_id)
            for u in self.table.uploads.values()
            if u.state == state and (sort_key := _upload_queue_key(u)) is not None
        )
        due = [(kb_id, upload_id) for sort_key, kb_id, upload_id in queue if sort_key < before.isoformat()]
        return [self.table.uploads[key].model_copy(deep=True) for key in due[: max(0, limit)]]

    def put_file_for_upload(
        self,
        file: FileRecord,
        *,
        owner_id: str,
        attempt_id: str,
        expires_at: int,
        capacity: KbCapacity,
        activity: ActivityRecord,
    ) -> FileRecord:
        t = self.table
        file_key = (file.kb_id, file.file_id)
        upload_key = (file.kb_id, file.upload_id)
        upload = t.uploads.get(upload_key)

        def submitted() -> None:
            t.uploads[upload_key] = t.uploads[upload_key].model_copy(
                update={
                    "state": "submitted",
                    "file_id": file.file_id,
                    "memos_file_id": file.memos_file_id,
                    "expires_at": expires_at,
                }
            )

        txn = _Transaction()
        txn.add(("FILE", *file_key), file_key not in t.files, self._put(file))
        held = upload is not None and upload.state == "submitting" and upload.attempt_id == attempt_id
        txn.add(("UPLOAD", *upload_key), held, submitted)
        room = t.room(file.kb_id, owner_id, file.size_bytes, capacity)
        txn.add(("KB", file.kb_id), room, t.counted(file.kb_id, 1, file.size_bytes))
        if file.folder_id is not None:
            txn.add(("FOLDER", file.kb_id, file.folder_id), (file.kb_id, file.folder_id) in t.folders)
        txn.add(("ACTIVITY", activity.kb_id, _activity_sk(activity)), True, t.log(activity))
        failed = txn.run()
        refusal = t.room_refusal(file.kb_id, owner_id, capacity) if 2 in failed else None
        if isinstance(refusal, ItemMissing):
            raise refusal
        if 0 in failed or 1 in failed:
            raise ConditionFailed("upload", file.upload_id)
        if refusal is not None:
            raise refusal
        if failed:
            raise ItemMissing("folder", file.folder_id or "")
        return file

    # -- a replace (``memmy_kb.adapters.dynamodb.replacements``) ---------------------------------------

    def put_replacement(self, upload: UploadRecord, *, take_over: str | None, capacity: KbCapacity) -> None:
        assert upload.replaces is not None
        assert upload.if_version is not None
        t = self.table
        file = t.files.get((upload.kb_id, upload.replaces))
        holder = t.uploads.get((upload.kb_id, take_over)) if take_over else None

        def mark() -> None:
            t.files[(upload.kb_id, upload.replaces or "")] = t.files[(upload.kb_id, upload.replaces or "")].model_copy(
                update={"replacing": upload.upload_id}
            )

        txn = _Transaction()
        txn.add(("UPLOAD", upload.kb_id, upload.upload_id), (upload.kb_id, upload.upload_id) not in t.uploads, self._put_upload(upload))
        free = file is not None and file.version == upload.if_version and file.replacing == take_over
        txn.add(("FILE", upload.kb_id, upload.replaces), free, mark)
        txn.add(("KB", upload.kb_id), t.bytes_room(upload.kb_id, upload.owner_id, upload.growth, capacity))
        if take_over:
            txn.add(("UPLOAD", upload.kb_id, take_over), holder is None or holder.state != "submitting")
        failed = txn.run()
        if 2 in failed:
            raise t.bytes_refusal(upload.kb_id, upload.owner_id)
        if 1 in failed and file is None:
            raise ItemMissing("file", upload.replaces)
        if 0 in failed:
            raise ConditionFailed("upload", upload.upload_id)
        if failed:
            raise ConditionFailed("file", upload.replaces)

    def update_replacement_submitting(
        self,
        upload: UploadRecord,
        *,
        attempt_id: str,
        now: datetime,
        keep_until: int,
        sha256: str | None,
        capacity: KbCapacity,
    ) -> None:
        assert upload.replaces is not None
        t = self.table
        key = (upload.kb_id, upload.upload_id)
        current = t.uploads.get(key)
        file = t.files.get((upload.kb_id, upload.replaces))
        held: dict[str, object] = {
            "state": "submitting", "attempt_id": attempt_id, "submitting_at": now, "expires_at": keep_until,
        }
        txn = _Transaction()
        txn.add(("UPLOAD", *key), current is not None and current.state == "pending", self._changed(key, held | ({"content_sha256": sha256} if sha256 else {})))
        room = t.bytes_room(upload.kb_id, upload.owner_id, upload.growth, capacity)
        txn.add(("KB", upload.kb_id), room, t.counted(upload.kb_id, 0, upload.growth))
        ours = file is not None and file.replacing == upload.upload_id and file.version == upload.if_version
        txn.add(("FILE", upload.kb_id, upload.replaces), ours)
        failed = txn.run()
        if 0 in failed:
            raise ConditionFailed("upload", upload.upload_id)
        if 1 in failed:
            raise t.bytes_refusal(upload.kb_id, upload.owner_id)
        if failed:
            raise ItemMissing("file", upload.replaces) if file is None else ConditionFailed("file", upload.replaces)

    def update_replacement_released(self, upload: UploadRecord, *, attempt_id: str, expires_at: int) -> None:
        self.update_upload_released(upload.kb_id, upload.upload_id, attempt_id=attempt_id, expires_at=expires_at)
        self._give_back(upload)

    def update_replacement_rejected(
        self, upload: UploadRecord, *, reason: str, expires_at: int, attempt_id: str | None
    ) -> None:
        self.update_upload_rejected(
            upload.kb_id, upload.upload_id, reason=reason, expires_at=expires_at, attempt_id=attempt_id
        )
        self._unmark(upload)
        if attempt_id is not None:
            self._give_back(upload)

    def update_replacement_expired(self, upload: UploadRecord, *, expires_at: int) -> None:
        self.update_upload_expired(upload.kb_id, upload.upload_id, expires_at=expires_at)
        self._unmark(upload)

    def delete_pending_replacement(self, upload: UploadRecord) -> None:
        key = (upload.kb_id, upload.upload_id)
        current = self.table.uploads.get(key)
        if current is None or current.state != "pending":
            raise ConditionFailed("upload", upload.upload_id)
        del self.table.uploads[key]
        self._unmark(upload)

    def clear_replacing(self, kb_id: str, file_id: str, upload_id: str) -> bool:
        file = self.table.files.get((kb_id, file_id))
        if file is None or file.replacing != upload_id:
            return False
        self.table.files[(kb_id, file_id)] = file.model_copy(update={"replacing": None})
        return True

    def put_file_version(
        self,
        file: FileRecord,
        *,
        owner_id: str,
        attempt_id: str,
        replaced_version: int,
        shrink: int,
        expires_at: int,
        activity: ActivityRecord,
    ) -> None:
        t = self.table
        file_key = (file.kb_id, file.file_id)
        upload_key = (file.kb_id, file.upload_id)
        current = t.files.get(file_key)
        upload = t.uploads.get(upload_key)
        changes = {
            "version": file.version, "size_bytes": file.size_bytes, "upload_id": file.upload_id,
            "updated_at": file.updated_at, "replacing": None,
        } | ({"sha256": file.sha256} if file.sha256 else {})

        def moved_on() -> None:
            t.files[file_key] = t.files[file_key].model_copy(update=changes)

        submitted = {"state": "submitted", "file_id": file.file_id, "memos_file_id": file.memos_file_id, "expires_at": expires_at}
        txn = _Transaction()
        ours = current is not None and current.replacing == file.upload_id and current.version == replaced_version
        txn.add(("FILE", *file_key), ours, moved_on)
        held = upload is not None and upload.state == "submitting" and upload.attempt_id == attempt_id
        txn.add(("UPLOAD", *upload_key), held, self._changed(upload_key, submitted))
        txn.add(("KB", file.kb_id), t.owns(file.kb_id, owner_id), t.counted(file.kb_id, 0, min(0, shrink)))
        txn.add(("ACTIVITY", activity.kb_id, _activity_sk(activity)), True, t.log(activity))
        failed = txn.run()
        if 2 in failed:
            raise ItemMissing("kb", file.kb_id)
        if 1 in failed:
            raise ConditionFailed("upload", file.upload_id)
        if failed:
            raise ItemMissing("file", file.file_id) if current is None else ConditionFailed("file", file.file_id)

    def _unmark(self, upload: UploadRecord) -> None:
        if upload.replaces is not None:
            self.clear_replacing(upload.kb_id, upload.replaces, upload.upload_id)

    def _give_back(self, upload: UploadRecord) -> None:
        if upload.growth > 0 and upload.kb_id in self.table.kbs:
            self.table.counted(upload.kb_id, 0, -upload.growth)()

    def _put_upload(self, upload: UploadRecord) -> Callable[[], None]:
        def put() -> None:
            self.table.seed(upload)

        return put

    def _changed(self, key: tuple[str, str], changes: dict[str, object]) -> Callable[[], None]:
        def change() -> None:
            self.table.uploads[key] = self.table.uploads[key].model_copy(update=changes)

        return change

    def _put(self, record: FileRecord) -> Callable[[], None]:
        def put() -> None:
            self.table.seed(record)

        return put

    def _update_upload(
        self,
        kb_id: str,
        upload_id: str,
        condition: Callable[[UploadRecord], bool],
        changes: dict[str, object],
    ) -> UploadRecord:
        key = (kb_id, upload_id)
        current = self.table.uploads.get(key)
        if current is None or not condition(current):
            raise ConditionFailed("upload", upload_id)
        updated = current.model_copy(update=changes)
        self.table.uploads[key] = updated
        return updated.model_copy(deep=True)


def _upload_queue_key(upload: UploadRecord) -> str | None:
    """The upload's GSI2 sort key in its queue, as the adapter writes it (None: in no queue)."""
    if upload.state == "pending":
        return datetime.fromtimestamp(upload.expires_at, UTC).isoformat()
    if upload.state == "submitting" and upload.submitting_at is not None:
        return upload.submitting_at.isoformat()
    return None


# -- profiles ---------------------------------------------------------------------------------------


class FakeProfileStore:
    """``ProfileStore`` as ``memmy_kb.adapters.dynamodb.profiles.DynamoProfileStore``."""

    def __init__(self, table: FakeTable | None = None) -> None:
        self.table = table if table is not None else FakeTable()

    def get_profile(self, user_id: str) -> ProfileRecord | None:
        profile = self.table.profiles.get(user_id)
        return profile.model_copy(deep=True) if profile else None

    def batch_get_profiles(self, user_ids: Iterable[str]) -> dict[str, ProfileRecord]:
        return {
            user_id: profile.model_copy(deep=True)
            for user_id in dict.fromkeys(user_ids)
            if (profile := self.table.profiles.get(user_id)) is not None
        }

    def get_lookup_claimants(self, kind: IdentifierKind, value: str) -> frozenset[str]:
        return self.table.lookups.get((kind, value), frozenset())

    def update_profile_settings(self, user_id: str, *, recall_new_shares: bool, now: datetime) -> ProfileRecord:
        return self._update(user_id, recall_new_shares=recall_new_shares, updated_at=now)

    def add_blocked(
        self, user_id: str, blocked_id: str, *, name: str | None, max_blocked: int, now: datetime
    ) -> ProfileRecord:
        current = self.table.profiles.get(user_id)
        if current is None:
            raise ItemMissing("profile", user_id)
        if blocked_id not in current.blocked and len(current.blocked) >= max_blocked:
            raise ConditionFailed("blocked", str(max_blocked))
        names = current.blocked_names if name is None else {**current.blocked_names, blocked_id: name}
        return self._update(user_id, blocked=current.blocked | {blocked_id}, blocked_names=names, updated_at=now)

    def remove_blocked(self, user_id: str, blocked_id: str, *, now: datetime) -> ProfileRecord:
        current = self.table.profiles.get(user_id)
        if current is None:
            raise ItemMissing("profile", user_id)
        names = {k: v for k, v in current.blocked_names.items() if k != blocked_id}
        return self._update(user_id, blocked=current.blocked - {blocked_id}, blocked_names=names, updated_at=now)

    def _update(self, user_id: str, **changes: object) -> ProfileRecord:
        current = self.table.profiles.get(user_id)
        if current is None:
            raise ItemMissing("profile", user_id)
        self.table.profiles[user_id] = current.model_copy(update=changes)
        return self.table.profiles[user_id].model_copy(deep=True)

    def put_profile_with_lookups(self, profile: ProfileRecord, previous: ProfileRecord | None) -> ProfileRecord:
        t = self.table
        me = profile.user_id
        txn = _Transaction()
        for kind in _IDENTIFIER_KINDS:
            new: str | None = getattr(profile, kind)
            old: str | None = getattr(previous, kind) if previous else None
            if old and old != new and me in t.lookups.get((kind, old), frozenset()):
                txn.add(("LOOKUP", kind, old), True, self._unclaim(kind, old, me))
            if new:
                # Written even when already there, as the adapter does (it repairs a lookup lost to a race).
                txn.add(("LOOKUP", kind, new), True, self._claim(kind, new, me))
        stored_profile = profile
        seen = t.profiles.get(me)
        unchanged = (
            seen is None if previous is None else seen is not None and seen.updated_at == previous.updated_at
        )
        txn.add(("PROFILE", me), unchanged, lambda: t.seed(stored_profile))
        if txn.run():
            raise ConditionFailed("profile", me)
        return profile.model_copy(deep=True)

    def _claim(self, kind: IdentifierKind, value: str, user_id: str) -> Callable[[], None]:
        def claim() -> None:
            self.table.lookups[(kind, value)] = self.table.lookups.get((kind, value), frozenset()) | {user_id}

        return claim

    def _unclaim(self, kind: IdentifierKind, value: str, user_id: str) -> Callable[[], None]:
        def unclaim() -> None:
            left = self.table.lookups.get((kind, value), frozenset()) - {user_id}
            if left:
                self.table.lookups[(kind, value)] = left
            else:
                self.table.lookups.pop((kind, value), None)

        return unclaim


# -- activity log and rate counters -----------------------------------------------------------------


def _activity_sk(record: ActivityRecord) -> str:
    return f"{record.at.isoformat()}#{record.activity_id}"


class FakeActivityLog:
    """``ActivityLog`` as ``memmy_kb.adapters.dynamodb.activity.DynamoActivityLog`` (cursor: the last sort key)."""

    def __init__(self, table: FakeTable | None = None) -> None:
        self.table = table if table is not None else FakeTable()

    def put_activity(self, record: ActivityRecord) -> None:
        self.table.log(record)()

    def query_activity(
        self, kb_id: str, *, limit: int, cursor: str | None, now: int
    ) -> tuple[list[ActivityRecord], str | None]:
        entries = sorted(
            ((sk, r) for (kid, sk), r in self.table.activity.items() if kid == kb_id and r.expires_at > now),
            key=lambda pair: pair[0],
            reverse=True,
        )
        start = _fake_cursor_sk(cursor, kb_id)
        if start is not None:
            entries = [(sk, r) for sk, r in entries if sk < start]
        page = entries[:limit]
        more = len(entries) > limit
        next_cursor = _fake_cursor(kb_id, page[-1][0]) if more and page else None
        return [r.model_copy(deep=True) for _, r in page], next_cursor


def _fake_cursor(kb_id: str, sk: str) -> str:
    import base64
    import json

    return base64.urlsafe_b64encode(json.dumps({"kb": kb_id, "sk": sk}, sort_keys=True).encode()).decode()


def _fake_cursor_sk(cursor: str | None, kb_id: str) -> str | None:
    import base64
    import json

    if not cursor:
        return None
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor.encode()))
    except (ValueError, UnicodeError):
        return None
    if isinstance(data, dict) and data.get("kb") == kb_id and isinstance(data.get("sk"), str):
        return str(data["sk"])
    return None


class FakeRateCounters:
    """``RateCounters`` as ``memmy_kb.adapters.dynamodb.activity.DynamoRateCounters``."""

    def __init__(self, table: FakeTable | None = None) -> None:
        self.table = table if table is not None else FakeTable()

    def count_in_window(self, name: str, window: int, *, cap: int, expires_at: int) -> tuple[int, int] | None:
        counts = self.table.counters.setdefault(name, {})
        current = counts.get(f"w{window}", 0)
        if current >= cap:
            return None
        counts[f"w{window}"] = current + 1
        counts.pop(f"w{window - 2}", None)
        return current + 1, counts.get(f"w{window - 1}", 0)


# -- deletes, the cleanup outbox and the reconciler's bookkeeping -------------------------------------


def _cleanup_due(cleanup: CleanupRecord) -> str:
    """GSI2's sort key of a cleanup: when it may next be (re)started."""
    return cleanup.next_attempt_at.isoformat()


class FakeCleanupStore:
    """``CleanupStore`` as ``memmy_kb.adapters.dynamodb.cleanups.DynamoCleanupStore``."""

    def __init__(self, table: FakeTable | None = None) -> None:
        self.table = table if table is not None else FakeTable()

    # -- a delete's visible part, with its outbox item ------------------------------------------------

    def delete_kb_with_outbox(
        self, kb: KnowledgeBaseRecord, reader_ids: Iterable[str], cleanup: CleanupRecord
    ) -> None:
        t = self.table
        meta = t.kbs.get(kb.kb_id)
        unchanged = meta is not None and meta.owner_id == kb.owner_id and meta.member_version == kb.member_version
        txn = _Transaction()
        txn.add(("KB", kb.kb_id), unchanged, self._drop(t.kbs, kb.kb_id))
        for user_id in [kb.owner_id, *reader_ids]:
            txn.add(("USER", user_id, kb.kb_id), True, self._drop(t.grants, (user_id, kb.kb_id)))
        txn.add(("CLEANUP", cleanup.cleanup_id), cleanup.cleanup_id not in t.cleanups, self._put(cleanup))
        txn.add(("LIMIT", f"kbs#{kb.owner_id}"), True, self._uncount_owned(kb.owner_id))
        if txn.run():
            raise ConditionFailed("kb", kb.kb_id)

    def delete_file_with_outbox(
        self, file: FileRecord, owner_id: str, cleanup: CleanupRecord, *, activity: ActivityRecord
    ) -> None:
        t = self.table
        key = (file.kb_id, file.file_id)
        current = t.files.get(key)
        there = current is not None and current.memos_file_id == file.memos_file_id and current.version == file.version
        self._delete_visible(
            ("FILE", *key), there, self._drop(t.files, key), "file", file.file_id, file.kb_id, owner_id,
            cleanup, activity, uncount=t.counted(file.kb_id, -1, -file.size_bytes),
        )

    def delete_folder_with_outbox(
        self, folder: FolderRecord, owner_id: str, cleanup: CleanupRecord, *, activity: ActivityRecord
    ) -> None:
        key = (folder.kb_id, folder.folder_id)
        self._delete_visible(
            ("FOLDER", *key), key in self.table.folders, self._drop(self.table.folders, key), "folder",
            folder.folder_id, folder.kb_id, owner_id, cleanup, activity,
        )

    def _delete_visible(
        self,
        key: ItemKey,
        there: bool,
        delete: Callable[[], None],
        item: Literal["file", "folder"],
        item_id: str,
        kb_id: str,
        owner_id: str,
        cleanup: CleanupRecord,
        activity: ActivityRecord,
        uncount: Callable[[], None] | None = None,
    ) -> None:
        t = self.table
        txn = _Transaction()
        txn.add(key, there, delete)
        txn.add(("KB", kb_id), t.owns(kb_id, owner_id), uncount)
        txn.add(("CLEANUP", cleanup.cleanup_id), cleanup.cleanup_id not in t.cleanups, self._put(cleanup))
        txn.add(("ACTIVITY", activity.kb_id, _activity_sk(activity)), True, t.log(activity))
        failed = txn.run()
        if failed:
            raise ItemMissing("kb" if 1 in failed else item, item_id)

    # -- sweeping a deleted folder's subtree ----------------------------------------------------------

    def delete_files_with_part(self, part: CleanupPart, files: list[FileRecord]) -> None:
        """As the adapter: files deleted meanwhile are left out and the transaction redone, files at another
        version than read are redone as they are now; a gone META leaves the files uncounted."""
        t = self.table
        kb_id = files[0].kb_id if files else ""
        counted = True
        part_key = (part.cleanup_id, part.part_id)
        for _ in range(len(files) + 2):
            txn = _Transaction()
            for f in files:
                key = (f.kb_id, f.file_id)
                txn.add(("FILE", *key), key in t.files and t.files[key].version == f.version, self._drop(t.files, key))
            txn.add(("CLEANUP", *part_key), part_key not in t.cleanup_parts, self._put(part))
            if files and counted:
                txn.add(("KB", kb_id), kb_id in t.kbs, t.counted(kb_id, -len(files), -sum(f.size_bytes for f in files)))
            failed = txn.run()
            if not failed:
                return
            if len(files) + 1 in failed:
                counted = False
            now = {i: t.files[(f.kb_id, f.file_id)] for i, f in enumerate(files) if i in failed and (f.kb_id, f.file_id) in t.files}
            files = [now.get(i, f) for i, f in enumerate(files) if i not in failed or i in now]
        raise ConditionFailed("file", part.part_id)

    def delete_folders(self, folders: list[FolderRecord]) -> None:
        for folder in folders:
            self.table.folders.pop((folder.kb_id, folder.folder_id), None)

    # -- the outbox -----------------------------------------------------------------------------------

    def get_cleanup(self, cleanup_id: str) -> tuple[CleanupRecord | None, list[CleanupPart]]:
        head = self.table.cleanups.get(cleanup_id)
        parts = [p.model_copy(deep=True) for (cid, _), p in sorted(self.table.cleanup_parts.items()) if cid == cleanup_id]
        return (head.model_copy(deep=True) if head else None), parts

    def delete_cleanup_parts(self, cleanup_id: str, part_ids: list[str]) -> None:
        for part_id in part_ids:
            self.table.cleanup_parts.pop((cleanup_id, part_id), None)

    def delete_kb_items(self, kb_id: str, limit: int) -> bool:
        """The KB's partition in sort-key order (``FILE#`` < ``FOLDER#`` < ``META`` < ``UPLOAD#``), at most
        ``limit`` items per call."""
        t = self.table
        families: list[tuple[str, dict[Any, Any], list[Any]]] = [
            ("FILE#", t.files, [k for k in t.files if k[0] == kb_id]),
            ("FOLDER#", t.folders, [k for k in t.folders if k[0] == kb_id]),
            ("META", t.kbs, [kb_id] if kb_id in t.kbs else []),
            ("UPLOAD#", t.uploads, [k for k in t.uploads if k[0] == kb_id]),
        ]
        items = [(prefix + (k[1] if isinstance(k, tuple) else ""), family, k) for prefix, family, keys in families for k in keys]
        items.sort(key=lambda item: item[0])
        for _, family, key in items[:limit]:
            del family[key]
        return len(items) <= limit

    def query_due_cleanups(self, now: datetime, limit: int) -> list[CleanupRecord]:
        due: list[CleanupRecord] = []
        for state in ("failed", "pending"):
            queue = sorted(
                (c for c in self.table.cleanups.values() if c.state == state and _cleanup_due(c) <= now.isoformat()),
                key=lambda c: (_cleanup_due(c), c.cleanup_id),
            )
            due.extend(c.model_copy(deep=True) for c in queue[: max(0, limit - len(due))])
        return due

    def update_cleanup_restarted(self, cleanup: CleanupRecord, next_attempt_at: datetime) -> CleanupRecord:
        current = self.table.cleanups.get(cleanup.cleanup_id)
        if current is None or current.attempts != cleanup.attempts:
            raise ConditionFailed("cleanup", cleanup.cleanup_id)
        restarted = current.model_copy(
            update={"attempts": cleanup.attempts + 1, "state": "pending", "next_attempt_at": next_attempt_at}
        )
        self.table.cleanups[cleanup.cleanup_id] = restarted
        return restarted.model_copy(deep=True)

    # -- the residue scan -----------------------------------------------------------------------------

    def query_kbs_after(self, cursor: str | None, limit: int) -> list[KnowledgeBaseRecord]:
        ids = sorted(k for k in self.table.kbs if not cursor or k > cursor)
        return [self.table.kbs[k].model_copy(deep=True) for k in ids[: max(0, limit)]]

    def get_cursor(self, name: str) -> str | None:
        return self.table.cursors.get(name) or None

    def put_cursor(self, name: str, position: str | None) -> None:
        self.table.cursors[name] = position

    # -- plumbing -------------------------------------------------------------------------------------

    def mark_failed(self, cleanup_id: str, error: str) -> None:
        """What the state machine's MarkFailed task does to the outbox item (not a port method)."""
        current = self.table.cleanups[cleanup_id]
        self.table.cleanups[cleanup_id] = current.model_copy(update={"state": "failed", "last_error": error})

    def _put(self, record: CleanupRecord | CleanupPart) -> Callable[[], None]:
        def put() -> None:
            self.table.seed(record)

        return put

    @staticmethod
    def _drop(family: dict[Any, Any], key: Any) -> Callable[[], None]:
        def drop() -> None:
            family.pop(key, None)

        return drop

    def _uncount_owned(self, owner_id: str) -> Callable[[], None]:
        def uncount() -> None:
            counts = self.table.counters.setdefault(f"kbs#{owner_id}", {})
            counts["n"] = counts.get("n", 1) - 1

        return uncount


class FakeCreateIntents:
    """``CreateIntents`` as ``memmy_kb.adapters.dynamodb.intents.DynamoCreateIntents``, Idempotency-Key
    claims included (``FakeKnowledgeBaseStore.put_kb_with_owner_grant`` completes them)."""

    def __init__(self, table: FakeTable | None = None) -> None:
        self.table = table if table is not None else FakeTable()

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
    ) -> None:
        t = self.table
        intent = FakeIntent(memos_name, started_at, expires_at)
        txn = _Transaction()

        def note() -> None:
            t.intents[kb_id] = intent

        txn.add(("INTENT", kb_id), kb_id not in t.intents, note)
        held: RequestRecord | None = None
        if request is not None:
            key = (request.operation, request.key_hash)
            held = t.requests.get(key)
            free = (
                held is None
                or held.expires_at < now
                or (held.status == "in_progress" and held.in_progress_until < now)
            )

            def claim() -> None:
                t.requests[key] = request.model_copy(deep=True)

            txn.add(("IDEMPOTENCY", *key), free, claim)
        cap = CountCap(name=f"kbs#{owner_id}", limit=max_owned, expires_at=0)
        txn.add(("LIMIT", cap.name), t.under_cap(cap))
        failed = txn.run()
        if request is not None and 1 in failed:
            assert held is not None
            raise RequestSeen(held.model_copy(deep=True))
        if failed:
            raise ConditionFailed("kb_count", str(max_owned))

    def delete_create_intent(self, kb_id: str) -> None:
        self.table.intents.pop(kb_id, None)

    def abandon_create(self, kb_id: str, *, request: RequestRecord | None, keep_intent: bool) -> None:
        t = self.table
        if request is None:
            if not keep_intent:
                self.delete_create_intent(kb_id)
            return
        key = (request.operation, request.key_hash)
        held = t.requests.get(key)
        txn = _Transaction()
        if not keep_intent:
            txn.add(("INTENT", kb_id), True, t.drop_intent(kb_id))

        def release() -> None:
            del t.requests[key]

        txn.add(("IDEMPOTENCY", *key), held is not None and held.attempt == request.attempt, release)
        if txn.run() and not keep_intent:
            self.delete_create_intent(kb_id)

    def query_stale_intents(self, before: datetime, limit: int) -> list[tuple[str, str]]:
        stale = sorted(
            ((i.started_at.isoformat(), kb_id, i.memos_name) for kb_id, i in self.table.intents.items()),
        )
        return [(kb_id, name) for started, kb_id, name in stale if started < before.isoformat()][: max(0, limit)]


# -- the cleanup state machine and the upload queue --------------------------------------------------


class FakeCleanupExecutions:
    """``CleanupExecutions`` as ``memmy_kb.adapters.stepfunctions.CleanupStateMachine``: one execution per
    name, a repeated start of a name counts as started. ``fail_next(error)`` makes the next start raise."""

    def __init__(self) -> None:
        self.executions: dict[str, str] = {}  # execution name -> cleanup id, in start order
        self._failures: list[Exception] = []

    def fail_next(self, error: Exception) -> None:
        self._failures.append(error)

    def start(self, cleanup_id: str, execution_name: str) -> None:
        if self._failures:
            raise self._failures.pop(0)
        self.executions.setdefault(execution_name, cleanup_id)


class FakeUploadRequeue:
    """``UploadRequeue`` as ``memmy_kb.adapters.sqs.UploadQueue``: the object keys handed to the ingest again."""

    def __init__(self) -> None:
        self.requeued: list[str] = []

    def requeue(self, object_key: str) -> None:
        self.requeued.append(object_key)


# -- the upload bucket ---------------------------------------------------------------------------------

FAKE_BUCKET_URL: Final = "https://uploads.fake.invalid"
ObjectsMethod = Literal[
    "head", "read_start", "read_range", "iter_chunks", "copy", "delete", "delete_prefix", "list_keys"
]


class FakeUploadObjects:
    """``UploadObjects`` as ``memmy_kb.adapters.s3.UploadStorage``: objects with S3's ETag (the quoted MD5),
    reads pinned to the ETag they were given (``ObjectChanged`` otherwise), ``delete_prefix`` in pages, and
    presigned POSTs and GETs as deterministic values (nothing is signed). ``fail(method, error)`` makes the
    next call of ``method`` raise ``error``; ``calls`` counts calls by method."""

    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}
        self.calls: Counter[str] = Counter()
        self._failures: dict[str, list[Exception]] = {}

    # -- arranging --------------------------------------------------------------------------------------

    def put(self, key: str, data: bytes) -> ObjectInfo:
        """Store ``data`` at ``key`` (what a client's POST does); its ObjectInfo."""
        self.objects[key] = bytes(data)
        return ObjectInfo(key=key, size=len(data), etag=_etag(data))

    def fail(self, method: ObjectsMethod, error: Exception) -> None:
        self._failures.setdefault(method, []).append(error)

    # -- UploadObjects ----------------------------------------------------------------------------------

    def presign_post(self, key: str, *, size_bytes: int, content_type: str, expires_in: int) -> PresignedPost:
        return PresignedPost(
            url=f"{FAKE_BUCKET_URL}/",
            fields={
                "key": key,
                "Content-Type": content_type,
                "x-fake-content-length": str(size_bytes),
                "x-fake-expires-in": str(expires_in),
            },
        )

    def presign_get(self, key: str, *, expires_in: int) -> str:
        return f"{FAKE_BUCKET_URL}/{key}?expires_in={expires_in}"

    def head(self, key: str) -> ObjectInfo | None:
        self._enter("head")
        data = self.objects.get(key)
        return ObjectInfo(key=key, size=len(data), etag=_etag(data)) if data is not None else None

    def read_start(self, key: str, length: int) -> tuple[ObjectInfo, bytes] | None:
        self._enter("read_start")
        data = self.objects.get(key)
        if data is None:
            return None
        return ObjectInfo(key=key, size=len(data), etag=_etag(data)), data[: max(length, 1)]

    def read_range(self, info: ObjectInfo, start: int, length: int) -> bytes:
        self._enter("read_range")
        if length <= 0 or start >= info.size:
            return b""
        return self._pinned(info)[start : min(info.size, start + length)]

    def iter_chunks(self, info: ObjectInfo, chunk_size: int = STREAM_CHUNK_BYTES) -> Iterator[bytes]:
        self._enter("iter_chunks")
        data = self._pinned(info)
        for start in range(0, len(data), chunk_size):
            yield data[start : start + chunk_size]

    def copy(self, info: ObjectInfo, destination_key: str) -> None:
        self._enter("copy")
        self.objects[destination_key] = self._pinned(info)

    def delete(self, key: str) -> None:
        self._enter("delete")
        self.objects.pop(key, None)

    def delete_prefix(self, prefix: str, limit: int = 1000) -> bool:
        self._enter("delete_prefix")
        page_size = min(limit, 1000)
        keys = sorted(k for k in self.objects if k.startswith(prefix))
        for key in keys[:page_size]:
            del self.objects[key]
        return len(keys) < page_size

    def list_keys(self, *, start_after: str | None, limit: int) -> list[str]:
        self._enter("list_keys")
        keys = sorted(k for k in self.objects if start_after is None or k > start_after)
        return keys[: max(1, min(limit, 1000))]

    # -- internals --------------------------------------------------------------------------------------

    def _pinned(self, info: ObjectInfo) -> bytes:
        data = self.objects.get(info.key)
        if data is None or _etag(data) != info.etag:
            raise ObjectChanged(info.key)
        return data

    def _enter(self, method: ObjectsMethod) -> None:
        self.calls[method] += 1
        pending = self._failures.get(method)
        if pending:
            raise pending.pop(0)


def _etag(data: bytes) -> str:
    return '"' + hashlib.md5(data, usedforsecurity=False).hexdigest() + '"'


@dataclass(frozen=True)
class FakeStores:
    """The fake stores on one table (the counterpart of ``tests.support.aws.Stores``)."""

    table: FakeTable
    kbs: FakeKnowledgeBaseStore
    contents: FakeContentStore
    profiles: FakeProfileStore
    activity: FakeActivityLog
    counters: FakeRateCounters
    cleanups: FakeCleanupStore
    intents: FakeCreateIntents
    slots: FakeBackendSlots


def fake_stores(table: FakeTable | None = None) -> FakeStores:
    table = table if table is not None else FakeTable()
    return FakeStores(
        table,
        FakeKnowledgeBaseStore(table),
        FakeContentStore(table),
        FakeProfileStore(table),
        FakeActivityLog(table),
        FakeRateCounters(table),
        FakeCleanupStore(table),
        FakeCreateIntents(table),
        FakeBackendSlots(),
    )


class FakeBackendSlots:
    """``BackendSlots`` in memory: a counter per backend, a slot per KB, claims under a lock."""

    def __init__(self) -> None:
        self.used: Counter[str] = Counter()
        self.slots: dict[str, str] = {}  # kb_id -> backend
        self._lock = threading.Lock()

    def claim_slot(self, backend_id: str, kb_id: str, *, max_kbs: int) -> bool:
        with self._lock:
            if self.used[backend_id] >= max_kbs or self.slots.get(kb_id) == backend_id:
                return False
            self.used[backend_id] += 1
            self.slots[kb_id] = backend_id
            return True

    def release_slot(self, backend_id: str, kb_id: str) -> None:
        with self._lock:
            if self.slots.get(kb_id) == backend_id:
                del self.slots[kb_id]
                self.used[backend_id] -= 1

    def slot_of(self, kb_id: str, backend_ids: list[str]) -> str | None:
        backend = self.slots.get(kb_id)
        return backend if backend in backend_ids else None

    def used_slots(self, backend_ids: list[str]) -> dict[str, int]:
        return {b: self.used[b] for b in backend_ids}


# -- MemOS ------------------------------------------------------------------------------------------

EngineMethod = Literal[
    "create_knowledgebase",
    "delete_knowledgebase",
    "add_knowledgebase_files",
    "update_knowledgebase_file",
    "get_knowledgebase_files",
    "iter_knowledgebase_files",
    "delete_knowledgebase_files",
    "search_memory",
]


@dataclass
class FakeMemosKnowledgeBase:
    id: str
    name: str
    description: str | None = None
    files: dict[str, EngineFile] = field(default_factory=dict)
    memories: list[SearchHit] = field(default_factory=list)


@dataclass(frozen=True)
class SearchCall:
    user_id: str
    query: str
    kb_ids: tuple[str, ...]
    limit: int
    relativity: float | None


@dataclass
class _Failure:
    error: Exception
    times: int | None  # None: every call from now on


class FakeKnowledgeEngine:
    """``KnowledgeEngine`` (MemOS) in memory.

    ``calls`` counts every call by method, failed ones included. ``fail(method, error, times=n)`` makes
    the next ``n`` calls of ``method`` raise ``error`` (every call when ``times`` is None). Arguments are
    refused (``ValueError``) where ``MemosClient`` refuses them; unknown KBs answer ``MemosNotFound``
    where MemOS does, and deletes of unknown ids count as done, as in the client.
    """

    def __init__(self, *, max_kbs: int = 1000) -> None:
        # As a pool (``KnowledgeEngines``), this engine is the one backend ``default``, of ``max_kbs``.
        self.max_kbs = max_kbs
        self.knowledge_bases: dict[str, FakeMemosKnowledgeBase] = {}
        self.deleted_knowledge_bases: list[tuple[str, bool]] = []  # (memos_kb_id, delete_all)
        self.deleted_files: list[str] = []
        self.inputs: list[FileInput] = []  # what each add or update was given (a data URL or a GET URL, and the name)
        self.updates: list[tuple[str, FileInput]] = []  # (MemOS file id, the new version) of each update
        self.searches: list[SearchCall] = []
        self.calls: Counter[EngineMethod] = Counter()
        self._failures: dict[EngineMethod, list[_Failure]] = {}
        self._ids = itertools.count(1)
        # Per KB: searches naming one of these MemOS ids raise its error (recall searches KBs on threads).
        self.search_failures: dict[str, Exception] = {}
        # Runs with the MemOS ids of each search before it answers (a change landing during the search).
        self.during_search: Callable[[tuple[str, ...]], None] | None = None
        self._search_lock = threading.Lock()

    # -- arranging ---------------------------------------------------------------------------------

    def fail_search_of(self, kb_id: str, error: Exception) -> None:
        """Every search that names MemOS KB ``kb_id`` raises ``error`` (the others answer)."""
        self.search_failures[kb_id] = error

    def fail(self, method: EngineMethod, error: Exception, *, times: int | None = None) -> None:
        if times is not None and times < 1:
            raise ValueError("times must be at least 1 (None: every call)")
        self._failures.setdefault(method, []).append(_Failure(error, times))

    def clear_failures(self) -> None:
        self._failures.clear()

    def add_file(
        self,
        kb_id: str,
        name: str | None,
        status: FileStatus = FileStatus.PROCESSING,
        *,
        file_id: str | None = None,
    ) -> EngineFile:
        """A file as an add leaves it (without counting a call), in ``status``."""
        file = EngineFile(id=file_id or self._new_id("mf"), name=name, status=status)
        self.knowledge_bases[kb_id].files[file.id] = file
        return file

    def set_status(self, file_id: str, status: FileStatus) -> None:
        for kb in self.knowledge_bases.values():
            if file_id in kb.files:
                kb.files[file_id] = replace(kb.files[file_id], status=status)
                return
        raise KeyError(file_id)

    def add_memory(self, kb_id: str, title: str, content: str, score: float = 0.5) -> SearchHit:
        memory = SearchHit(title=title, content=content, score=score)
        self.knowledge_bases[kb_id].memories.append(memory)
        return memory

    @property
    def total_calls(self) -> int:
        return sum(self.calls.values())

    # -- KnowledgeEngines, as the one backend ``default`` ---------------------------------------------

    def backends(self) -> list[EngineBackend]:
        return [EngineBackend(DEFAULT_BACKEND, max_kbs=self.max_kbs)]

    def engine(self, backend_id: str) -> KnowledgeEngine:
        if backend_id != DEFAULT_BACKEND:
            raise MemosBackendUnknown(f"no MemOS backend {backend_id!r}")
        return self

    # -- KnowledgeEngine -----------------------------------------------------------------------------

    def create_knowledgebase(self, name: str, description: str | None = None) -> str:
        self._enter("create_knowledgebase")
        kb = FakeMemosKnowledgeBase(id=self._new_id("mkb"), name=name, description=description)
        self.knowledge_bases[kb.id] = kb
        return kb.id

    def delete_knowledgebase(self, kb_id: str, *, delete_all: bool) -> None:
        self._enter("delete_knowledgebase")
        self.knowledge_bases.pop(kb_id, None)
        self.deleted_knowledge_bases.append((kb_id, delete_all))

    def add_knowledgebase_files(self, kb_id: str, files: list[FileInput]) -> list[EngineFile]:
        self._enter("add_knowledgebase_files")
        if not files:
            raise ValueError("add_knowledgebase_files needs at least one file")
        self._kb(kb_id, "/add/knowledgebase-file")
        self.inputs.extend(files)
        return [self.add_file(kb_id, f.name) for f in files]

    def update_knowledgebase_file(self, file_id: str, file: FileInput) -> EngineFile:
        """The file's next version: processing again under the new name (MemOS's 40001 for a file it lacks)."""
        self._enter("update_knowledgebase_file")
        for kb in self.knowledge_bases.values():
            if file_id in kb.files:
                self.inputs.append(file)
                self.updates.append((file_id, file))
                kb.files[file_id] = replace(kb.files[file_id], name=file.name, status=FileStatus.PROCESSING)
                return kb.files[file_id]
        raise MemosNotFound("file does not exist", endpoint="/update/knowledgebase-file", code=40001)

    def get_knowledgebase_files(self, file_ids: list[str]) -> list[EngineFile]:
        self._enter("get_knowledgebase_files")
        wanted = set(file_ids)
        return [f for kb in self.knowledge_bases.values() for f in kb.files.values() if f.id in wanted]

    def iter_knowledgebase_files(
        self, kb_id: str, *, page_size: int = 20, max_pages: int = 10_000
    ) -> Iterator[EngineFile]:
        self._enter("iter_knowledgebase_files")
        files = list(self._kb(kb_id, "/get/knowledgebase-file").files.values())
        return iter(files[: page_size * max_pages])

    def delete_knowledgebase_files(self, file_ids: list[str]) -> None:
        self._enter("delete_knowledgebase_files")
        for file_id in file_ids:
            for kb in self.knowledge_bases.values():
                if kb.files.pop(file_id, None) is not None:
                    self.deleted_files.append(file_id)

    def search_memory(
        self, user_id: str, query: str, kb_ids: list[str], *, limit: int = 9, relativity: float | None = None
    ) -> list[SearchHit]:
        """The memories of exactly ``kb_ids``, best score first, at most ``limit`` (unknown ids hold none)."""
        with self._search_lock:
            self._enter("search_memory")
        if not kb_ids:
            raise ValueError("search_memory needs at least one knowledge base id")
        if any(not kb_id.strip() or kb_id.strip().lower() == "all" for kb_id in kb_ids):
            raise ValueError("search_memory takes explicit knowledge base ids only")
        if not 1 <= limit <= MAX_SEARCH_LIMIT:
            raise ValueError(f"limit must be between 1 and {MAX_SEARCH_LIMIT}")
        if relativity is not None and not 0 <= relativity <= 1:
            raise ValueError("relativity must be between 0 and 1")
        self.searches.append(SearchCall(user_id, query, tuple(kb_ids), limit, relativity))
        if self.during_search is not None:
            self.during_search(tuple(kb_ids))
        for kb_id in kb_ids:
            if kb_id in self.search_failures:
                raise self.search_failures[kb_id]
        hits = [
            m
            for kb_id in dict.fromkeys(kb_ids)
            if kb_id in self.knowledge_bases
            for m in self.knowledge_bases[kb_id].memories
            if relativity is None or (m.score or 0) >= relativity
        ]
        hits.sort(key=lambda m: -(m.score or 0))
        return hits[:limit]

    # -- internals ---------------------------------------------------------------------------------

    def _enter(self, method: EngineMethod) -> None:
        self.calls[method] += 1
        pending = self._failures.get(method)
        if not pending:
            return
        failure = pending[0]
        if failure.times is not None:
            failure.times -= 1
            if failure.times <= 0:
                pending.pop(0)
        raise failure.error

    def _kb(self, kb_id: str, endpoint: str) -> FakeMemosKnowledgeBase:
        kb = self.knowledge_bases.get(kb_id)
        if kb is None:
            raise MemosNotFound("knowledge base does not exist", endpoint=endpoint, code=50120)
        return kb

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}_{next(self._ids):04d}"


class FakeEngines:
    """``KnowledgeEngines``: several MemOS backends, a ``FakeKnowledgeEngine`` each, in the order given.

    ``FakeEngines(a=2, b=2)`` holds backends ``a`` and ``b`` of two KBs each; ``draining`` and ``max_kbs``
    change what ``backends()`` reports from then on (as an edited secret does).
    """

    def __init__(self, **max_kbs: int) -> None:
        self.engines = {backend: FakeKnowledgeEngine(max_kbs=cap) for backend, cap in max_kbs.items()}
        self.max_kbs = dict(max_kbs)
        self.draining: set[str] = set()

    def __getitem__(self, backend_id: str) -> FakeKnowledgeEngine:
        return self.engines[backend_id]

    def backends(self) -> list[EngineBackend]:
        return [
            EngineBackend(b, max_kbs=self.max_kbs[b], draining=b in self.draining) for b in self.engines
        ]

    def engine(self, backend_id: str) -> KnowledgeEngine:
        if backend_id not in self.engines:
            raise MemosBackendUnknown(f"no MemOS backend {backend_id!r}")
        return self.engines[backend_id]

    def kb_counts(self) -> dict[str, int]:
        """The MemOS KBs each backend holds now."""
        return {b: len(e.knowledge_bases) for b, e in self.engines.items()}


def memos_error(message: str = "MemOS is down", *, code: int = 50004) -> MemosError:
    """A MemOS failure of the family its envelope ``code`` maps to (``family_for_code``)."""
    return family_for_code(code)(message, endpoint="/fake", code=code)


# mypy --strict (``make lint`` checks this module) proves that each fake still satisfies its port: a
# drift of either side fails here.
_grants: GrantReader = FakeKnowledgeBaseStore()
_kbs: KnowledgeBaseStore = FakeKnowledgeBaseStore()
_contents: ContentStore = FakeContentStore()
_profiles: ProfileStore = FakeProfileStore()
_activity: ActivityLog = FakeActivityLog()
_counters: RateCounters = FakeRateCounters()
_cleanups: CleanupStore = FakeCleanupStore()
_intents: CreateIntents = FakeCreateIntents()
_executions: CleanupExecutions = FakeCleanupExecutions()
_requeue: UploadRequeue = FakeUploadRequeue()
_objects: UploadObjects = FakeUploadObjects()
_engine: KnowledgeEngine = FakeKnowledgeEngine()
_one_backend: KnowledgeEngines = FakeKnowledgeEngine()
_engines: KnowledgeEngines = FakeEngines(a=1)
_slots: BackendSlots = FakeBackendSlots()
