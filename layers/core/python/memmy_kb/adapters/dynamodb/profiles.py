"""Directory profiles in DynamoDB: ``USER#<user>/PROFILE`` and the ``EMAIL#…``/``PHONE#…`` lookups.

Implements ``memmy_kb.domain.ports.profiles.ProfileStore``. A lookup item names the accounts holding a verified
claim on an email or phone (``claimants``, a string set): one resolves to that account, two or more to
nobody (contested). A profile and its claims are always written in one transaction.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any, Literal

from memmy_kb.adapters.dynamodb.keys import lookup_key, profile_key
from memmy_kb.adapters.dynamodb.table import Action, DynamoTable, Item, TransactionRefused, dump
from memmy_kb.domain.storage import ConditionFailed, ItemMissing
from memmy_kb.records import ProfileRecord

IdentifierKind = Literal["email", "phone"]


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

    def get_lookup_claimants(self, kind: IdentifierKind, value: str) -> frozenset[str]:
        """The accounts holding a verified claim on an email or phone (more than one: it is contested)."""
        return claimants_of(self._table.get(lookup_key(kind, value)))

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

    def add_blocked(
        self, user_id: str, blocked_id: str, *, name: str | None, max_blocked: int, now: datetime
    ) -> ProfileRecord:
        """Add ``blocked_id`` to the user's blocked set (a no-op when already there) and, when given, the
        ``name`` the user knew it by to ``blocked_names``; ItemMissing("profile") without a profile,
        ConditionFailed("blocked") when the set already holds ``max_blocked`` others.

        A profile written before names were kept has no ``blocked_names`` map, and a name cannot be set
        inside a missing map: such a profile gets a new map, conditioned on still having none (a
        concurrent block that made one sends this one back to the first form)."""
        room = (
            "attribute_exists(PK) AND attribute_exists(display_name) AND"
            " (attribute_not_exists(blocked) OR size(blocked) < :cap OR contains(blocked, :id))"
        )
        values: dict[str, Any] = {":who": {blocked_id}, ":now": now, ":cap": max_blocked, ":id": blocked_id}
        writes: list[tuple[str, str, dict[str, Any]]] = [("", "", {})]
        if name is not None:
            into_map = (", blocked_names.#id = :name", " AND attribute_exists(blocked_names)", {":name": name})
            new_map = (", blocked_names = :names", " AND attribute_not_exists(blocked_names)", {":names": {blocked_id: name}})
            writes = [into_map, new_map, into_map]
        for setting, condition, extra in writes:
            names = {"#id": blocked_id} if ":name" in extra else None
            update = f"ADD blocked :who SET updated_at = :now{setting}"
            stored = self._table.update(profile_key(user_id), update, room + condition, {**values, **extra}, names)
            if stored is not None:
                return ProfileRecord.model_validate(stored)
            item = self._table.get(profile_key(user_id))
            if item is None or "display_name" not in item:
                raise ItemMissing("profile", user_id)
            blocked = item.get("blocked", set())
            if blocked_id not in blocked and len(blocked) >= max_blocked:
                raise ConditionFailed("blocked", str(max_blocked))
            # Otherwise the map appeared or went since the write was chosen: the other form.
        raise ConditionFailed("blocked", str(max_blocked))

    def remove_blocked(self, user_id: str, blocked_id: str, *, now: datetime) -> ProfileRecord:
        """Remove ``blocked_id`` from the blocked set and its name from ``blocked_names`` (a no-op when
        absent); ItemMissing("profile")."""
        exists = "attribute_exists(PK) AND attribute_exists(display_name)"
        item = self._table.update(
            profile_key(user_id),
            "DELETE blocked :who REMOVE blocked_names.#id SET updated_at = :now",
            f"{exists} AND attribute_exists(blocked_names)",
            {":who": {blocked_id}, ":now": now},
            names={"#id": blocked_id},
        )
        if item is None:  # no profile, or one written before names were kept
            item = self._table.update(
                profile_key(user_id), "DELETE blocked :who SET updated_at = :now", exists, {":who": {blocked_id}, ":now": now}
            )
        if item is None:
            raise ItemMissing("profile", user_id)
        return ProfileRecord.model_validate(item)

    def put_profile_with_lookups(self, profile: ProfileRecord, previous: ProfileRecord | None) -> ProfileRecord:
        """Store ``profile`` and its claims on the email/phone lookups in one transaction; return it.

        The account joins the claimants of each identifier it verified and leaves those it no longer
        asserts, so a profile and the lookups never disagree. Another account's claim is never taken
        away: two live claims make the identifier contested, and it resolves to nobody until one of them
        goes. The profile's write is conditioned on what was read (a concurrent change cancels the whole
        write: ConditionFailed("profile")), each lookup's on the shape read.
        """
        actions: list[Action] = []
        kinds: tuple[IdentifierKind, ...] = ("email", "phone")
        for kind in kinds:
            new, old = getattr(profile, kind), getattr(previous, kind) if previous else None
            if old and old != new:
                release = self._release(kind, old, profile.user_id)
                if release is not None:
                    actions.append(release)
            if new:
                actions.append(self._claim(kind, new, profile.user_id))
        condition = "attribute_not_exists(PK)" if previous is None else "updated_at = :seen"
        seen = {":seen": {"S": previous.updated_at.isoformat()}} if previous is not None else None
        item = {**profile_key(profile.user_id), "type": "profile", **profile.model_dump()}
        actions.append(self._table.put_action(item, condition, seen))
        try:
            self._table.transact(actions)
        except TransactionRefused as err:
            raise ConditionFailed("profile", profile.user_id) from err
        return profile

    def _claim(self, kind: IdentifierKind, value: str, user_id: str) -> Action:
        """Add ``user_id`` to the lookup's claimants (written even when already there: it repairs a lookup
        lost to a race). A lookup written before claimants were kept (``user_id`` alone) is converted."""
        key = dump(lookup_key(kind, value))
        legacy = self._table.get(lookup_key(kind, value))
        holder = legacy.get("user_id") if legacy else None
        if holder is not None:
            return {
                "Update": {
                    "TableName": self._table.name,
                    "Key": key,
                    "UpdateExpression": "SET claimants = :all, #type = :lookup REMOVE user_id, verified_at",
                    "ConditionExpression": "user_id = :holder",
                    "ExpressionAttributeNames": {"#type": "type"},
                    "ExpressionAttributeValues": dump(
                        {":all": {holder, user_id}, ":lookup": "lookup", ":holder": holder}
                    ),
                }
            }
        return {
            "Update": {
                "TableName": self._table.name,
                "Key": key,
                "UpdateExpression": "ADD claimants :me SET #type = :lookup",
                "ConditionExpression": "attribute_not_exists(user_id)",
                "ExpressionAttributeNames": {"#type": "type"},
                "ExpressionAttributeValues": dump({":me": {user_id}, ":lookup": "lookup"}),
            }
        }

    def _release(self, kind: IdentifierKind, value: str, user_id: str) -> Action | None:
        """Take ``user_id`` off the lookup's claimants (the item goes with its last claimant); None when
        it holds no claim there."""
        item = self._table.get(lookup_key(kind, value))
        claimants = claimants_of(item)
        if user_id not in claimants:
            return None
        key = dump(lookup_key(kind, value))
        if claimants == {user_id}:
            legacy = item is not None and "user_id" in item
            condition = "user_id = :me" if legacy else "size(claimants) = :one AND contains(claimants, :me)"
            values: dict[str, Any] = {":me": user_id} if legacy else {":me": user_id, ":one": 1}
            delete = {"TableName": self._table.name, "Key": key, "ConditionExpression": condition}
            return {"Delete": {**delete, "ExpressionAttributeValues": dump(values)}}
        return {
            "Update": {
                "TableName": self._table.name,
                "Key": key,
                "UpdateExpression": "DELETE claimants :me",
                "ConditionExpression": "contains(claimants, :id)",
                "ExpressionAttributeValues": dump({":me": {user_id}, ":id": user_id}),
            }
        }


def claimants_of(item: Item | None) -> frozenset[str]:
    """The accounts a lookup item names: its ``claimants``, or the one ``user_id`` of an item written
    before claimants were kept."""
    if not item:
        return frozenset()
    if "user_id" in item:
        return frozenset({str(item["user_id"])})
    return frozenset(str(u) for u in item.get("claimants", ()))
