"""Knowledge bases and grants in DynamoDB: ``KB#<kb>/META`` and ``USER#<user>/KB#<kb>`` (GSI1 by KB).

Implements ``memmy_kb.domain.ports.knowledge_bases.KnowledgeBaseStore`` (its team shares in
``memmy_kb.adapters.dynamodb.team_shares``). The grant items are the single authority for
access and recall scope, so every read of them is strongly consistent; GSI1 serves the member list only.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from botocore.exceptions import ClientError

from memmy_kb.adapters.dynamodb.activity import activity_put, cap_update, window_counts, window_update
from memmy_kb.adapters.dynamodb.keys import (
    grant_key,
    intent_key,
    kb_key,
    limit_key,
    lookup_key,
    owned_counter,
    profile_key,
    request_key,
)
from memmy_kb.adapters.dynamodb.profiles import IdentifierKind, claimants_of
from memmy_kb.adapters.dynamodb.table import DynamoTable, Item, TransactionRefused, dump, is_condition_failure
from memmy_kb.adapters.dynamodb.team_shares import TeamShareMixin
from memmy_kb.domain.storage import AlreadyExists, ConditionFailed, ItemMissing
from memmy_kb.records import (
    ActivityRecord,
    CountCap,
    GrantRecord,
    KnowledgeBaseRecord,
    ProfileRecord,
    RequestRecord,
    ShareReads,
    WindowCount,
)

KB_INDEX = "KB"


def _kb_item(kb: KnowledgeBaseRecord) -> Item:
    # GSI2 "KB" lists every live KB for the reconciler's residue scan (by id, resumable from a cursor).
    return {**kb_key(kb.kb_id), "type": "kb", "GSI2PK": KB_INDEX, "GSI2SK": kb.kb_id, **kb.model_dump()}


def _grant_item(grant: GrantRecord) -> Item:
    return {
        **grant_key(grant.user_id, grant.kb_id),
        "GSI1PK": f"KB#{grant.kb_id}",
        "GSI1SK": f"USER#{grant.user_id}",
        "type": "grant",
        **grant.model_dump(),
    }


class DynamoKnowledgeBaseStore(TeamShareMixin):
    """KB META items, the grants on them, and their shares with teams (``TeamShareMixin``)."""

    def __init__(self, table: DynamoTable) -> None:
        self._table = table

    def put_kb_with_owner_grant(
        self,
        kb: KnowledgeBaseRecord,
        owner_grant: GrantRecord,
        *,
        max_owned: int,
        request: RequestRecord | None,
    ) -> None:
        """Write META and the owner's grant together, or neither, and clear the create's intent item;
        AlreadyExists("kb") on an id clash. The owner's count of KBs is bumped in the same transaction,
        ConditionFailed("kb_count") when it already holds ``max_owned``. With ``request``
        (completed, with its result), its ``Idempotency-Key`` record is completed too, while this attempt
        still holds it (ConditionFailed("request") when another took it over)."""
        actions = [
            self._table.put_action(_kb_item(kb), "attribute_not_exists(PK)"),
            self._table.put_action(_grant_item(owner_grant), "attribute_not_exists(PK)"),
            {"Delete": {"TableName": self._table.name, "Key": dump(intent_key(kb.kb_id))}},
            {
                "Update": {
                    "TableName": self._table.name,
                    "Key": dump(limit_key(owned_counter(kb.owner_id))),
                    "UpdateExpression": "ADD n :one",
                    "ConditionExpression": "attribute_not_exists(n) OR n < :cap",
                    "ExpressionAttributeValues": dump({":one": 1, ":cap": max_owned}),
                }
            },
        ]
        if request is not None:
            actions.append(
                {
                    "Update": {
                        "TableName": self._table.name,
                        "Key": dump(request_key(request.operation, request.key_hash)),
                        "UpdateExpression": "SET #status = :completed, #result = :result",
                        "ConditionExpression": "attempt = :attempt AND #status = :in_progress",
                        "ExpressionAttributeNames": {"#status": "status", "#result": "result"},
                        "ExpressionAttributeValues": dump(
                            {
                                ":completed": "completed",
                                ":result": request.result or "",
                                ":attempt": request.attempt,
                                ":in_progress": "in_progress",
                            }
                        ),
                    }
                }
            )
        try:
            self._table.transact(actions)
        except TransactionRefused as err:
            if request is not None and len(actions) - 1 in err.failed:
                raise ConditionFailed("request", request.key_hash) from err
            if 3 in err.failed:
                raise ConditionFailed("kb_count", str(max_owned)) from err
            raise AlreadyExists("kb", kb.kb_id) from err

    def get_kb(self, kb_id: str) -> KnowledgeBaseRecord | None:
        item = self._table.get(kb_key(kb_id))
        return KnowledgeBaseRecord.model_validate(item) if item else None

    def batch_get_kbs_and_profiles(
        self, kb_ids: Iterable[str], user_ids: Iterable[str]
    ) -> tuple[dict[str, KnowledgeBaseRecord], dict[str, ProfileRecord]]:
        """META items and profiles in one BatchGetItem (per 100 keys; unprocessed keys asked again),
        strongly consistent for both: the KB list's one read after its Query."""
        keys = [kb_key(k) for k in dict.fromkeys(kb_ids)] + [profile_key(u) for u in dict.fromkeys(user_ids)]
        kbs: dict[str, KnowledgeBaseRecord] = {}
        profiles: dict[str, ProfileRecord] = {}
        for item in self._table.batch_get(keys, consistent=True):
            if item["SK"] == "META":
                kbs[item["kb_id"]] = KnowledgeBaseRecord.model_validate(item)
            elif "display_name" in item:  # a holder's partial item (keys and updated_at) is no profile
                profiles[item["user_id"]] = ProfileRecord.model_validate(item)
        return kbs, profiles

    def read_share(
        self,
        owner_id: str,
        kb_id: str,
        *,
        identifier: tuple[IdentifierKind, str] | None,
        user_id: str | None,
        counter: tuple[str, int],
    ) -> ShareReads:
        """What a share decides on, in one consistent BatchGetItem: the owner's grant, META, the
        claimants of ``identifier``, the profile of ``user_id`` and the counts of ``counter`` (its name and
        the current window)."""
        keys = {"grant": grant_key(owner_id, kb_id), "kb": kb_key(kb_id), "counter": limit_key(counter[0])}
        if identifier is not None:
            keys["lookup"] = lookup_key(*identifier)
        if user_id is not None:
            keys["profile"] = profile_key(user_id)
        found = {(item["PK"], item["SK"]): item for item in self._table.batch_get(list(keys.values()), consistent=True)}
        items = {name: found.get((key["PK"], key["SK"])) for name, key in keys.items()}
        grant, kb, profile = items["grant"], items["kb"], items.get("profile")
        return ShareReads(
            owner_grant=GrantRecord.model_validate(grant) if grant else None,
            kb=KnowledgeBaseRecord.model_validate(kb) if kb else None,
            claimants=claimants_of(items.get("lookup")),
            profile=ProfileRecord.model_validate(profile) if profile and "display_name" in profile else None,
            attempts=window_counts(items["counter"], counter[1]),
        )

    def get_grant(self, user_id: str, kb_id: str) -> GrantRecord | None:
        item = self._table.get(grant_key(user_id, kb_id))
        return GrantRecord.model_validate(item) if item else None

    def query_grants(self, user_id: str) -> list[GrantRecord]:
        """All of a user's grants in one consistent Query: its cost follows the user, not the table."""
        return [
            GrantRecord.model_validate(item)
            for item in self._table.query(
                KeyConditionExpression="PK = :pk AND begins_with(SK, :kb)",
                ExpressionAttributeValues={":pk": {"S": f"USER#{user_id}"}, ":kb": {"S": "KB#"}},
                ConsistentRead=True,
            )
        ]

    def update_kb_name(self, kb_id: str, owner_id: str, name: str) -> KnowledgeBaseRecord:
        """Set the name if the KB still exists and ``owner_id`` still owns it; ItemMissing("kb") otherwise."""
        item = self._table.update(
            kb_key(kb_id),
            "SET #name = :name",
            "attribute_exists(PK) AND owner_id = :owner",
            {":name": name, ":owner": owner_id},
            {"#name": "name"},
        )
        if item is None:
            raise ItemMissing("kb", kb_id)
        return KnowledgeBaseRecord.model_validate(item)

    def update_grant_recall(self, user_id: str, kb_id: str, enabled: bool) -> GrantRecord:
        """Change one user's recall setting for one KB; ItemMissing("grant") when the grant is gone."""
        item = self._table.update(
            grant_key(user_id, kb_id), "SET recall = :recall", "attribute_exists(PK)", {":recall": enabled}
        )
        if item is None:
            raise ItemMissing("grant", kb_id)
        return GrantRecord.model_validate(item)

    def put_reader_grant(
        self,
        grant: GrantRecord,
        *,
        max_readers: int,
        daily: CountCap,
        activity: ActivityRecord,
        attempts: WindowCount | None = None,
    ) -> None:
        """Write a reader grant and count it on META, if the KB exists, is the owner's and has room, and
        the reader has not blocked the owner; count the new member on ``daily``, with ``attempts`` count
        the share attempt (omitted when it was counted apart), and log ``activity``, all in the one
        transaction.

        Raises AlreadyExists("grant"), ItemMissing("kb") (deleted or changed hands),
        ConditionFailed("member_count") (full), ConditionFailed("blocked") (the reader blocks the owner),
        ConditionFailed("daily") (``daily`` is at its limit) or ConditionFailed("attempts") (the attempt
        window filled since it was read).
        """
        count = {
            "Update": {
                "TableName": self._table.name,
                "Key": dump(kb_key(grant.kb_id)),
                "UpdateExpression": "SET member_count = if_not_exists(member_count, :zero) + :one"
                " ADD readers :reader, member_version :one",
                "ConditionExpression": "attribute_exists(PK) AND owner_id = :owner"
                " AND (attribute_not_exists(member_count) OR member_count < :cap)",
                "ExpressionAttributeValues": dump(
                    {
                        ":zero": 0,
                        ":one": 1,
                        ":owner": grant.owner_id,
                        ":cap": max_readers,
                        ":reader": {grant.user_id},
                    }
                ),
            }
        }
        not_blocked = {
            "ConditionCheck": {
                "TableName": self._table.name,
                "Key": dump(profile_key(grant.user_id)),
                "ConditionExpression": "NOT contains(blocked, :owner)",
                "ExpressionAttributeValues": {":owner": {"S": grant.owner_id}},
            }
        }
        actions = [
            self._table.put_action(_grant_item(grant), "attribute_not_exists(PK)"),
            count,
            not_blocked,
            cap_update(self._table, daily),
        ]
        attempts_at = len(actions)
        if attempts is not None:
            actions.append(window_update(self._table, attempts))
        actions.append(activity_put(self._table, activity))
        try:
            self._table.transact(actions)
        except TransactionRefused as err:
            if 0 in err.failed:
                raise AlreadyExists("grant", grant.user_id) from err
            if 1 in err.failed:
                kb = self.get_kb(grant.kb_id)
                if kb is None or kb.owner_id != grant.owner_id:
                    raise ItemMissing("kb", grant.kb_id) from err
                raise ConditionFailed("member_count", str(max_readers)) from err
            if 2 in err.failed:
                raise ConditionFailed("blocked", grant.user_id) from err
            if attempts is not None and attempts_at in err.failed:
                raise ConditionFailed("attempts", attempts.name) from err
            raise ConditionFailed("daily", daily.name) from err

    def delete_reader_grant(self, kb_id: str, user_id: str, *, activity: ActivityRecord) -> None:
        """Delete a reader's grant and uncount it (logging ``activity`` with it); ItemMissing("grant") when
        there is no such reader grant.

        The count never blocks a revoke: its update needs only META to exist, and when META is gone (the
        KB was deleted) the grant is deleted on its own, unlogged.
        """
        delete: dict[str, Any] = {
            "TableName": self._table.name,
            "Key": dump(grant_key(user_id, kb_id)),
            "ConditionExpression": "attribute_exists(PK) AND #role = :reader",
            "ExpressionAttributeNames": {"#role": "role"},
            "ExpressionAttributeValues": {":reader": {"S": "reader"}},
        }
        uncount = {
            "TableName": self._table.name,
            "Key": dump(kb_key(kb_id)),
            "UpdateExpression": "SET member_count = member_count - :one"
            " DELETE readers :reader ADD member_version :one",
            "ConditionExpression": "attribute_exists(PK)",
            "ExpressionAttributeValues": dump({":one": 1, ":reader": {user_id}}),
        }
        try:
            self._table.transact([{"Delete": delete}, {"Update": uncount}, activity_put(self._table, activity)])
        except TransactionRefused as err:
            if 0 in err.failed:
                raise ItemMissing("grant", user_id) from err
            try:
                self._table.client.delete_item(**delete)
            except ClientError as gone:
                if is_condition_failure(gone):
                    raise ItemMissing("grant", user_id) from gone
                raise

    def query_kb_members(self, kb_id: str) -> list[GrantRecord]:
        """Every grant on a KB, from GSI1: for display only, never to decide access."""
        return [
            GrantRecord.model_validate(item)
            for item in self._table.query(
                IndexName="GSI1",
                KeyConditionExpression="GSI1PK = :kb",
                ExpressionAttributeValues={":kb": {"S": f"KB#{kb_id}"}},
            )
        ]
