"""Placement over several MemOS backends: slots claimed and released, per backend, on the fakes
(``memmy_kb.domain.knowledge_bases.placement``, ``create_knowledge_base``, the cleanup of a deleted KB)."""

from __future__ import annotations

from http import HTTPStatus

import pytest

from memmy_kb.domain.deletion.cleanup import Cleaner
from memmy_kb.domain.deletion.delete import Deleter
from memmy_kb.domain.engine import (
    EngineBackend,
    MemosApiKeyError,
    MemosBackendUnknown,
    MemosQuotaExceeded,
    MemosUnavailable,
)
from memmy_kb.domain.knowledge_bases import manage as kbs_logic
from memmy_kb.domain.knowledge_bases.placement import placement_order
from memmy_kb.records import RequestRecord
from tests.support.domain import refused
from tests.support.factories import T0, UNCAPPED_COUNT, claims, kb_record, owner_grant_for
from tests.support.fakes import (
    FakeCleanupExecutions,
    FakeEngines,
    FakeStores,
    FakeUploadObjects,
    memos_error,
)

MAX_OWNED = 100


def create(
    stores: FakeStores, engines: FakeEngines, kb_id: str, *, request: RequestRecord | None = None
) -> kbs_logic.KnowledgeBaseView:
    return kbs_logic.create_knowledge_base(
        stores.kbs,
        stores.profiles,
        engines,
        owner=claims("alice", name="Alice"),
        name=kb_id,
        intents=stores.intents,
        slots=stores.slots,
        max_owned=MAX_OWNED,
        request=request,
        clock=lambda: T0,
        new_id=lambda: kb_id,
    )


def delete_and_clean(stores: FakeStores, engines: FakeEngines, kb_id: str, *, rounds: int = 1) -> None:
    deleter = Deleter(
        stores.kbs, stores.contents, stores.cleanups, FakeCleanupExecutions(), retention_days=30
    )
    cleanup_id = deleter.delete_knowledge_base("alice", kb_id)
    cleaner = Cleaner(stores.cleanups, stores.contents, engines, FakeUploadObjects(), stores.slots)
    for _ in range(rounds):
        assert cleaner.run(cleanup_id)


def test_given_two_backends_of_two_when_five_creates_then_four_spread_over_both_and_the_fifth_is_503(
    stores: FakeStores,
) -> None:
    engines = FakeEngines(a=2, b=2)

    placed = [create(stores, engines, f"kb_{i}").kb.memos_backend for i in range(4)]

    assert sorted(placed) == ["a", "a", "b", "b"]
    assert placed[:2] == ["a", "b"]  # the least full first: they spread
    assert engines.kb_counts() == {"a": 2, "b": 2}
    assert refused(lambda: create(stores, engines, "kb_5")) == (
        HTTPStatus.SERVICE_UNAVAILABLE,
        "memos_quota_exhausted",
    )
    assert engines.kb_counts() == {"a": 2, "b": 2}  # MemOS was not asked
    assert stores.table.intents == {}
    assert stores.slots.used_slots(["a", "b"]) == {"a": 2, "b": 2}


def test_given_a_deleted_kb_when_its_cleanup_ran_twice_then_its_slot_is_freed_once_and_the_next_create_lands_there(
    stores: FakeStores,
) -> None:
    engines = FakeEngines(a=1, b=1)
    create(stores, engines, "kb_1")
    gone = create(stores, engines, "kb_2")

    delete_and_clean(stores, engines, "kb_2", rounds=2)

    assert stores.slots.used_slots(["a", "b"]) == {"a": 1, "b": 0}
    again = create(stores, engines, "kb_3")
    assert again.kb.memos_backend == gone.kb.memos_backend == "b"
    assert engines.kb_counts() == {"a": 1, "b": 1}


def test_given_a_kb_when_its_files_and_cleanup_go_then_every_call_reaches_its_own_backend(
    stores: FakeStores,
) -> None:
    engines = FakeEngines(a=1, b=1)
    create(stores, engines, "kb_1")
    on_b = create(stores, engines, "kb_2")

    delete_and_clean(stores, engines, "kb_2")

    assert engines["a"].calls["delete_knowledgebase"] == 0
    assert engines["b"].deleted_knowledge_bases == [(on_b.kb.memos_kb_id, True)]


