"""``TeamShareStore`` in memory (the KB store's team shares), on the shared ``FakeTable``, as
``memmy_kb.adapters.dynamodb.team_shares.TeamShareMixin``."""

from __future__ import annotations

from collections.abc import Iterable

from memmy_kb.domain.ports.team_shares import Reach, TeamShareReads
from memmy_kb.domain.storage import AlreadyExists, ConditionFailed, ItemMissing
from memmy_kb.records import ActivityRecord, TeamKb, TeamRecord
from tests.support.fakes.table import FakeTable, _Transaction


class FakeTeamShares:
    """Mixed into ``FakeKnowledgeBaseStore``: ``table`` is the store's."""

    table: FakeTable

    def read_reach(self, user_id: str, *, with_grants: bool) -> Reach:
        t = self.table
        grants = [g.model_copy(deep=True) for (uid, _), g in sorted(t.grants.items()) if uid == user_id]
        memberships = [m.model_copy(deep=True) for (uid, _), m in sorted(t.memberships.items()) if uid == user_id]
        joined = [m.team_id for m in memberships if m.state == "member"]
        return Reach(grants if with_grants else [], memberships, self.batch_get_teams(joined))

    def batch_get_teams(self, team_ids: Iterable[str]) -> dict[str, TeamRecord]:
        return {t: team.model_copy(deep=True) for t in team_ids if (team := self.table.teams.get(t)) is not None}

    def read_team_share(self, user_id: str, team_id: str) -> TeamShareReads:
        team, membership = self.table.teams.get(team_id), self.table.memberships.get((user_id, team_id))
        return TeamShareReads(
            team=team.model_copy(deep=True) if team else None,
            membership=membership.model_copy(deep=True) if membership else None,
        )

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
        t = self.table
        team, kb = t.teams.get(team_id), t.kbs.get(kb_id)
        membership = t.memberships.get((share.shared_by, team_id))

        def add_to_team() -> None:
            held = t.teams[team_id]
            t.teams[team_id] = held.model_copy(
                update={"kbs": {**held.kbs, kb_id: share}, "kb_count": held.kb_count + 1, "version": held.version + 1}
            )

        def add_to_kb() -> None:
            t.kbs[kb_id] = t.kbs[kb_id].model_copy(update={"teams": t.kbs[kb_id].teams | {team_id}})

        txn = _Transaction()
        txn.add(
            ("TEAM", team_id),
            team is not None and kb_id not in team.kbs and team.kb_count < max_team_kbs,
            add_to_team,
        )
        kb_ok = kb is not None and kb.owner_id == share.shared_by and team_id not in kb.teams
        txn.add(("KB", kb_id), kb_ok and kb is not None and len(kb.teams) < max_kb_teams, add_to_kb)
        txn.add(("USER", share.shared_by, team_id), membership is not None and membership.state == "member")
        txn.add(("ACTIVITY", kb_id, activity.activity_id), True, t.log(activity))
        failed = txn.run()
        if 0 in failed:
            if team is None:
                raise ItemMissing("team", team_id)
            if kb_id in team.kbs:
                raise AlreadyExists("team_share", kb_id)
            raise ConditionFailed("team_kb_count", team_id)
        if 1 in failed:
            if kb is None or kb.owner_id != share.shared_by:
                raise ItemMissing("kb", kb_id)
            if team_id in kb.teams:
                raise AlreadyExists("team_share", kb_id)
            raise ConditionFailed("kb_team_count", kb_id)
        if failed:
            raise ItemMissing("team", team_id)

    def delete_team_share(self, team_id: str, kb_id: str, *, activity: ActivityRecord) -> None:
        t = self.table
        team = t.teams.get(team_id)
        if team is None or kb_id not in team.kbs or kb_id not in t.kbs:
            raise ItemMissing("team_share", kb_id)
        kbs = {k: v for k, v in team.kbs.items() if k != kb_id}
        t.teams[team_id] = team.model_copy(update={"kbs": kbs, "kb_count": team.kb_count - 1, "version": team.version + 1})
        t.kbs[kb_id] = t.kbs[kb_id].model_copy(update={"teams": t.kbs[kb_id].teams - {team_id}})
        t.log(activity)()

    def update_membership_recall(self, user_id: str, team_id: str, kb_id: str, enabled: bool) -> None:
        membership = self.table.memberships.get((user_id, team_id))
        if membership is None or membership.state != "member":
            raise ItemMissing("membership", team_id)
        self.table.memberships[(user_id, team_id)] = membership.model_copy(
            update={"recall": {**membership.recall, kb_id: enabled}}
        )
