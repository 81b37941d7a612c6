"""``ProfileStore`` in memory, on the shared ``FakeTable``: profiles and their email and phone lookups."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime

from memmy_kb.domain.ports.profiles import IdentifierKind
from memmy_kb.domain.storage import ConditionFailed, ItemMissing
from memmy_kb.records import ProfileRecord
from tests.support.fakes.table import _IDENTIFIER_KINDS, FakeTable, _Transaction


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
