"""Teams and memberships as the teams' adapter lays them out (docs/teams.md, "Data"), for tests that need
a team before there is a route to make one: the items, and ``put_team`` / ``put_membership`` to write
them into a table (the local stack's, or moto's)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from memmy_kb.adapters.dynamodb.keys import membership_key, team_key
from memmy_kb.adapters.dynamodb.table import DynamoTable, dump
from memmy_kb.adapters.dynamodb.team_shares import team_kb_value
from memmy_kb.records import MembershipRecord, TeamRecord
from tests.support.factories import T0


def team_item(record: TeamRecord) -> dict[str, Any]:
    """A team's META item: GSI2 ``TEAM`` / the team id, ``kbs`` a map of the shared KBs."""
    data = record.model_dump(exclude={"kbs"})
    kbs = {kb_id: team_kb_value(share) for kb_id, share in record.kbs.items()}
    return {**team_key(record.team_id), "GSI2PK": "TEAM", "GSI2SK": record.team_id, "type": "team", **data, "kbs": kbs}


def membership_item(record: MembershipRecord) -> dict[str, Any]:
    """A membership or invitation in the user's partition, on GSI1 by team."""
    by_team = {"GSI1PK": f"TEAM#{record.team_id}", "GSI1SK": f"USER#{record.user_id}"}
    return {**membership_key(record.user_id, record.team_id), **by_team, "type": "membership", **record.model_dump()}


def new_team(team_id: str, owner_id: str, *, name: str | None = None, at: datetime = T0) -> TeamRecord:
    return TeamRecord(team_id=team_id, name=name or f"团队 {team_id}", owner_id=owner_id, member_count=1, created_at=at)


def new_membership(
    user_id: str, team_id: str, *, role: str = "member", state: str = "member", recall_default: bool = True
) -> MembershipRecord:
    return MembershipRecord.model_validate(
        {
            "user_id": user_id,
            "team_id": team_id,
            "state": state,
            "role": role,
            "invited_at": T0,
            "joined_at": T0 if state == "member" else None,
            "recall_default": recall_default,
        }
    )


def put_team(table: DynamoTable, record: TeamRecord) -> None:
    table.client.put_item(TableName=table.name, Item=dump(team_item(record)))


def put_membership(table: DynamoTable, record: MembershipRecord) -> None:
    table.client.put_item(TableName=table.name, Item=dump(membership_item(record)))


def delete_item(table: DynamoTable, key: dict[str, str]) -> None:
    """A membership removed (or a team's META gone) behind the service's back, as the teams' routes do."""
    table.client.delete_item(TableName=table.name, Key=dump(key))


def make_team(
    service: Any, team_id: str, owner: str, *members: str, admins: tuple[str, ...] = (), invited: tuple[str, ...] = ()
) -> None:
    """A team ``owner`` owns with ``members`` (and ``admins``) who accepted and ``invited`` who did not yet,
    written into the service's table as the teams' routes would leave it."""
    table = service.stores.table
    put_team(table, new_team(team_id, owner))
    put_membership(table, new_membership(owner, team_id, role="owner"))
    for user in members:
        put_membership(table, new_membership(user, team_id))
    for user in admins:
        put_membership(table, new_membership(user, team_id, role="admin"))
    for user in invited:
        put_membership(table, new_membership(user, team_id, state="invited"))


def share_with_team(service: Any, kb_id: str, team_id: str, user: str = "alice") -> Any:
    """``POST /knowledge-bases/{kb_id}/teams``."""
    return service.call("POST", f"/knowledge-bases/{kb_id}/teams", user, body={"team_id": team_id})


def unshare_from_team(service: Any, kb_id: str, team_id: str, user: str = "alice") -> Any:
    return service.call("DELETE", f"/knowledge-bases/{kb_id}/teams/{team_id}", user)


def remove_member(service: Any, user: str, team_id: str) -> None:
    """A removal or a leave, as the teams' routes make it: the membership item deleted."""
    delete_item(service.stores.table, membership_key(user, team_id))


def delete_team(service: Any, team_id: str) -> None:
    """A team's META gone (its memberships left for the cleanup), as a team deletion leaves it."""
    delete_item(service.stores.table, team_key(team_id))
