"""The items of teams in DynamoDB: a team's META (``TEAM#<team>/META``, GSI2 ``TEAM``) and each
membership (``USER#<user>/TEAM#<team>``, GSI1 ``TEAM#<team>``/``USER#<user>``), and their reads.

META also keeps ``seats``: members plus open invitations, the number the member cap holds (a condition
cannot add two attributes). Memberships are the authority for who is in a team, so the reads that decide
access are consistent; GSI1 serves the member list and the cleanup only.
"""

from __future__ import annotations

from collections.abc import Iterable

from memmy_kb.adapters.dynamodb.activity import window_counts
from memmy_kb.adapters.dynamodb.keys import limit_key, lookup_key, membership_key, profile_key, team_key
from memmy_kb.adapters.dynamodb.profiles import IdentifierKind, claimants_of
from memmy_kb.adapters.dynamodb.table import DynamoTable, Item
from memmy_kb.domain.ports.teams import InviteReads
from memmy_kb.records import MembershipRecord, ProfileRecord, TeamRecord

TEAM_INDEX = "TEAM"


def teams_counter(user_id: str) -> str:
    """The counter of teams ``user_id`` belongs to (``LIMIT#teams#<user>``)."""
    return f"teams#{user_id}"


def team_item(team: TeamRecord) -> Item:
    return {
        **team_key(team.team_id),
        "type": "team",
        "GSI2PK": TEAM_INDEX,
        "GSI2SK": team.team_id,
        "seats": team.member_count + team.invited_count,
        **team.model_dump(exclude={"kbs"}),
        "kbs": {},
    }


def membership_item(membership: MembershipRecord) -> Item:
    return {
        **membership_key(membership.user_id, membership.team_id),
        "GSI1PK": f"TEAM#{membership.team_id}",
        "GSI1SK": f"USER#{membership.user_id}",
        "type": "membership",
        **membership.model_dump(),
    }


class TeamReads:
    """The reads of teams and memberships."""

    def __init__(self, table: DynamoTable) -> None:
        self._table = table

    def get_team(self, team_id: str) -> TeamRecord | None:
        item = self._table.get(team_key(team_id))
        return TeamRecord.model_validate(item) if item else None

    def batch_get_teams(self, team_ids: Iterable[str]) -> dict[str, TeamRecord]:
        """META items in one consistent BatchGetItem (per 100 keys)."""
        items = self._table.batch_get([team_key(t) for t in dict.fromkeys(team_ids)], consistent=True)
        return {item["team_id"]: TeamRecord.model_validate(item) for item in items}

    def get_membership(self, user_id: str, team_id: str) -> MembershipRecord | None:
        item = self._table.get(membership_key(user_id, team_id))
        return MembershipRecord.model_validate(item) if item else None

    def query_memberships(self, user_id: str) -> list[MembershipRecord]:
        """A user's invitations and memberships, in one consistent Query of their partition."""
        return [
            MembershipRecord.model_validate(item)
            for item in self._table.query(
                KeyConditionExpression="PK = :pk AND begins_with(SK, :team)",
                ExpressionAttributeValues={":pk": {"S": f"USER#{user_id}"}, ":team": {"S": "TEAM#"}},
                ConsistentRead=True,
            )
        ]

    def query_team_members(self, team_id: str) -> list[MembershipRecord]:
        """Every membership and invitation of a team, from GSI1: for display and the cleanup only."""
        return [
            MembershipRecord.model_validate(item)
            for item in self._table.query(
                IndexName="GSI1",
                KeyConditionExpression="GSI1PK = :team",
                ExpressionAttributeValues={":team": {"S": f"TEAM#{team_id}"}},
            )
        ]

    def read_invite(
        self,
        team_id: str,
        inviter_id: str,
        *,
        identifier: tuple[IdentifierKind, str] | None,
        user_id: str | None,
        counter: tuple[str, int],
    ) -> InviteReads:
        """What an invitation decides on, in one consistent BatchGetItem: META, the inviter's membership,
        the claimants of ``identifier``, the profile of ``user_id`` and the counts of ``counter``."""
        keys = {
            "team": team_key(team_id),
            "inviter": membership_key(inviter_id, team_id),
            "counter": limit_key(counter[0]),
        }
        if identifier is not None:
            keys["lookup"] = lookup_key(*identifier)
        if user_id is not None:
            keys["profile"] = profile_key(user_id)
        found = {(i["PK"], i["SK"]): i for i in self._table.batch_get(list(keys.values()), consistent=True)}
        items = {name: found.get((key["PK"], key["SK"])) for name, key in keys.items()}
        team, inviter, profile = items["team"], items["inviter"], items.get("profile")
        return InviteReads(
            team=TeamRecord.model_validate(team) if team else None,
            inviter=MembershipRecord.model_validate(inviter) if inviter else None,
            claimants=claimants_of(items.get("lookup")),
            profile=ProfileRecord.model_validate(profile) if profile and "display_name" in profile else None,
            attempts=window_counts(items["counter"], counter[1]),
        )
