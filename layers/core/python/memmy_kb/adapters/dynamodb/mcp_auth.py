"""The authorization server's items in DynamoDB (``AuthorizationStore``): clients, sign-ins under way,
codes, refresh tokens and their families, and the registration counters (docs/remote-mcp.md, "Authorization
servers"). Each item has ``expires_at`` for the table's TTL, and each read checks it too
(TTL deletes up to days late). The one-time steps are single conditional writes: a consent is answered
once (a delete conditioned on its digest), a code taken once (a delete returning the old item), a refresh
token spent once (an update conditioned on its not being spent; a second spend revokes its family)."""

from __future__ import annotations

from dataclasses import asdict
from decimal import Decimal
from typing import Any

from botocore.exceptions import ClientError

from memmy_kb.adapters.dynamodb.keys import (
    mcp_client_key,
    mcp_code_key,
    mcp_family_key,
    mcp_pending_key,
    mcp_refresh_key,
    mcp_registration_key,
)
from memmy_kb.adapters.dynamodb.table import (
    DynamoTable,
    Item,
    TransactionRefused,
    dump,
    is_condition_failure,
    load,
)
from memmy_kb.domain.ports.mcp_auth import (
    AuthorizationCode,
    ClientRecord,
    PendingAuthorization,
    RefreshRecord,
    RegistrationRefused,
)

REGISTERED_CLIENT_SECONDS = 365 * 86400
METADATA_DOCUMENT_SECONDS = 600  # a client ID metadata document is fetched again after this
REFRESH_FAMILY_SECONDS = 30 * 86400  # a revoked family is remembered as long as its tokens live
HOUR = 3600
COUNTER_SECONDS = 2 * HOUR
ALL_SOURCES = "*"


def _int(value: Any) -> int:
    return int(value)


def _client(item: Item) -> ClientRecord:
    return ClientRecord(
        client_id=item["client_id"],
        kind=item["kind"],
        redirect_uris=tuple(item["redirect_uris"]),
        created_at=float(item["created_at"]),
        client_name=item.get("client_name"),
        application_type=item.get("application_type", "native"),
    )


def _pending(item: Item) -> PendingAuthorization:
    signed_in = item.get("signed_in_at")
    return PendingAuthorization(
        request_id=item["request_id"],
        client_id=item["client_id"],
        params=dict(item["params"]),
        browser=item["browser"],
        login_verifier=item["login_verifier"],
        login_nonce=item["login_nonce"],
        created_at=_int(item["created_at"]),
        expires_at=_int(item["expires_at"]),
        user_id=item.get("user_id"),
        consent=item.get("consent"),
        signed_in_at=None if signed_in is None else _int(signed_in),
    )


def _code(item: Item) -> AuthorizationCode:
    return AuthorizationCode(
        digest=item["digest"],
        client_id=item["client_id"],
        redirect_uri=item["redirect_uri"],
        scope=item["scope"],
        user_id=item["user_id"],
        auth_time=_int(item["auth_time"]),
        code_challenge=item["code_challenge"],
        resource=item["resource"],
        expires_at=_int(item["expires_at"]),
    )


def _refresh(item: Item) -> RefreshRecord:
    return RefreshRecord(
        digest=item["digest"],
        family=item["family"],
        client_id=item["client_id"],
        client_name=item.get("client_name"),
        user_id=item["user_id"],
        scope=item["scope"],
        resource=item["resource"],
        auth_time=_int(item["auth_time"]),
        expires_at=_int(item["expires_at"]),
        spent=bool(item.get("spent", False)),
    )


def _live(item: Item | None, now: int) -> Item | None:
    return item if item is not None and _int(item["expires_at"]) > now else None


