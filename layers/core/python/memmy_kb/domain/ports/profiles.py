"""The port of directory profiles and the email and phone lookups that point at them."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:
    # Only signatures name these: a function taking a port imports no model for it.
    from memmy_kb.records import (
        ProfileRecord,
    )


IdentifierKind = Literal["email", "phone"]


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
