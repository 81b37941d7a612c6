"""The port of KBs shared with teams (docs/teams.md): what a caller reads through their memberships, and the
share and unshare of a KB with a team. The KB store implements it (``memmy_kb.adapters.dynamodb.team_shares``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from memmy_kb.records import ActivityRecord, GrantRecord, MembershipRecord, TeamKb, TeamRecord


@dataclass(frozen=True)
class Reach:
    """What one caller's reads of their own partition give, strongly consistent: their grants (when asked
    for), their memberships and invitations, and the META of the teams they are a member of (a team whose
    META is gone is absent: it grants nothing)."""

    grants: list[GrantRecord] = field(default_factory=list)
    memberships: list[MembershipRecord] = field(default_factory=list)
    teams: dict[str, TeamRecord] = field(default_factory=dict)


@dataclass(frozen=True)
class TeamShareReads:
    """What a share or an unshare decides on, in one consistent read: the team's META and the caller's
    membership (None when absent)."""

    team: TeamRecord | None
    membership: MembershipRecord | None


class ReachReader(Protocol):
    """The read behind every team-derived access decision and the recall scope."""

    def read_reach(self, user_id: str, *, with_grants: bool) -> Reach:
        """One consistent Query of the caller's partition (grants, profile and memberships with
        ``with_grants``, memberships only without), then, when they are a member of a team, one
        consistent BatchGetItem of those teams' META."""
        ...


class TeamShareStore(ReachReader, Protocol):
    def read_team_share(self, user_id: str, team_id: str) -> TeamShareReads: ...

    def batch_get_teams(self, team_ids: Iterable[str]) -> dict[str, TeamRecord]: ...

    def put_team_share(
        self,
        team_id: str,
        kb_id: str,
        share: TeamKb,
        *,
        max_team_kbs: int,
        max_kb_teams: int,
        activity: ActivityRecord,
    ) -> None:
        """Share in one transaction: the team's ``kbs`` and ``kb_count`` (``version`` +1), the KB's
        ``teams``, a check that the sharer (``share.shared_by``) is still a member, and ``activity``.

        Raises ItemMissing("team") (META gone, or the sharer no longer a member), ItemMissing("kb") (gone,
        or no longer the sharer's), AlreadyExists("team_share"), ConditionFailed("team_kb_count") or
        ConditionFailed("kb_team_count")."""
        ...

    def delete_team_share(self, team_id: str, kb_id: str, *, activity: ActivityRecord) -> None:
        """Unshare in one transaction (both sides and ``activity``); ItemMissing("team_share") when the
        team does not list the KB."""
        ...

    def update_membership_recall(self, user_id: str, team_id: str, kb_id: str, enabled: bool) -> None:
        """Set the member's own recall choice for one of the team's KBs; ItemMissing("membership") when
        they are no longer a member."""
        ...

