"""The KBs placed on each MemOS backend: one item per backend (``BACKEND#<id>/COUNTER``) holding the count
``used`` and the set ``kbs`` of the KB ids placed there.

Implements ``memmy_kb.domain.ports.engines.BackendSlots``. A claim is one conditional UpdateItem
(``used < max_kbs``, the KB added to the set in the same write): DynamoDB applies the writes of one item
one after another, so concurrent creates never take more than ``max_kbs`` slots, and no transaction means
no contention to retry. A release is one conditional UpdateItem too (the KB still in the set): repeated
(cleanup rounds are), it frees the slot once. The set stays small (a backend holds at most its plan's
cap of KBs: 100 ids are about 3 KB; the secret allows ``max_kbs`` up to 10,000, about 270 KB, under
DynamoDB's 400 KB item); reading the count reads the set with it.
"""

from __future__ import annotations

from typing import Final

from memmy_kb.adapters.dynamodb.keys import Key
from memmy_kb.adapters.dynamodb.table import DynamoTable

_PREFIX: Final = "BACKEND#"


def counter_key(backend_id: str) -> Key:
    return {"PK": f"{_PREFIX}{backend_id}", "SK": "COUNTER"}


class DynamoBackendSlots:
    """Per-backend KB counters with a conditional claim, and the KBs each holds."""

    def __init__(self, table: DynamoTable) -> None:
        self._table = table

    def claim_slot(self, backend_id: str, kb_id: str, *, max_kbs: int) -> bool:
        """``kb_id`` placed on ``backend_id`` unless it holds ``max_kbs`` already."""
        counted = self._table.update(
            counter_key(backend_id),
            "SET used = if_not_exists(used, :zero) + :one, #type = :type ADD kbs :kb",
            "(attribute_not_exists(used) OR used < :max) AND NOT contains(kbs, :id)",
            {
                ":zero": 0,
                ":one": 1,
                ":max": max_kbs,
                ":type": "backend_counter",
                ":kb": {kb_id},
                ":id": kb_id,
            },
            names={"#type": "type"},
        )
        return counted is not None

    def release_slot(self, backend_id: str, kb_id: str) -> None:
        """``kb_id``'s slot freed, if it still holds one (a repeat changes nothing)."""
        self._table.update(
            counter_key(backend_id),
            "ADD used :minus DELETE kbs :kb",
            "contains(kbs, :id)",
            {":minus": -1, ":kb": {kb_id}, ":id": kb_id},
        )

    def slot_of(self, kb_id: str, backend_ids: list[str]) -> str | None:
        """The backend of ``backend_ids`` whose set holds ``kb_id`` (one batched read of their items)."""
        items = self._table.batch_get([counter_key(b) for b in backend_ids], consistent=True)
        held = [str(i["PK"]).removeprefix(_PREFIX) for i in items if kb_id in i.get("kbs", set())]
        return held[0] if held else None

    def used_slots(self, backend_ids: list[str]) -> dict[str, int]:
        if not backend_ids:
            return {}
        items = self._table.batch_get([counter_key(b) for b in backend_ids], consistent=True)
        used = {str(i["PK"]).removeprefix(_PREFIX): int(i.get("used", 0)) for i in items}
        return {b: used.get(b, 0) for b in backend_ids}
