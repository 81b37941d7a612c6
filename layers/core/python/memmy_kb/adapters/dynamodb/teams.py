"""Teams and memberships in DynamoDB: the transactions of ``memmy_kb.domain.ports.teams.TeamStore``
(the items and reads: ``memmy_kb.adapters.dynamodb.team_items``).

Every write that touches more than one item is one transaction with conditions; which condition failed
is told from the cancellation's indexes (and, where it matters, the item it returned).
"""

from __future__ import annotations

from typing import Any

from memmy_kb.adapters.dynamodb.activity import activity_put, window_update
from memmy_kb.adapters.dynamodb.cleanups import cleanup_item
from memmy_kb.adapters.dynamodb.keys import kb_key, limit_key, membership_key, profile_key, team_key
from memmy_kb.adapters.dynamodb.table import Action, DynamoTable, TransactionRefused, dump
from memmy_kb.adapters.dynamodb.team_items import TeamReads, membership_item, team_item, teams_counter
from memmy_kb.domain.storage import AlreadyExists, ConditionFailed, ItemMissing
from memmy_kb.records import (
    ActivityRecord,
    CleanupRecord,
    MembershipRecord,
    TeamRecord,
    TeamRole,
    WindowCount,
)

_ROLE_STATE = {"#role": "role", "#state": "state"}


