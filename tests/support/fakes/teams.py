"""``TeamStore`` in memory, on the shared ``FakeTable``: teams, memberships and their counters, written
as ``memmy_kb.adapters.dynamodb.teams.DynamoTeamStore`` writes them (every condition checked against the
state before the write, nothing applied unless all pass)."""

from __future__ import annotations

from collections.abc import Iterable

from memmy_kb.domain.ports.profiles import IdentifierKind
from memmy_kb.domain.ports.teams import InviteReads
from memmy_kb.domain.storage import AlreadyExists, ConditionFailed, ItemMissing
from memmy_kb.records import (
    ActivityRecord,
    CleanupRecord,
    MembershipRecord,
    TeamRecord,
    TeamRole,
    WindowCount,
)
from tests.support.fakes.table import FakeTable


def teams_counter(user_id: str) -> str:
    return f"teams#{user_id}"


class FakeTeamStore:
    """``TeamStore`` as the DynamoDB adapter."""

    def __init__(self, table: FakeTable | None = None) -> None:
        self.table = table if table is not None else FakeTable()

    # -- reads ---------------------------------------------------------------------------------------

    def get_team(self, team_id: str) -> TeamRecord | None:
        team = self.table.teams.get(team_id)
        return team.model_copy(deep=True) if team else None

    def batch_get_teams(self, team_ids: Iterable[str]) -> dict[str, TeamRecord]:
        return {t: self.table.teams[t].model_copy(deep=True) for t in dict.fromkeys(team_ids) if t in self.table.teams}

    def get_membership(self, user_id: str, team_id: str) -> MembershipRecord | None:
        found = self.table.memberships.get((user_id, team_id))
        return found.model_copy(deep=True) if found else None

    def query_memberships(self, user_id: str) -> list[MembershipRecord]:
        return [m.model_copy(deep=True) for (u, _), m in sorted(self.table.memberships.items()) if u == user_id]

    def query_team_members(self, team_id: str) -> list[MembershipRecord]:
        return [m.model_copy(deep=True) for (_, t), m in sorted(self.table.memberships.items()) if t == team_id]

    def read_invite(
        self,
        team_id: str,
        inviter_id: str,
        *,
        identifier: tuple[IdentifierKind, str] | None,
        user_id: str | None,
        counter: tuple[str, int],
    ) -> InviteReads:
        profile = self.table.profiles.get(user_id) if user_id is not None else None
        counts = self.table.counters.get(counter[0], {})
        return InviteReads(
            team=self.get_team(team_id),
            inviter=self.get_membership(inviter_id, team_id),
            claimants=self.table.lookups.get(identifier, frozenset()) if identifier else frozenset(),
            profile=profile.model_copy(deep=True) if profile else None,
            attempts=(counts.get(f"w{counter[1]}", 0), counts.get(f"w{counter[1] - 1}", 0)),
        )

    # -- writes --------------------------------------------------------------------------------------

    def _teams_count(self, user_id: str) -> int:
        return self.table.counters.get(teams_counter(user_id), {}).get("n", 0)

    def _count_teams(self, user_id: str, step: int) -> None:
        counts = self.table.counters.setdefault(teams_counter(user_id), {})
        counts["n"] = counts.get("n", 0) + step

    def _put_team(self, team_id: str, **changes: object) -> None:
        self.table.teams[team_id] = self.table.teams[team_id].model_copy(update=changes)

    def create_team(self, team: TeamRecord, owner: MembershipRecord, *, max_teams: int) -> None:
        if self._teams_count(owner.user_id) >= max_teams:
            raise ConditionFailed("teams", str(max_teams))
        if team.team_id in self.table.teams or (owner.user_id, team.team_id) in self.table.memberships:
            raise AlreadyExists("team", team.team_id)
        self.table.teams[team.team_id] = team.model_copy(deep=True)
        self.table.memberships[(owner.user_id, team.team_id)] = owner.model_copy(deep=True)
        self._count_teams(owner.user_id, 1)

    def rename_team(self, team_id: str, name: str, *, activity: ActivityRecord) -> TeamRecord:
        if team_id not in self.table.teams:
            raise ItemMissing("team", team_id)
        self._put_team(team_id, name=name)
        self.table.log(activity)()
        return self.table.teams[team_id].model_copy(deep=True)

    def put_invitation(
        self,
        invitation: MembershipRecord,
        *,
        owner_id: str,
        max_members: int,
        attempts: WindowCount | None,
        activity: ActivityRecord,
    ) -> None:
        team_id, user_id = invitation.team_id, invitation.user_id
        team = self.table.teams.get(team_id)
        inviter = self.table.memberships.get((invitation.invited_by or "", team_id))
        profile = self.table.profiles.get(user_id)
        if (user_id, team_id) in self.table.memberships:
            raise AlreadyExists("membership", user_id)
        if team is None:
            raise ItemMissing("team", team_id)
        if team.owner_id != owner_id:
            raise ConditionFailed("owner", team_id)
        if team.member_count + team.invited_count >= max_members:
            raise ConditionFailed("members", team_id)
        if inviter is None or inviter.state != "member" or inviter.role not in ("owner", "admin"):
            raise ConditionFailed("inviter", invitation.invited_by or "")
        if profile is not None and (team_id in profile.blocked_teams or owner_id in profile.blocked):
            raise ConditionFailed("blocked", user_id)
        if attempts is not None and not self.table.window_has_room(attempts):
            raise ConditionFailed("attempts", attempts.name)
        self.table.memberships[(user_id, team_id)] = invitation.model_copy(deep=True)
        self._put_team(team_id, invited_count=team.invited_count + 1)
        if attempts is not None:
            self.table.count_window(attempts)()
        self.table.log(activity)()

    def accept_invitation(self, membership: MembershipRecord, *, max_teams: int, activity: ActivityRecord) -> None:
        key = (membership.user_id, membership.team_id)
        current = self.table.memberships.get(key)
        if current is None or current.state != "invited":
            raise ConditionFailed("membership", membership.user_id)
        team = self.table.teams.get(membership.team_id)
        if team is None:
            raise ItemMissing("team", membership.team_id)
        if self._teams_count(membership.user_id) >= max_teams:
            raise ConditionFailed("teams", str(max_teams))
        self.table.memberships[key] = current.model_copy(
            update={"state": "member", "joined_at": membership.joined_at, "recall_default": membership.recall_default}
        )
        self._put_team(team.team_id, member_count=team.member_count + 1, invited_count=team.invited_count - 1)
        self._count_teams(membership.user_id, 1)
        self.table.log(activity)()

    def delete_membership(
        self, membership: MembershipRecord, *, activity: ActivityRecord, block_team: bool = False
    ) -> None:
        key = (membership.user_id, membership.team_id)
        current = self.table.memberships.get(key)
        if current is None:
            raise ItemMissing("membership", membership.user_id)
        if (current.state, current.role) != (membership.state, membership.role):
            raise ConditionFailed("membership", membership.user_id)
        team = self.table.teams.get(membership.team_id)
        if team is None:
            raise ItemMissing("team", membership.team_id)
        profile = self.table.profiles.get(membership.user_id)
        if block_team and profile is None:
            raise ItemMissing("profile", membership.user_id)
        del self.table.memberships[key]
        if current.state == "member":
            self._put_team(team.team_id, member_count=team.member_count - 1)
            self._count_teams(membership.user_id, -1)
        else:
            self._put_team(team.team_id, invited_count=team.invited_count - 1)
        if block_team and profile is not None:
            self.table.profiles[membership.user_id] = profile.model_copy(
                update={"blocked_teams": profile.blocked_teams | {membership.team_id}}
            )
        self.table.log(activity)()

    def set_role(self, team_id: str, user_id: str, role: TeamRole, *, activity: ActivityRecord) -> None:
        current = self.table.memberships.get((user_id, team_id))
        if current is None or current.state != "member" or current.role == "owner":
            raise ConditionFailed("membership", user_id)
        self.table.memberships[(user_id, team_id)] = current.model_copy(update={"role": role})
        self.table.log(activity)()

    def transfer_ownership(self, team_id: str, owner_id: str, new_owner_id: str, *, activity: ActivityRecord) -> None:
        old = self.table.memberships.get((owner_id, team_id))
        new = self.table.memberships.get((new_owner_id, team_id))
        team = self.table.teams.get(team_id)
        if (
            old is None
            or (old.role, old.state) != ("owner", "member")
            or new is None
            or new.state != "member"
            or team is None
            or team.owner_id != owner_id
        ):
            raise ConditionFailed("team", team_id)
        self.table.memberships[(owner_id, team_id)] = old.model_copy(update={"role": "admin"})
        self.table.memberships[(new_owner_id, team_id)] = new.model_copy(update={"role": "owner"})
        self._put_team(team_id, owner_id=new_owner_id)
        self.table.log(activity)()

    def delete_team(self, team: TeamRecord, cleanup: CleanupRecord) -> None:
        current = self.table.teams.get(team.team_id)
        if (
            current is None
            or current.owner_id != team.owner_id
            or current.version != team.version
            or any(kb_id not in self.table.kbs for kb_id in team.kbs)
            or cleanup.cleanup_id in self.table.cleanups
        ):
            raise ConditionFailed("team", team.team_id)
        del self.table.teams[team.team_id]
        for kb_id in team.kbs:
            kb = self.table.kbs[kb_id]
            self.table.kbs[kb_id] = kb.model_copy(update={"teams": kb.teams - {team.team_id}})
        self.table.cleanups[cleanup.cleanup_id] = cleanup.model_copy(deep=True)

    def delete_team_memberships(self, team_id: str, limit: int) -> bool:
        found = [key for key in sorted(self.table.memberships) if key[1] == team_id]
        for key in found[:limit]:
            membership = self.table.memberships.pop(key)
            if membership.state == "member":
                self._count_teams(membership.user_id, -1)
        return len(found) <= limit
