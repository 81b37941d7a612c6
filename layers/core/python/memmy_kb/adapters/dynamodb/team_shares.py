"""KBs shared with teams in DynamoDB (docs/teams.md, "Data"): a team META's ``kbs`` map and the KB META's
``teams`` set, kept in one transaction, and the reads that expand a caller's memberships into KBs.

Mixed into ``memmy_kb.adapters.dynamodb.knowledge_bases.DynamoKnowledgeBaseStore`` (the KB store every
access decision already reads from), implementing ``memmy_kb.domain.ports.team_shares.TeamShareStore``.
Every read that decides access is strongly consistent; GSI1's team index is never read here.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from memmy_kb.adapters.dynamodb.activity import activity_put
from memmy_kb.adapters.dynamodb.keys import kb_key, membership_key, team_key
from memmy_kb.adapters.dynamodb.table import Action, DynamoTable, Item, TransactionRefused, dump
from memmy_kb.domain.ports.team_shares import Reach, TeamShareReads
from memmy_kb.domain.storage import AlreadyExists, ConditionFailed, ItemMissing

if TYPE_CHECKING:
    from memmy_kb.records import ActivityRecord, GrantRecord, MembershipRecord, TeamKb, TeamRecord

# A membership's sort key is ``TEAM#<team>``: the recall Query reads from the first grant (``KB#``) to the
# last membership, the profile (``PROFILE``) in between.
_LAST_MEMBERSHIP = "TEAM#~"


def team_kb_value(share: TeamKb) -> dict[str, Any]:
    """One entry of a team's ``kbs`` map as stored (nested datetimes as ISO 8601, no nulls)."""
    return {k: v for k, v in share.model_dump(mode="json").items() if v is not None}


def remove_from_team(table: DynamoTable, team_id: str, kb_id: str, *, listed: bool) -> Action:
    """The Update taking ``kb_id`` off a team's META (``kb_count`` -1, ``version`` +1), for a transaction;
    with ``listed`` only while the team lists it, else while the META exists."""
    condition = "attribute_exists(kbs.#kb)" if listed else "attribute_exists(PK)"
    return {
        "Update": {
            "TableName": table.name,
            "Key": dump(team_key(team_id)),
            "UpdateExpression": "REMOVE kbs.#kb SET kb_count = kb_count - :one ADD version :one",
            "ConditionExpression": condition,
            "ExpressionAttributeNames": {"#kb": kb_id},
            "ExpressionAttributeValues": dump({":one": 1}),
        }
    }


def _records(items: Iterable[Item]) -> tuple[list[GrantRecord], list[MembershipRecord]]:
    from memmy_kb.records import GrantRecord, MembershipRecord

    grants: list[GrantRecord] = []
    memberships: list[MembershipRecord] = []
    for item in items:
        if item["SK"].startswith("KB#"):
            grants.append(GrantRecord.model_validate(item))
        elif item["SK"].startswith("TEAM#"):
            memberships.append(MembershipRecord.model_validate(item))
    return grants, memberships


