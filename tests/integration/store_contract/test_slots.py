"""``BackendSlots``' contract, on the fake and on DynamoDB: the KBs placed per backend."""

from __future__ import annotations

from typing import Any

from memmy_kb.adapters.dynamodb.slots import DynamoBackendSlots
from memmy_kb.adapters.dynamodb.table import dump
from tests.support.store_contract import Backend

# == BackendSlots: the KBs placed per backend ===========================================================


def test_given_a_backend_of_two_when_claimed_thrice_then_the_third_is_refused_and_a_release_frees_one_once(
    backend: Backend,
) -> None:
    slots = backend.slots

    claimed = [slots.claim_slot("p1", kb, max_kbs=2) for kb in ("kb_1", "kb_2", "kb_3")]

    assert claimed == [True, True, False]
    assert (slots.slot_of("kb_1", ["p1", "p2"]), slots.slot_of("kb_3", ["p1"]), slots.slot_of("kb_1", ["p2"])) == (
        "p1",
        None,
        None,
    )
    assert not slots.claim_slot("p1", "kb_1", max_kbs=5)  # placed once
    slots.release_slot("p1", "kb_1")
    slots.release_slot("p1", "kb_1")  # a cleanup round repeated: freed once
    assert slots.used_slots(["p1", "p2"]) == {"p1": 1, "p2": 0}
    assert slots.claim_slot("p1", "kb_3", max_kbs=2)
    assert not slots.claim_slot("p1", "kb_4", max_kbs=2)
    assert slots.claim_slot("p2", "kb_4", max_kbs=2)


def test_given_twenty_concurrent_claims_with_room_for_six_then_exactly_six_succeed(backend: Backend) -> None:
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=20) as pool:
        results = list(pool.map(lambda i: backend.slots.claim_slot("p1", f"kb_{i}", max_kbs=6), range(20)))

    assert results.count(True) == 6
    assert backend.slots.used_slots(["p1"]) == {"p1": 6}


def test_given_a_backend_one_short_of_the_largest_cap_when_claimed_then_its_counter_still_fits_one_item(
    service: Any,
) -> None:
    # The secret allows at most MAX_BACKEND_KBS KBs a backend because its counter lists their ids: the
    # full set (ids as new_kb_id makes them) must stay under DynamoDB's 400 KB item.
    from memmy_kb.adapters.dynamodb.slots import counter_key
    from memmy_kb.adapters.memos.key import MAX_BACKEND_KBS
    from memmy_kb.domain.knowledge_bases.manage import new_kb_id

    table = service.stores.table
    placed = {new_kb_id() for _ in range(MAX_BACKEND_KBS - 1)}
    counter = {**counter_key("p1"), "type": "backend_counter", "used": len(placed), "kbs": placed}
    table.client.put_item(TableName=table.name, Item=dump(counter))
    slots = DynamoBackendSlots(table)

    assert slots.claim_slot("p1", new_kb_id(), max_kbs=MAX_BACKEND_KBS)
    assert not slots.claim_slot("p1", new_kb_id(), max_kbs=MAX_BACKEND_KBS)
    assert slots.used_slots(["p1"]) == {"p1": MAX_BACKEND_KBS}
    assert slots.slot_of(next(iter(placed)), ["p1"]) == "p1"
