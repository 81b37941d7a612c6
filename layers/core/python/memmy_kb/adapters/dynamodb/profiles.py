"""Directory profiles in DynamoDB: ``USER#<user>/PROFILE`` and the ``EMAIL#…``/``PHONE#…`` lookups.

Implements ``memmy_kb.domain.ports.ProfileStore``. A lookup item points a verified email or phone at the
one account that holds it; a profile and its lookups are always written in one transaction.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any, Literal

from botocore.exceptions import ClientError

from memmy_kb.adapters.dynamodb.table import (
    Action,
    DynamoTable,
    TransactionRefused,
    dump,
    is_condition_failure,
    load,
    lookup_key,
    profile_key,
)
from memmy_kb.adapters.errors import ConditionFailed, ItemMissing
from memmy_kb.records import ProfileRecord

IdentifierKind = Literal["email", "phone"]


def _newer(verified_at: int | None, holders: Any) -> bool:
    """Whether a verification at ``verified_at`` is newer than the holder's (unknown times never win)."""
    return verified_at is not None and (holders is None or verified_at > int(holders))


class DynamoProfileStore:
    """Profiles and the identifier lookups that point at them."""

    def __init__(self, table: DynamoTable) -> None:
        self._table = table

    def get_profile(self, user_id: str) -> ProfileRecord | None:
        item = self._table.get(profile_key(user_id))
        return ProfileRecord.model_validate(item) if item else None

    def batch_get_profiles(self, user_ids: Iterable[str]) -> dict[str, ProfileRecord]:
        items = self._table.batch_get([profile_key(u) for u in dict.fromkeys(user_ids)], consistent=False)
        return {item["user_id"]: ProfileRecord.model_validate(item) for item in items}

    def get_lookup_user(self, kind: IdentifierKind, value: str) -> str | None:
        """The user id an email or phone lookup points at."""
        item = self._table.get(lookup_key(kind, value))
        return str(item["user_id"]) if item else None

    def update_profile_settings(self, user_id: str, *, recall_new_shares: bool, now: datetime) -> ProfileRecord:
        """Set the user's own settings; ItemMissing("profile") without a profile. Touching ``updated_at``
        makes a ``PUT /me`` that read the profile before this fail its condition instead of undoing it."""
        item = self._table.update(
            profile_key(user_id),
            "SET recall_new_shares = :recall, updated_at = :now",
            "attribute_exists(PK) AND attribute_exists(display_name)",
            {":recall": recall_new_shares, ":now": now},
        )
        if item is None:
            raise ItemMissing("profile", user_id)
        return ProfileRecord.model_validate(item)

    def add_blocked(self, user_id: str, blocked_id: str, *, max_blocked: int, now: datetime) -> ProfileRecord:
        """Add ``blocked_id`` to the user's blocked set (a no-op when already there); ItemMissing("profile")
        without a profile, ConditionFailed("blocked") when the set already holds ``max_blocked`` others."""
        try:
            resp = self._table.client.update_item(
                TableName=self._table.name,
                Key=dump(profile_key(user_id)),
                UpdateExpression="ADD blocked :who SET updated_at = :now",
                ConditionExpression="attribute_exists(PK) AND attribute_exists(display_name) AND"
                " (attribute_not_exists(blocked) OR size(blocked) < :cap OR contains(blocked, :id))",
                ExpressionAttributeValues=dump(
                    {":who": {blocked_id}, ":now": now, ":cap": max_blocked, ":id": blocked_id}
                ),
                ReturnValues="ALL_NEW",
            )
        except ClientError as err:
            if not is_condition_failure(err):
                raise
            if self.get_profile(user_id) is None:
                raise ItemMissing("profile", user_id) from err
            raise ConditionFailed("blocked", str(max_blocked)) from err
        return ProfileRecord.model_validate(load(resp["Attributes"]))

    def remove_blocked(self, user_id: str, blocked_id: str, *, now: datetime) -> ProfileRecord:
        """Remove ``blocked_id`` from the blocked set (a no-op when absent); ItemMissing("profile")."""
        item = self._table.update(
            profile_key(user_id),
            "DELETE blocked :who SET updated_at = :now",
            "attribute_exists(PK) AND attribute_exists(display_name)",
            {":who": {blocked_id}, ":now": now},
        )
        if item is None:
            raise ItemMissing("profile", user_id)
        return ProfileRecord.model_validate(item)

    def put_profile_with_lookups(
        self, profile: ProfileRecord, previous: ProfileRecord | None, *, verified_at: int | None = None
    ) -> ProfileRecord:
        """Store ``profile`` and move its email/phone lookups, all in one transaction; return what was stored.

        A verified identifier held by another account moves to this one when this verification
        (``verified_at``, the token's issue time) is newer than the holder's: phone numbers get
        reassigned, and the latest verification wins. Otherwise it stays with the holder and leaves this
        profile, so a profile and its lookups never disagree and an old token cannot take it back. Every
        step is conditioned on what was read, so a concurrent change cancels the whole write
        (ConditionFailed("profile")).
        """
        actions: list[Action] = []
        taken: dict[str, dict[IdentifierKind, str]] = {}  # holder -> the identifiers taken from them
        kinds: tuple[IdentifierKind, ...] = ("email", "phone")
        for kind in kinds:
            new, old = getattr(profile, kind), getattr(previous, kind) if previous else None
            if old and old != new:
                actions.append(
                    {
                        "Delete": {
                            "TableName": self._table.name,
                            "Key": dump(lookup_key(kind, old)),
                            "ConditionExpression": "attribute_not_exists(PK) OR user_id = :me",
                            "ExpressionAttributeValues": {":me": {"S": profile.user_id}},
                        }
                    }
                )
            if not new:
                continue
            lookup = self._table.get(lookup_key(kind, new))
            holder = lookup["user_id"] if lookup else None
            held_since = lookup.get("verified_at") if lookup else None
            if lookup and holder != profile.user_id and not _newer(verified_at, held_since):
                profile = profile.model_copy(update={kind: None})
                continue
            if holder is None or holder == profile.user_id:
                # A re-save with an older token (or one without ``iat``) must not lower the recorded
                # verification time: that would let a verification older than ours take it over.
                since = verified_at if _newer(verified_at, held_since) else held_since
                actions.append(self._claim_own_lookup(kind, new, profile.user_id, since))
            else:
                actions.append(self._claim_taken_lookup(kind, new, profile.user_id, holder, verified_at))
                taken.setdefault(holder, {})[kind] = new
        # One update per former holder, however many identifiers move: a transaction may touch an item once.
        actions.extend(self._release_from(holder, values, profile.updated_at) for holder, values in taken.items())
        condition = "attribute_not_exists(PK)" if previous is None else "updated_at = :seen"
        seen = {":seen": {"S": previous.updated_at.isoformat()}} if previous is not None else None
        item = {**profile_key(profile.user_id), "type": "profile", **profile.model_dump()}
        actions.append(self._table.put_action(item, condition, seen))
        try:
            self._table.transact(actions)
        except TransactionRefused as err:
            raise ConditionFailed("profile", profile.user_id) from err
        return profile

    def _claim_own_lookup(self, kind: IdentifierKind, value: str, user_id: str, since: Any) -> Action:
        # Written even when unchanged: it repairs a lookup lost to a race, and fails if taken meanwhile.
        item = {**lookup_key(kind, value), "type": "lookup", "user_id": user_id, "verified_at": since}
        mine = {":me": {"S": user_id}}
        return self._table.put_action(item, "attribute_not_exists(PK) OR user_id = :me", mine)

    def _claim_taken_lookup(
        self, kind: IdentifierKind, value: str, user_id: str, holder: str, verified_at: int | None
    ) -> Action:
        item = {**lookup_key(kind, value), "type": "lookup", "user_id": user_id, "verified_at": verified_at}
        return self._table.put_action(item, "user_id = :holder", {":holder": {"S": holder}})

    def _release_from(self, holder: str, values: dict[IdentifierKind, str], now: datetime) -> Action:
        """The former holder's profile loses the identifiers taken from it, in one update.

        Touching updated_at makes a save of the holder's profile that read it before this take-over fail
        its condition, instead of putting an identifier back on it.
        """
        names = {f"#a{i}": kind for i, kind in enumerate(values)}
        conditions = [f"(attribute_not_exists({name}) OR {name} = :v{i})" for i, name in enumerate(names)]
        attribute_values = {f":v{i}": {"S": value} for i, value in enumerate(values.values())}
        return {
            "Update": {
                "TableName": self._table.name,
                "Key": dump(profile_key(holder)),
                "UpdateExpression": f"REMOVE {', '.join(names)} SET updated_at = :now",
                "ConditionExpression": " AND ".join(conditions),
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": {**attribute_values, ":now": {"S": now.isoformat()}},
            }
        }
