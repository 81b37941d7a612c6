"""The one in-memory table the fake stores share (``FakeTable``, item family by item family, keys as in
the adapters), and the transactions they write with: conditions evaluated on the state before the write,
applied all or none, invalid past 100 items or with one item twice (``InvalidTransaction``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Final

from memmy_kb.domain.ports.profiles import IdentifierKind
from memmy_kb.domain.storage import ConditionFailed, ItemMissing
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
    MembershipRecord,
    ProfileRecord,
    RequestRecord,
    TeamRecord,
    UploadRecord,
    WindowCount,
)

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
    teams: dict[str, TeamRecord] = field(default_factory=dict)  # TEAM#<team>/META
    memberships: dict[tuple[str, str], MembershipRecord] = field(default_factory=dict)  # (user_id, team_id)

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




def _activity_sk(record: ActivityRecord) -> str:
    return f"{record.at.isoformat()}#{record.activity_id}"