class DynamoAuthorizationStore:
    """``AuthorizationStore`` on the Memmy table. Registrations are capped per hour: ``per_source`` from
    one IP address, ``in_all`` from everyone."""

    def __init__(self, table: DynamoTable, *, per_source: int = 20, in_all: int = 1000) -> None:
        self._table = table
        self._per_source = per_source
        self._in_all = in_all

    # -- clients ---------------------------------------------------------------------------------

    def put_client(self, client: ClientRecord, *, source: str, now: int) -> None:
        life = REGISTERED_CLIENT_SECONDS if client.kind == "registered" else METADATA_DOCUMENT_SECONDS
        record = {**asdict(client), "redirect_uris": list(client.redirect_uris)}
        record["created_at"] = Decimal(str(client.created_at))
        item = {**mcp_client_key(client.client_id), "type": "mcp_client", **record, "expires_at": now + life}
        if client.kind != "registered":  # a metadata document's client, cached: no registration to count
            self._table.client.put_item(TableName=self._table.name, Item=dump(item))
            return
        hour = now - now % HOUR
        actions = [
            self._count(source, hour, self._per_source, now),
            self._count(ALL_SOURCES, hour, self._in_all, now),
            self._table.put_action(item, "attribute_not_exists(PK)"),
        ]
        try:
            self._table.transact(actions)
        except TransactionRefused as refused:
            if refused.failed == [2]:
                raise  # a client id taken twice: 128 random bits, never
            cap = self._per_source if 0 in refused.failed else self._in_all
            whom = "from this address" if 0 in refused.failed else "in all"
            raise RegistrationRefused(
                f"At most {cap} clients may register in an hour {whom}; try again later.",
                retry_after=hour + HOUR - now,
            ) from None

    def _count(self, source: str, hour: int, cap: int, now: int) -> dict[str, Any]:
        return {
            "Update": {
                "TableName": self._table.name,
                "Key": dump(mcp_registration_key(source, hour)),
                "UpdateExpression": "ADD registrations :one SET expires_at = :expires",
                "ConditionExpression": "attribute_not_exists(registrations) OR registrations < :cap",
                "ExpressionAttributeValues": dump(
                    {":one": 1, ":cap": cap, ":expires": hour + COUNTER_SECONDS}
                ),
            }
        }

    def get_client(self, client_id: str) -> ClientRecord | None:
        item = self._table.get(mcp_client_key(client_id))
        return _client(item) if item is not None and item.get("client_id") == client_id else None

    # -- sign-ins under way ------------------------------------------------------------------------

    def put_pending(self, pending: PendingAuthorization) -> None:
        item = {**mcp_pending_key(pending.request_id), "type": "mcp_pending", **asdict(pending)}
        self._table.transact([self._table.put_action(item, "attribute_not_exists(PK)")])

    def get_pending(self, request_id: str, now: int) -> PendingAuthorization | None:
        item = _live(self._table.get(mcp_pending_key(request_id)), now)
        return _pending(item) if item is not None else None

    def sign_in_pending(self, request_id: str, user_id: str, consent: str, now: int) -> bool:
        updated = self._table.update(
            mcp_pending_key(request_id),
            "SET user_id = :user, consent = :consent, signed_in_at = :now",
            "attribute_exists(PK) AND attribute_not_exists(user_id) AND expires_at > :now",
            {":user": user_id, ":consent": consent, ":now": now},
        )
        return updated is not None

    def take_pending(self, request_id: str, consent: str, now: int) -> PendingAuthorization | None:
        old = self._delete_returning(
            mcp_pending_key(request_id),
            "consent = :consent AND expires_at > :now",
            {":consent": consent, ":now": now},
        )
        return _pending(old) if old is not None else None

    # -- codes -------------------------------------------------------------------------------------

    def put_code(self, code: AuthorizationCode) -> None:
        item = {**mcp_code_key(code.digest), "type": "mcp_code", **asdict(code)}
        self._table.transact([self._table.put_action(item, "attribute_not_exists(PK)")])

    def take_code(self, digest: str, now: int) -> AuthorizationCode | None:
        # Deleted whatever its expiry (an expired code is spent too); two takes: one gets the old item.
        old = self._delete_returning(mcp_code_key(digest), "attribute_exists(PK)", {})
        live = _live(old, now)
        return _code(live) if live is not None else None

    def _delete_returning(self, key: dict[str, str], condition: str, values: dict[str, Any]) -> Item | None:
        request: dict[str, Any] = {
            "TableName": self._table.name,
            "Key": dump(key),
            "ConditionExpression": condition,
            "ReturnValues": "ALL_OLD",
        }
        if values:
            request["ExpressionAttributeValues"] = dump(values)
        try:
            answer = self._table.client.delete_item(**request)
        except ClientError as err:
            if is_condition_failure(err):
                return None
            raise
        return load(answer["Attributes"]) if "Attributes" in answer else None

    # -- refresh tokens ----------------------------------------------------------------------------

    def put_refresh(self, record: RefreshRecord) -> None:
        # ``spent`` is written only once true: the spend's condition is its absence.
        item = {**mcp_refresh_key(record.digest), "type": "mcp_refresh", **asdict(record)}
        item["spent"] = True if record.spent else None
        self._table.transact([self._table.put_action(item, "attribute_not_exists(PK)")])

    def spend_refresh(self, digest: str, now: int) -> RefreshRecord | None:
        found = _live(self._table.get(mcp_refresh_key(digest)), now)
        if found is None:
            return None
        record = _refresh(found)
        if record.spent:
            self.revoke_family(record.family, now)  # a replay: the grant ends
            return None
        family_live: dict[str, Any] = {
            "ConditionCheck": {
                "TableName": self._table.name,
                "Key": dump(mcp_family_key(record.family)),
                "ConditionExpression": "attribute_not_exists(revoked_at)",
            }
        }
        spend: dict[str, Any] = {
            "Update": {
                "TableName": self._table.name,
                "Key": dump(mcp_refresh_key(digest)),
                "UpdateExpression": "SET spent = :true",
                "ConditionExpression": "attribute_exists(PK) AND attribute_not_exists(spent)",
                "ExpressionAttributeValues": dump({":true": True}),
            }
        }
        try:
            self._table.transact([family_live, spend])
        except TransactionRefused as refused:
            if 1 in refused.failed and 0 not in refused.failed:
                self.revoke_family(record.family, now)  # spent by another request meanwhile: a replay
            return None
        return RefreshRecord(**{**asdict(record), "spent": True})

    def revoke_family(self, family: str, now: int) -> None:
        self._table.client.update_item(
            TableName=self._table.name,
            Key=dump(mcp_family_key(family)),
            UpdateExpression="SET revoked_at = if_not_exists(revoked_at, :now), expires_at = :expires",
            ExpressionAttributeValues=dump({":now": now, ":expires": now + REFRESH_FAMILY_SECONDS}),
        )

    def find_refresh(self, digest: str, now: int) -> RefreshRecord | None:
        item = _live(self._table.get(mcp_refresh_key(digest)), now)
        return _refresh(item) if item is not None else None
