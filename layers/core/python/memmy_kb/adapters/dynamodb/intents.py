"""Create intents in DynamoDB (``INTENT#<kb>``, GSI2 ``INTENT#create`` sorted by start) and the
``Idempotency-Key`` records of creates (``IDEMPOTENCY#create_kb``), claimed in the same transaction.

Implements ``memmy_kb.domain.ports.knowledge_bases.CreateIntents``; GSI2 ``INTENT#create`` is the reconciler's queue of
creates nobody finished.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final

from memmy_kb.adapters.dynamodb.keys import intent_key, limit_key, owned_counter, request_key
from memmy_kb.adapters.dynamodb.table import Action, DynamoTable, Item, TransactionRefused, dump, request_item
from memmy_kb.domain.storage import ConditionFailed, RequestSeen
from memmy_kb.records import RequestRecord

INTENT_QUEUE: Final = "INTENT#create"


class DynamoCreateIntents:
    """A KB create's intent, with its Idempotency-Key claim and the KBs-owned check, and their reads."""

    def __init__(self, table: DynamoTable) -> None:
        self._table = table

    def put_create_intent(
        self,
        kb_id: str,
        memos_name: str,
        started_at: datetime,
        expires_at: int,
        *,
        owner_id: str,
        max_owned: int,
        request: RequestRecord | None,
        now: int,
    ) -> None:
        """Note a KB create before MemOS is called; the create's own transaction deletes it.

        The same transaction checks that ``owner_id`` owns fewer than ``max_owned`` KBs
        (ConditionFailed("kb_count") otherwise), and with ``request`` it claims the ``Idempotency-Key``
        record (new, expired, or in progress past ``in_progress_until`` at ``now``); RequestSeen with the
        record when the key is held, which wins over the count.
        """
        item = {
            **intent_key(kb_id),
            "type": "intent",
            "GSI2PK": INTENT_QUEUE,
            "GSI2SK": started_at.isoformat(),
            "kb_id": kb_id,
            "memos_name": memos_name,
            "started_at": started_at.isoformat(),
            "expires_at": expires_at,
        }
        actions: list[Action] = [self._table.put_action(item, "attribute_not_exists(PK)")]
        if request is not None:
            claim = self._table.put_action(
                request_item(request),
                "attribute_not_exists(PK) OR expires_at < :now"
                " OR (#status = :in_progress AND in_progress_until < :now)",
                dump({":now": now, ":in_progress": "in_progress"}),
            )
            claim["Put"].update(
                ExpressionAttributeNames={"#status": "status"}, ReturnValuesOnConditionCheckFailure="ALL_OLD"
            )
            actions.append(claim)
        actions.append(
            {
                "ConditionCheck": {
                    "TableName": self._table.name,
                    "Key": dump(limit_key(owned_counter(owner_id))),
                    "ConditionExpression": "attribute_not_exists(n) OR n < :cap",
                    "ExpressionAttributeValues": dump({":cap": max_owned}),
                }
            }
        )
        try:
            self._table.transact(actions)
        except TransactionRefused as err:
            if request is not None and 1 in err.failed:
                raise RequestSeen(RequestRecord.model_validate(err.items.get(1, {}))) from err
            raise ConditionFailed("kb_count", str(max_owned)) from err

    def delete_create_intent(self, kb_id: str) -> None:
        self._table.client.delete_item(TableName=self._table.name, Key=dump(intent_key(kb_id)))

    def abandon_create(self, kb_id: str, *, request: RequestRecord | None, keep_intent: bool) -> None:
        """A create that failed: release its ``Idempotency-Key`` record (so the client may retry with the
        key) and, unless ``keep_intent`` (MemOS may hold a KB nobody recorded), delete its intent."""
        if request is None:
            if not keep_intent:
                self.delete_create_intent(kb_id)
            return
        release: Action = {
            "Delete": {
                "TableName": self._table.name,
                "Key": dump(request_key(request.operation, request.key_hash)),
                "ConditionExpression": "attempt = :attempt",
                "ExpressionAttributeValues": {":attempt": {"S": request.attempt}},
            }
        }
        intent: list[Action] = (
            [] if keep_intent else [{"Delete": {"TableName": self._table.name, "Key": dump(intent_key(kb_id))}}]
        )
        try:
            self._table.transact([*intent, release])
        except TransactionRefused:
            if not keep_intent:  # the key was taken over meanwhile: it is the other run's now
                self.delete_create_intent(kb_id)

    def query_stale_intents(self, before: datetime, limit: int) -> list[tuple[str, str]]:
        """``(kb_id, memos_name)`` of creates started before ``before`` that never finished."""
        return [
            (str(item["kb_id"]), str(item.get("memos_name", "")))
            for item in limited_query(
                self._table,
                limit,
                IndexName="GSI2",
                KeyConditionExpression="GSI2PK = :queue AND GSI2SK < :before",
                ExpressionAttributeValues={":queue": {"S": INTENT_QUEUE}, ":before": {"S": before.isoformat()}},
            )
        ]


def limited_query(table: DynamoTable, limit: int, **kwargs: Any) -> list[Item]:
    """At most ``limit`` items of a Query (GSI2's queues), stopping at the first page that has them."""
    if limit <= 0:
        return []
    items = []
    for item in table.query(Limit=limit, **kwargs):
        items.append(item)
        if len(items) >= limit:
            break
    return items