def test_given_a_draining_backend_when_creating_then_it_takes_none(stores: FakeStores) -> None:
    engines = FakeEngines(a=5, b=1)
    engines.draining.add("a")

    assert create(stores, engines, "kb_1").kb.memos_backend == "b"
    assert refused(lambda: create(stores, engines, "kb_2"))[1] == "memos_quota_exhausted"
    assert engines.kb_counts() == {"a": 0, "b": 1}


@pytest.mark.parametrize(
    ("error", "slot_kept"),
    [
        (memos_error(code=50004), False),  # MemOS answered: it holds nothing
        (MemosQuotaExceeded("full", endpoint="/create/knowledgebase", code=40304), False),
        (MemosUnavailable("read timeout", endpoint="/create/knowledgebase"), True),  # outcome unknown
    ],
    ids=["refused", "memos-quota", "unknown"],
)
def test_given_memos_fails_a_create_then_the_slot_goes_unless_memos_may_hold_the_kb(
    stores: FakeStores, error: Exception, slot_kept: bool
) -> None:
    engines = FakeEngines(a=1)
    engines["a"].fail("create_knowledgebase", error, times=1)

    assert refused(lambda: create(stores, engines, "kb_1"))[0] == HTTPStatus.SERVICE_UNAVAILABLE

    assert stores.slots.used_slots(["a"]) == {"a": int(slot_kept)}
    assert stores.slots.slot_of("kb_1", ["a"]) == ("a" if slot_kept else None)


@pytest.mark.parametrize(
    "error",
    [MemosApiKeyError("secret s holds an empty API key"), MemosBackendUnknown("no MemOS backend 'a' in the secret")],
    ids=["unusable-secret", "backend-removed"],
)
def test_given_the_backends_key_cannot_be_read_when_creating_then_503_and_the_slot_and_intent_go(
    stores: FakeStores, error: Exception
) -> None:
    # The key is read before the request is sent (the secret refreshed between placement and the call):
    # MemOS certainly holds nothing, so nothing may stay taken or be reported as an unknown outcome.
    engines = FakeEngines(a=1)
    engines["a"].fail("create_knowledgebase", error, times=1)

    assert refused(lambda: create(stores, engines, "kb_1")) == (HTTPStatus.SERVICE_UNAVAILABLE, "memos_unavailable")

    assert stores.slots.used_slots(["a"]) == {"a": 0}
    assert stores.table.intents == {}
    assert create(stores, engines, "kb_2").kb.memos_backend == "a"


class UnreadableSecret(FakeEngines):
    """The MemOS secret cannot be used just now: its backends cannot be listed."""

    def backends(self) -> list[EngineBackend]:
        raise MemosApiKeyError("secret s is neither a bare key nor valid JSON")


def test_given_the_memos_secret_is_unusable_when_creating_then_503_memos_not_asked_and_no_intent_left(
    stores: FakeStores,
) -> None:
    engines = UnreadableSecret(a=1)

    assert refused(lambda: create(stores, engines, "kb_1")) == (HTTPStatus.SERVICE_UNAVAILABLE, "memos_unavailable")

    assert engines["a"].calls["create_knowledgebase"] == 0
    assert stores.table.intents == {}  # no false "unknown outcome" for the reconciler to alarm on


def test_given_the_record_write_fails_when_creating_then_the_memos_kb_and_its_slot_go(
    stores: FakeStores,
) -> None:
    engines = FakeEngines(a=2)
    create(stores, engines, "kb_1")
    stores.table.seed(kb_record("kb_2"))  # the id is taken behind the store's back

    # MemOS creates a KB, then the record's write finds the id taken.
    assert refused(lambda: create(stores, engines, "kb_2"))[0] == HTTPStatus.CONFLICT
    assert engines.kb_counts() == {"a": 1}
    assert stores.slots.used_slots(["a"]) == {"a": 1}  # the first KB's; the failed one gave its slot back


