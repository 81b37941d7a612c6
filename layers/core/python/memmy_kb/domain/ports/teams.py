"""The port of teams and memberships: a team's META item, each user's invitation or membership, and
the transactions that keep their counts (docs/teams.md, "Data")."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    # Only signatures name these: a function taking a port imports no model for it.
    from memmy_kb.domain.ports.profiles import IdentifierKind
    from memmy_kb.records import (
        ActivityRecord,
        CleanupRecord,
        MembershipRecord,
        ProfileRecord,
        TeamRecord,
        TeamRole,
        WindowCount,
    )


@dataclass(frozen=True)
class InviteReads:
    """What an invitation reads before its transaction, in one batched read (``TeamStore.read_invite``)."""

    team: TeamRecord | None
    inviter: MembershipRecord | None
    # The accounts holding a verified claim on the email or phone asked for (empty: nobody).
    claimants: frozenset[str]
    # The profile of the user id asked for, when it has one.
    profile: ProfileRecord | None
    # The inviter's invitation counter: this window's count and the previous one's.
    attempts: tuple[int, int]


class TeamStore(Protocol):
    """Teams and memberships (``memmy_kb.adapters.dynamodb.teams``). Every write that touches more than
    one item is one transaction with conditions; a failed condition is reported as the storage error
    naming the item that stopped it."""

    def create_team(self, team: TeamRecord, owner: MembershipRecord, *, max_teams: int) -> None: ...

    def get_team(self, team_id: str) -> TeamRecord | None: ...

    def batch_get_teams(self, team_ids: Iterable[str]) -> dict[str, TeamRecord]: ...

    def get_membership(self, user_id: str, team_id: str) -> MembershipRecord | None: ...

    def query_memberships(self, user_id: str) -> list[MembershipRecord]: ...

    def query_team_members(self, team_id: str) -> list[MembershipRecord]: ...

    def read_invite(
        self,
        team_id: str,
        inviter_id: str,
        *,
        identifier: tuple[IdentifierKind, str] | None,
        user_id: str | None,
        counter: tuple[str, int],
    ) -> InviteReads: ...

    def rename_team(self, team_id: str, name: str, *, activity: ActivityRecord) -> TeamRecord: ...

    def put_invitation(
        self,
        invitation: MembershipRecord,
        *,
        owner_id: str,
        max_members: int,
        attempts: WindowCount | None,
        activity: ActivityRecord,
    ) -> None: ...

    def accept_invitation(
        self, membership: MembershipRecord, *, max_teams: int, activity: ActivityRecord
    ) -> None: ...

    def delete_membership(
        self, membership: MembershipRecord, *, activity: ActivityRecord, block_team: bool = False
    ) -> None: ...

    def set_role(self, team_id: str, user_id: str, role: TeamRole, *, activity: ActivityRecord) -> None: ...

    def transfer_ownership(
        self, team_id: str, owner_id: str, new_owner_id: str, *, activity: ActivityRecord
    ) -> None: ...

    def delete_team(self, team: TeamRecord, cleanup: CleanupRecord) -> None: ...

    def delete_team_memberships(self, team_id: str, limit: int) -> bool: ...