class TeamShareMixin:
    """The KB store's team shares: ``_table`` is the store's table."""

    _table: DynamoTable

    def read_reach(self, user_id: str, *, with_grants: bool) -> Reach:
        """One consistent Query of ``USER#<user>`` (``KB#`` to ``TEAM#~`` with the grants, ``TEAM#`` only
        without), then one consistent BatchGetItem of the META of the teams the user is a member of."""
        if with_grants:
            condition = "PK = :pk AND SK BETWEEN :first AND :last"
            values = {":first": {"S": "KB#"}, ":last": {"S": _LAST_MEMBERSHIP}}
        else:
            condition = "PK = :pk AND begins_with(SK, :team)"
            values = {":team": {"S": "TEAM#"}}
        items = self._table.query(
            KeyConditionExpression=condition,
            ExpressionAttributeValues={":pk": {"S": f"USER#{user_id}"}, **values},
            ConsistentRead=True,
        )
        grants, memberships = _records(items)
        joined = [m.team_id for m in memberships if m.state == "member"]
        return Reach(grants, memberships, self.batch_get_teams(joined) if joined else {})

    def batch_get_teams(self, team_ids: Iterable[str]) -> dict[str, TeamRecord]:
        """The teams' META items that exist, in one consistent BatchGetItem per 100."""
        from memmy_kb.records import TeamRecord

        keys = [team_key(t) for t in dict.fromkeys(team_ids)]
        if not keys:
            return {}
        return {
            item["team_id"]: TeamRecord.model_validate(item) for item in self._table.batch_get(keys, consistent=True)
        }

    def read_team_share(self, user_id: str, team_id: str) -> TeamShareReads:
        """The team's META and the caller's membership, in one consistent BatchGetItem."""
        from memmy_kb.records import MembershipRecord, TeamRecord

        found = {item["SK"]: item for item in self._table.batch_get(
            [team_key(team_id), membership_key(user_id, team_id)], consistent=True
        )}
        team, membership = found.get("META"), found.get(f"TEAM#{team_id}")
        return TeamShareReads(
            team=TeamRecord.model_validate(team) if team else None,
            membership=MembershipRecord.model_validate(membership) if membership else None,
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
        table = self._table
        to_team = {
            "Update": {
                "TableName": table.name,
                "Key": dump(team_key(team_id)),
                "UpdateExpression": "SET kbs.#kb = :share, kb_count = if_not_exists(kb_count, :zero) + :one"
                " ADD version :one",
                "ConditionExpression": "attribute_exists(PK) AND attribute_not_exists(kbs.#kb)"
                " AND (attribute_not_exists(kb_count) OR kb_count < :cap)",
                "ExpressionAttributeNames": {"#kb": kb_id},
                "ExpressionAttributeValues": dump(
                    {":share": team_kb_value(share), ":zero": 0, ":one": 1, ":cap": max_team_kbs}
                ),
            }
        }
        to_kb = {
            "Update": {
                "TableName": table.name,
                "Key": dump(kb_key(kb_id)),
                "UpdateExpression": "ADD teams :team",
                "ConditionExpression": "attribute_exists(PK) AND owner_id = :owner AND NOT contains(teams, :id)"
                " AND (attribute_not_exists(teams) OR size(teams) < :cap)",
                "ExpressionAttributeValues": dump(
                    {":team": {team_id}, ":id": team_id, ":owner": share.shared_by, ":cap": max_kb_teams}
                ),
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }
        still_member = {
            "ConditionCheck": {
                "TableName": table.name,
                "Key": dump(membership_key(share.shared_by, team_id)),
                "ConditionExpression": "#state = :member",
                "ExpressionAttributeNames": {"#state": "state"},
                "ExpressionAttributeValues": {":member": {"S": "member"}},
            }
        }
        try:
            table.transact([to_team, to_kb, still_member, activity_put(table, activity)])
        except TransactionRefused as err:
            _share_refused(err, self.batch_get_teams([team_id]).get(team_id), kb_id, team_id, share.shared_by)

    def delete_team_share(self, team_id: str, kb_id: str, *, activity: ActivityRecord) -> None:
        table = self._table
        from_kb = {
            "Update": {
                "TableName": table.name,
                "Key": dump(kb_key(kb_id)),
                "UpdateExpression": "DELETE teams :team",
                "ConditionExpression": "attribute_exists(PK)",
                "ExpressionAttributeValues": dump({":team": {team_id}}),
            }
        }
        actions = [remove_from_team(table, team_id, kb_id, listed=True), from_kb, activity_put(table, activity)]
        try:
            table.transact(actions)
        except TransactionRefused as err:
            raise ItemMissing("team_share", kb_id) from err

    def update_membership_recall(self, user_id: str, team_id: str, kb_id: str, enabled: bool) -> None:
        item = self._table.update(
            membership_key(user_id, team_id),
            "SET recall.#kb = :on",
            "#state = :member AND attribute_exists(recall)",
            {":on": enabled, ":member": "member"},
            {"#kb": kb_id, "#state": "state"},
        )
        if item is None:
            # A membership written without its choices map gets one (a nested SET needs the map).
            item = self._table.update(
                membership_key(user_id, team_id),
                "SET recall = :choices",
                "#state = :member AND attribute_not_exists(recall)",
                {":choices": {kb_id: enabled}, ":member": "member"},
                {"#state": "state"},
            )
        if item is None:
            raise ItemMissing("membership", team_id)


def _share_refused(
    err: TransactionRefused, team: TeamRecord | None, kb_id: str, team_id: str, sharer: str
) -> None:
    """Why a share's transaction was refused, as the domain's error (the team read again when it failed)."""
    if 0 in err.failed:
        if team is None:
            raise ItemMissing("team", team_id) from err
        if kb_id in team.kbs:
            raise AlreadyExists("team_share", kb_id) from err
        raise ConditionFailed("team_kb_count", team_id) from err
    if 1 in err.failed:
        kb = err.items.get(1)
        if kb is None or kb.get("owner_id") != sharer:
            raise ItemMissing("kb", kb_id) from err
        if team_id in (kb.get("teams") or ()):
            raise AlreadyExists("team_share", kb_id) from err
        raise ConditionFailed("kb_team_count", kb_id) from err
    raise ItemMissing("team", team_id) from err