def test_given_a_replayed_key_when_creating_again_then_no_slot_is_claimed(stores: FakeStores) -> None:
    engines = FakeEngines(a=3)
    key = RequestRecord(
        operation="create_kb",
        key_hash="h1",
        payload_hash="p1",
        attempt="",
        in_progress_until=2_000_000_000,
        expires_at=2_000_000_000,
    )
    first = create(stores, engines, "kb_1", request=key)

    again = create(stores, engines, "kb_2", request=key)

    assert (again.replayed, again.kb.kb_id) == (True, first.kb.kb_id)
    assert stores.slots.used_slots(["a"]) == {"a": 1}


def test_placement_order_is_least_full_first_and_skips_full_draining_and_empty_backends() -> None:
    backends = [
        EngineBackend("full", max_kbs=2),
        EngineBackend("half", max_kbs=4),
        EngineBackend("empty", max_kbs=10),
        EngineBackend("drain", max_kbs=10, draining=True),
        EngineBackend("zero", max_kbs=0),
    ]

    order = placement_order(backends, {"full": 2, "half": 2, "empty": 0})

    assert [b.id for b in order] == ["empty", "half"]


def test_placement_order_breaks_a_tie_by_the_most_room() -> None:
    backends = [EngineBackend("a", max_kbs=50), EngineBackend("b", max_kbs=60)]

    assert [b.id for b in placement_order(backends, {})] == ["b", "a"]
    assert [b.id for b in placement_order(backends, {"b": 1})] == ["a", "b"]


def test_given_a_kb_made_before_backends_when_the_secret_became_a_list_then_it_is_served_and_cleaned_on_default_and_frees_no_slot(
    stores: FakeStores,
) -> None:
    # The upgrade docs/memos.md describes: the old KB's records name no backend and it holds no slot.
    engines = FakeEngines(default=2, p2=2)
    old = kb_record("kb_0", memos_kb_id=engines["default"].create_knowledgebase("memmy:kb_0"))
    stores.kbs.put_kb_with_owner_grant(old, owner_grant_for(old), max_owned=UNCAPPED_COUNT, request=None)
    engines.draining.add("p2")
    new = create(stores, engines, "kb_1")
    assert new.kb.memos_backend == "default"

    delete_and_clean(stores, engines, "kb_0", rounds=2)

    assert set(engines["default"].deleted_knowledge_bases) == {(old.memos_kb_id, True)}
    assert engines["p2"].calls["delete_knowledgebase"] == 0
    assert stores.slots.used_slots(["default"]) == {"default": 1}  # the new KB's slot is still held
    assert stores.slots.slot_of("kb_1", ["default", "p2"]) == "default"


def test_given_memos_refuses_a_create_for_its_quota_then_the_create_moves_on_to_the_next_backend_with_room(
    stores: FakeStores,
) -> None:
    # The upgrade docs/memos.md describes: the default project already holds KBs its counter never saw
    # (its max_kbs set too high), and a second backend was added. MemOS's refusal frees default's slot
    # and the create goes on to p2 rather than answering 503 while p2 has room.
    engines = FakeEngines(default=5, p2=5)
    engines["default"].fail(
        "create_knowledgebase", MemosQuotaExceeded("full", endpoint="/create/knowledgebase", code=40304)
    )

    placed = [create(stores, engines, f"kb_{i}").kb.memos_backend for i in range(2)]

    assert placed == ["p2", "p2"]
    assert engines["default"].calls["create_knowledgebase"] == 2
    assert stores.slots.used_slots(["default", "p2"]) == {"default": 0, "p2": 2}
    assert stores.table.intents == {}


def test_given_every_backend_refuses_for_its_quota_then_503_memos_quota_exhausted_after_one_try_each(
    stores: FakeStores,
) -> None:
    engines = FakeEngines(a=5, b=5)
    for backend in ("a", "b"):
        engines[backend].fail(
            "create_knowledgebase", MemosQuotaExceeded("full", endpoint="/create/knowledgebase", code=40304)
        )

    assert refused(lambda: create(stores, engines, "kb_1")) == (HTTPStatus.SERVICE_UNAVAILABLE, "memos_quota_exhausted")

    assert (engines["a"].calls["create_knowledgebase"], engines["b"].calls["create_knowledgebase"]) == (1, 1)
    assert stores.slots.used_slots(["a", "b"]) == {"a": 0, "b": 0}
    assert stores.table.intents == {}