class DynamoTeamStore(TeamReads):
    """Teams, invitations and memberships."""

    def __init__(self, table: DynamoTable) -> None:
        super().__init__(table)
        self._table = table

    def _update(self, key: dict[str, str], update: str, condition: str | None, values: dict[str, Any], **extra: Any) -> Action:
        body: dict[str, Any] = {"TableName": self._table.name, "Key": dump(key), "UpdateExpression": update, **extra}
        if condition:
            body["ConditionExpression"] = condition
        if values:
            body["ExpressionAttributeValues"] = dump(values)
        return {"Update": body}

    def _count_teams(self, user_id: str, step: int, cap: int | None = None) -> Action:
        """The user's teams counter moved by ``step``; with ``cap``, refused when it already holds that many."""
        if cap is None:  # leaving never fails on the counter (one from before counts were kept becomes 0)
            return self._update(limit_key(teams_counter(user_id)), "SET n = if_not_exists(n, :zero) + :step", None, {":zero": 0, ":step": step})
        return self._update(
            limit_key(teams_counter(user_id)),
            "ADD n :step",
            "attribute_not_exists(n) OR n < :cap",
            {":step": step, ":cap": cap},
        )

    def create_team(self, team: TeamRecord, owner: MembershipRecord, *, max_teams: int) -> None:
        """META, the owner's membership and the owner's teams counter; ConditionFailed("teams") when the
        counter holds ``max_teams``, AlreadyExists("team") on an id clash."""
        actions = [
            self._table.put_action(team_item(team), "attribute_not_exists(PK)"),
            self._table.put_action(membership_item(owner), "attribute_not_exists(PK)"),
            self._count_teams(owner.user_id, 1, max_teams),
        ]
        try:
            self._table.transact(actions)
        except TransactionRefused as err:
            if 2 in err.failed:
                raise ConditionFailed("teams", str(max_teams)) from err
            raise AlreadyExists("team", team.team_id) from err

    def rename_team(self, team_id: str, name: str, *, activity: ActivityRecord) -> TeamRecord:
        """Set the name while the team exists, logged in the same transaction; ItemMissing("team")."""
        update = self._update(team_key(team_id), "SET #name = :name", "attribute_exists(PK)", {":name": name}, ExpressionAttributeNames={"#name": "name"})
        try:
            self._table.transact([update, activity_put(self._table, activity)])
        except TransactionRefused as err:
            raise ItemMissing("team", team_id) from err
        team = self.get_team(team_id)
        if team is None:
            raise ItemMissing("team", team_id)
        return team

    def put_invitation(
        self,
        invitation: MembershipRecord,
        *,
        owner_id: str,
        max_members: int,
        attempts: WindowCount | None,
        activity: ActivityRecord,
    ) -> None:
        """The invitation, the team's invited count (``seats`` under ``max_members``), the inviter still
        an owner or admin, the invitee not blocking the team or its owner, the inviter's window counter,
        and the log entry, in one transaction.

        Raises AlreadyExists("membership"), ItemMissing("team"), ConditionFailed("members") (full),
        ConditionFailed("owner") (the team changed hands), ConditionFailed("inviter"),
        ConditionFailed("blocked") or ConditionFailed("attempts").
        """
        team_id, inviter = invitation.team_id, invitation.invited_by or ""
        actions: list[Action] = [
            self._table.put_action(membership_item(invitation), "attribute_not_exists(PK)"),
            self._update(
                team_key(team_id),
                "ADD invited_count :one, seats :one",
                "attribute_exists(PK) AND owner_id = :owner AND (attribute_not_exists(seats) OR seats < :cap)",
                {":one": 1, ":owner": owner_id, ":cap": max_members},
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            ),
            {
                "ConditionCheck": {
                    "TableName": self._table.name,
                    "Key": dump(membership_key(inviter, team_id)),
                    "ConditionExpression": "#state = :member AND #role IN (:owner_role, :admin)",
                    "ExpressionAttributeNames": _ROLE_STATE,
                    "ExpressionAttributeValues": dump({":member": "member", ":owner_role": "owner", ":admin": "admin"}),
                }
            },
            {
                "ConditionCheck": {
                    "TableName": self._table.name,
                    "Key": dump(profile_key(invitation.user_id)),
                    "ConditionExpression": "NOT contains(blocked_teams, :team) AND NOT contains(blocked, :owner)",
                    "ExpressionAttributeValues": dump({":team": team_id, ":owner": owner_id}),
                }
            },
        ]
        if attempts is not None:
            actions.append(window_update(self._table, attempts))
        actions.append(activity_put(self._table, activity))
        try:
            self._table.transact(actions)
        except TransactionRefused as err:
            raise _invite_refusal(err, invitation, owner_id, attempts) from err

    def accept_invitation(self, membership: MembershipRecord, *, max_teams: int, activity: ActivityRecord) -> None:
        """The invitation becomes a membership (while still an invitation: ConditionFailed("membership")),
        counted on META (ItemMissing("team") when it is gone) and on the member's teams counter
        (ConditionFailed("teams") when full)."""
        actions = [
            self._update(
                membership_key(membership.user_id, membership.team_id),
                "SET #state = :member, joined_at = :at, recall_default = :default",
                "#state = :invited",
                {":member": "member", ":invited": "invited", ":at": membership.joined_at, ":default": membership.recall_default},
                ExpressionAttributeNames={"#state": "state"},
            ),
            self._update(
                team_key(membership.team_id),
                "ADD member_count :one, invited_count :minus",
                "attribute_exists(PK)",
                {":one": 1, ":minus": -1},
            ),
            self._count_teams(membership.user_id, 1, max_teams),
            activity_put(self._table, activity),
        ]
        try:
            self._table.transact(actions)
        except TransactionRefused as err:
            if 0 in err.failed:
                raise ConditionFailed("membership", membership.user_id) from err
            if 1 in err.failed:
                raise ItemMissing("team", membership.team_id) from err
            raise ConditionFailed("teams", str(max_teams)) from err

    def delete_membership(
        self, membership: MembershipRecord, *, activity: ActivityRecord, block_team: bool = False
    ) -> None:
        """Delete a membership or invitation as read (same state and role: ConditionFailed("membership")
        otherwise, ItemMissing("membership") when gone), uncount it on META (ItemMissing("team") when the
        team is gone) and, for a member, on their teams counter; with ``block_team`` the team joins the
        user's ``blocked_teams``. One transaction with the log entry."""
        user_id, team_id = membership.user_id, membership.team_id
        member = membership.state == "member"
        actions: list[Action] = [
            {
                "Delete": {
                    "TableName": self._table.name,
                    "Key": dump(membership_key(user_id, team_id)),
                    "ConditionExpression": "attribute_exists(PK) AND #state = :state AND #role = :role",
                    "ExpressionAttributeNames": _ROLE_STATE,
                    "ExpressionAttributeValues": dump({":state": membership.state, ":role": membership.role}),
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                }
            },
            self._update(
                team_key(team_id),
                f"ADD {'member_count' if member else 'invited_count'} :minus, seats :minus",
                "attribute_exists(PK)",
                {":minus": -1},
            ),
        ]
        if member:
            actions.append(self._count_teams(user_id, -1))
        if block_team:
            actions.append(self._update(profile_key(user_id), "ADD blocked_teams :team", "attribute_exists(PK)", {":team": {team_id}}))
        actions.append(activity_put(self._table, activity))
        try:
            self._table.transact(actions)
        except TransactionRefused as err:
            if 0 in err.failed:
                if 0 not in err.items:
                    raise ItemMissing("membership", user_id) from err
                raise ConditionFailed("membership", user_id) from err
            if 1 in err.failed:
                raise ItemMissing("team", team_id) from err
            raise ItemMissing("profile", user_id) from err

    def set_role(self, team_id: str, user_id: str, role: TeamRole, *, activity: ActivityRecord) -> None:
        """Make a member (not the owner) ``role``; ConditionFailed("membership") otherwise."""
        update = self._update(
            membership_key(user_id, team_id),
            "SET #role = :role",
            "#state = :member AND #role <> :owner",
            {":role": role, ":member": "member", ":owner": "owner"},
            ExpressionAttributeNames=_ROLE_STATE,
        )
        try:
            self._table.transact([update, activity_put(self._table, activity)])
        except TransactionRefused as err:
            raise ConditionFailed("membership", user_id) from err

    def transfer_ownership(self, team_id: str, owner_id: str, new_owner_id: str, *, activity: ActivityRecord) -> None:
        """The owner becomes an admin and the member ``new_owner_id`` the owner, META's ``owner_id`` with
        them; ConditionFailed("team") unless all three are as expected."""
        actions = [
            self._update(
                membership_key(owner_id, team_id),
                "SET #role = :admin",
                "#role = :owner AND #state = :member",
                {":admin": "admin", ":owner": "owner", ":member": "member"},
                ExpressionAttributeNames=_ROLE_STATE,
            ),
            self._update(
                membership_key(new_owner_id, team_id),
                "SET #role = :owner",
                "#state = :member",
                {":owner": "owner", ":member": "member"},
                ExpressionAttributeNames=_ROLE_STATE,
            ),
            self._update(team_key(team_id), "SET owner_id = :new", "owner_id = :old", {":new": new_owner_id, ":old": owner_id}),
            activity_put(self._table, activity),
        ]
        try:
            self._table.transact(actions)
        except TransactionRefused as err:
            raise ConditionFailed("team", team_id) from err

    def delete_team(self, team: TeamRecord, cleanup: CleanupRecord) -> None:
        """META (still the owner's, at the ``version`` read), the team out of each of its KBs' ``teams``,
        and the cleanup's outbox item, in one transaction; ConditionFailed("team") otherwise."""
        version = "(attribute_not_exists(version) OR version = :version)" if team.version == 0 else "version = :version"
        actions: list[Action] = [
            {
                "Delete": {
                    "TableName": self._table.name,
                    "Key": dump(team_key(team.team_id)),
                    "ConditionExpression": f"attribute_exists(PK) AND owner_id = :owner AND {version}",
                    "ExpressionAttributeValues": dump({":owner": team.owner_id, ":version": team.version}),
                }
            },
            *(
                self._update(kb_key(kb_id), "DELETE teams :team", "attribute_exists(PK)", {":team": {team.team_id}})
                for kb_id in team.kbs
            ),
            self._table.put_action(cleanup_item(cleanup), "attribute_not_exists(PK)"),
        ]
        try:
            self._table.transact(actions)
        except TransactionRefused as err:
            raise ConditionFailed("team", team.team_id) from err

    def delete_team_memberships(self, team_id: str, limit: int) -> bool:
        """Delete up to ``limit`` memberships and invitations of a deleted team, taking each member's off
        their teams counter in the same transaction; True once none is left.

        GSI1 may lag: an entry it still lists as invited may have been accepted before the team went
        (its delete, conditioned on the state, is refused); the item is then read again and deleted as it
        is, so it is neither left behind nor its member's counter taken twice."""
        for done, membership in enumerate(self.query_team_members(team_id)):
            if done == limit:
                return False
            if self._delete_left_membership(membership):
                continue
            current = self.get_membership(membership.user_id, team_id)  # consistent: gone, or moved on
            if current is not None and not self._delete_left_membership(current):
                return False  # it moved again meanwhile: the next round reads it again
        return True

    def _delete_left_membership(self, membership: MembershipRecord) -> bool:
        """One membership or invitation of a deleted team, in the state read (and a member's counter);
        False when the transaction was refused (gone, or in another state)."""
        actions: list[Action] = [
            {
                "Delete": {
                    "TableName": self._table.name,
                    "Key": dump(membership_key(membership.user_id, membership.team_id)),
                    "ConditionExpression": "attribute_exists(PK) AND #state = :state",
                    "ExpressionAttributeNames": {"#state": "state"},
                    "ExpressionAttributeValues": dump({":state": membership.state}),
                }
            }
        ]
        if membership.state == "member":
            actions.append(self._count_teams(membership.user_id, -1))
        try:
            self._table.transact(actions)
        except TransactionRefused:
            return False
        return True


def _invite_refusal(
    err: TransactionRefused, invitation: MembershipRecord, owner_id: str, attempts: WindowCount | None
) -> Exception:
    if 0 in err.failed:
        return AlreadyExists("membership", invitation.user_id)
    if 1 in err.failed:
        meta = err.items.get(1)
        if meta is None:
            return ItemMissing("team", invitation.team_id)
        if meta.get("owner_id") != owner_id:
            return ConditionFailed("owner", invitation.team_id)
        return ConditionFailed("members", invitation.team_id)
    if 2 in err.failed:
        return ConditionFailed("inviter", invitation.invited_by or "")
    if 3 in err.failed:
        return ConditionFailed("blocked", invitation.user_id)
    if attempts is not None:
        return ConditionFailed("attempts", attempts.name)
    return ConditionFailed("members", invitation.team_id)
