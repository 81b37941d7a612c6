"""``memmy_kb.domain.knowledge_bases.manage``: create, get, rename, recall switch and list, on the fakes."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

import pytest

from memmy_kb.domain.engine import MemosUnavailable
from memmy_kb.domain.knowledge_bases import manage as kbs_logic
from memmy_kb.errors import Conflict
from memmy_kb.records import GrantRecord, KnowledgeBaseRecord, RequestRecord
from tests.support.domain import refused
from tests.support.factories import (
    T0,
    at,
    claims,
    grant_record,
    kb_record,
    owner_grant_for,
    profile_record,
    reader_grant_for,
)
from tests.support.fakes import (
    FakeCreateIntents,
    FakeKnowledgeBaseStore,
    FakeKnowledgeEngine,
    FakeStores,
    memos_error,
)

NOT_FOUND = (HTTPStatus.NOT_FOUND, "kb_not_found")
MAX_OWNED = 100


def create(
    stores: FakeStores, memos: FakeKnowledgeEngine, kb_id: str = "kb_new"
) -> kbs_logic.KnowledgeBaseView:
    return kbs_logic.create_knowledge_base(
        stores.kbs,
        stores.profiles,
        memos,
        owner=claims("alice", name="Alice W."),
        name="产品资料",
        intents=stores.intents,
        slots=stores.slots,
        max_owned=MAX_OWNED,
        request=None,
        clock=lambda: T0,
        new_id=lambda: kb_id,
    )


@pytest.fixture
def shared(stores: FakeStores) -> FakeStores:
    """kb_1 owned by alice (profile "Alice") and read by bob; carol has no grant."""
    kb = kb_record("kb_1", owner_id="alice", member_count=1)
    stores.table.seed(
        kb, owner_grant_for(kb), reader_grant_for(kb, "bob"), profile_record("alice", display_name="Alice")
    )
    return stores


# -- create ----------------------------------------------------------------------------------------


def test_given_a_verified_owner_when_creating_then_meta_and_an_owner_grant_with_recall_on_are_written(
    stores: FakeStores, memos: FakeKnowledgeEngine
) -> None:
    view = create(stores, memos)

    [memos_kb] = memos.knowledge_bases.values()
    assert memos_kb.name == "memmy:kb_new"
    assert stores.kbs.get_kb("kb_new") == KnowledgeBaseRecord(
        kb_id="kb_new",
        name="产品资料",
        owner_id="alice",
        owner_name="Alice W.",
        memos_kb_id=memos_kb.id,
        memos_backend="default",
        member_count=0,
        created_at=T0,
    )
    assert stores.kbs.get_grant("alice", "kb_new") == GrantRecord(
        user_id="alice",
        kb_id="kb_new",
        role="owner",
        recall=True,
        memos_kb_id=memos_kb.id,
        memos_backend="default",
        owner_id="alice",
        granted_at=T0,
    )
    assert (view.kb.kb_id, view.grant.role, view.owner_name) == ("kb_new", "owner", "Alice W.")


def test_given_the_token_names_the_owner_when_creating_then_the_answer_names_them_so_without_the_profile(
    stores: FakeStores, memos: FakeKnowledgeEngine
) -> None:
    # The caller is the owner: the token's verified claims are the freshest facts about them (and reading
    # the profile would cost a round trip); lists and reads show the registered profile.
    stores.table.seed(profile_record("alice", display_name="Alice Wang"))

    view = create(stores, memos)

    assert view.owner_name == "Alice W."
    assert kbs_logic.get_knowledge_base(stores.kbs, stores.profiles, "alice", "kb_new").owner_name == "Alice Wang"


def test_given_a_token_without_a_name_when_creating_then_the_view_shows_the_profile_name(
    stores: FakeStores, memos: FakeKnowledgeEngine
) -> None:
    stores.table.seed(profile_record("alice", display_name="Alice Wang"))

    view = kbs_logic.create_knowledge_base(
        stores.kbs, stores.profiles, memos, owner=claims("alice"), name="x",
        intents=stores.intents,
        slots=stores.slots, max_owned=MAX_OWNED, request=None, new_id=lambda: "kb_x",
    )

    assert view.owner_name == "Alice Wang"


def test_given_no_name_anywhere_when_creating_then_the_owner_is_shown_by_user_id(
    stores: FakeStores, memos: FakeKnowledgeEngine
) -> None:
    view = kbs_logic.create_knowledge_base(
        stores.kbs, stores.profiles, memos, owner=claims("alice"), name="x",
        intents=stores.intents,
        slots=stores.slots, max_owned=MAX_OWNED, request=None, new_id=lambda: "kb_x",
    )

    assert view.owner_name == "alice"


@pytest.mark.parametrize(
    ("code", "expected"),
    [(50004, "memos_unavailable"), (40309, "memos_unavailable"), (40304, "memos_quota_exhausted")],
)
def test_given_memos_fails_when_creating_then_503_and_nothing_is_stored(
    stores: FakeStores, memos: FakeKnowledgeEngine, code: int, expected: str
) -> None:
    memos.fail("create_knowledgebase", memos_error(code=code))

    assert refused(lambda: create(stores, memos)) == (HTTPStatus.SERVICE_UNAVAILABLE, expected)
    assert (stores.table.kbs, stores.table.grants) == ({}, {})
    assert memos.calls["delete_knowledgebase"] == 0
    assert stores.table.intents == {}  # MemOS answered: it created nothing to look for


def keyed(attempt: str = "") -> RequestRecord:
    return RequestRecord(
        operation="create_kb", key_hash="h1", payload_hash="p1", attempt=attempt, in_progress_until=2_000_000_000,
        expires_at=2_000_000_000,
    )


@pytest.mark.parametrize("request_key", [None, keyed()], ids=["no-key", "keyed"])
def test_given_memos_answer_lost_when_creating_then_503_the_intent_stays_and_the_key_is_free_again(
    stores: FakeStores, memos: FakeKnowledgeEngine, request_key: RequestRecord | None
) -> None:
    memos.fail("create_knowledgebase", MemosUnavailable("read timeout", endpoint="/create/knowledgebase"), times=1)
    attempt = lambda: kbs_logic.create_knowledge_base(  # noqa: E731
        stores.kbs, stores.profiles, memos, owner=claims("alice"), name="x", intents=stores.intents,
        slots=stores.slots,
        max_owned=MAX_OWNED, request=request_key, clock=lambda: T0, new_id=lambda: "kb_lost",
    )

    assert refused(attempt) == (HTTPStatus.SERVICE_UNAVAILABLE, "memos_unavailable")

    # MemOS may hold a KB nobody recorded: the intent stays for the reconciler to report.
    assert stores.intents.query_stale_intents(at(60), 10) == [("kb_lost", "memmy:kb_lost")]
    assert stores.table.requests == {}
    retried = kbs_logic.create_knowledge_base(
        stores.kbs, stores.profiles, memos, owner=claims("alice"), name="x", intents=stores.intents,
        slots=stores.slots,
        max_owned=MAX_OWNED, request=request_key, new_id=lambda: "kb_again",
    )
    assert retried.kb.kb_id == "kb_again"
    assert [kb_id for kb_id, _ in stores.intents.query_stale_intents(at(60), 10)] == ["kb_lost"]


def test_given_a_key_already_answered_when_creating_again_then_the_first_answer_is_replayed(
    stores: FakeStores, memos: FakeKnowledgeEngine
) -> None:
    make = lambda kb_id: kbs_logic.create_knowledge_base(  # noqa: E731
        stores.kbs, stores.profiles, memos, owner=claims("alice", name="Alice"), name="x", intents=stores.intents,
        slots=stores.slots,
        max_owned=MAX_OWNED, request=keyed(), clock=lambda: T0, new_id=lambda: kb_id,
    )
    first = make("kb_first")

    again = make("kb_second")

    assert (again.replayed, again.kb, again.grant) == (True, first.kb, first.grant)
    assert len(memos.knowledge_bases) == 1
    assert stores.kbs.get_kb("kb_second") is None


def test_given_the_id_is_taken_when_creating_then_409_and_the_memos_kb_is_deleted_again(
    stores: FakeStores, memos: FakeKnowledgeEngine
) -> None:
    stores.table.seed(kb_record("kb_new", owner_id="dave"))

    assert refused(lambda: create(stores, memos)) == (HTTPStatus.CONFLICT, "conflict")
    assert memos.knowledge_bases == {}
    assert [delete_all for _, delete_all in memos.deleted_knowledge_bases] == [True]
    assert stores.kbs.get_kb("kb_new").owner_id == "dave"  # type: ignore[union-attr]
    assert stores.kbs.get_grant("alice", "kb_new") is None


class BrokenKnowledgeBaseStore(FakeKnowledgeBaseStore):
    def put_kb_with_owner_grant(
        self,
        kb: KnowledgeBaseRecord,
        owner_grant: GrantRecord,
        *,
        max_owned: int | None = None,
        request: RequestRecord | None = None,
    ) -> None:
        raise RuntimeError("DynamoDB is down")


def test_given_the_write_fails_when_creating_then_the_error_propagates_and_the_memos_kb_is_deleted(
    stores: FakeStores, memos: FakeKnowledgeEngine
) -> None:
    broken = BrokenKnowledgeBaseStore(stores.table)

    with pytest.raises(RuntimeError, match="DynamoDB is down"):
        kbs_logic.create_knowledge_base(
            broken, stores.profiles, memos, owner=claims("alice"), name="x",
            intents=stores.intents,
        slots=stores.slots, max_owned=MAX_OWNED, request=None, new_id=lambda: "kb_x",
        )

    assert memos.knowledge_bases == {}
    assert len(memos.deleted_knowledge_bases) == 1


def test_given_the_cleanup_also_fails_when_creating_then_the_conflict_is_still_answered(
    stores: FakeStores, memos: FakeKnowledgeEngine
) -> None:
    stores.table.seed(kb_record("kb_new", owner_id="dave"))
    memos.fail("delete_knowledgebase", memos_error())

    with pytest.raises(Conflict):
        create(stores, memos)
    assert len(memos.knowledge_bases) == 1  # the one residue, logged for an alert


# -- get -------------------------------------------------------------------------------------------


def test_given_a_reader_when_getting_the_kb_then_their_role_and_the_owners_profile_name(
    shared: FakeStores,
) -> None:
    view = kbs_logic.get_knowledge_base(shared.kbs, shared.profiles, "bob", "kb_1")

    assert (view.kb.kb_id, view.grant.role, view.grant.recall, view.owner_name) == (
        "kb_1",
        "reader",
        True,
        "Alice",
    )


@pytest.mark.parametrize(("user", "kb_id"), [("carol", "kb_1"), ("alice", "kb_missing")])
def test_given_a_stranger_or_a_missing_kb_when_getting_then_404_kb_not_found(
    shared: FakeStores, user: str, kb_id: str
) -> None:
    assert (
        refused(lambda: kbs_logic.get_knowledge_base(shared.kbs, shared.profiles, user, kb_id)) == NOT_FOUND
    )


def test_given_a_grant_whose_meta_is_gone_when_getting_then_404(stores: FakeStores) -> None:
    stores.table.seed(grant_record("bob", "kb_gone"))

    assert (
        refused(lambda: kbs_logic.get_knowledge_base(stores.kbs, stores.profiles, "bob", "kb_gone"))
        == NOT_FOUND
    )


def test_given_the_owner_has_no_profile_when_getting_then_the_name_recorded_at_creation_is_shown(
    stores: FakeStores,
) -> None:
    kb = kb_record("kb_1", owner_name="Alice (at creation)")
    stores.table.seed(kb, owner_grant_for(kb))

    assert kbs_logic.get_knowledge_base(stores.kbs, stores.profiles, "alice", "kb_1").owner_name == (
        "Alice (at creation)"
    )


# -- rename ----------------------------------------------------------------------------------------


def test_given_the_owner_when_renaming_then_only_our_record_changes(
    shared: FakeStores, memos: FakeKnowledgeEngine
) -> None:
    view = kbs_logic.rename_knowledge_base(shared.kbs, shared.profiles, "alice", "kb_1", "销售资料", log=shared.activity, retention_days=30)

    assert view.kb.name == "销售资料"
    assert shared.kbs.get_kb("kb_1") == kb_record("kb_1", name="销售资料", member_count=1)
    assert kbs_logic.get_knowledge_base(shared.kbs, shared.profiles, "bob", "kb_1").kb.name == "销售资料"
    assert memos.total_calls == 0


def test_given_a_reader_when_renaming_then_403_owner_only_and_the_name_is_kept(shared: FakeStores) -> None:
    assert refused(
        lambda: kbs_logic.rename_knowledge_base(shared.kbs, shared.profiles, "bob", "kb_1", "x", log=shared.activity, retention_days=30)
    ) == (
        HTTPStatus.FORBIDDEN,
        "owner_only",
    )
    assert shared.kbs.get_kb("kb_1").name == "产品资料"  # type: ignore[union-attr]


def test_given_a_stranger_when_renaming_then_404(shared: FakeStores) -> None:
    assert (
        refused(lambda: kbs_logic.rename_knowledge_base(shared.kbs, shared.profiles, "carol", "kb_1", "x", log=shared.activity, retention_days=30))
        == NOT_FOUND
    )


def test_given_the_kb_changed_hands_after_the_check_when_renaming_then_404(stores: FakeStores) -> None:
    stale = kb_record("kb_1", owner_id="alice")
    stores.table.seed(kb_record("kb_1", owner_id="dave"), owner_grant_for(stale))

    assert (
        refused(lambda: kbs_logic.rename_knowledge_base(stores.kbs, stores.profiles, "alice", "kb_1", "x", log=stores.activity, retention_days=30))
        == NOT_FOUND
    )
    assert stores.kbs.get_kb("kb_1").name == "产品资料"  # type: ignore[union-attr]


# -- recall switch ---------------------------------------------------------------------------------


def test_given_a_reader_when_turning_recall_off_then_only_their_grant_changes(shared: FakeStores) -> None:
    view = kbs_logic.set_recall(shared.kbs, shared.profiles, "bob", "kb_1", False)

    assert (view.grant.user_id, view.grant.recall, view.grant.role) == ("bob", False, "reader")
    assert shared.kbs.get_grant("bob", "kb_1").recall is False  # type: ignore[union-attr]
    assert shared.kbs.get_grant("alice", "kb_1").recall is True  # type: ignore[union-attr]


def test_given_recall_off_when_turning_it_on_then_it_is_on_again(shared: FakeStores) -> None:
    kbs_logic.set_recall(shared.kbs, shared.profiles, "alice", "kb_1", False)

    view = kbs_logic.set_recall(shared.kbs, shared.profiles, "alice", "kb_1", True)

    assert (view.grant.role, view.grant.recall) == ("owner", True)


def test_given_a_stranger_when_setting_recall_then_404_and_no_grant_is_created(shared: FakeStores) -> None:
    assert (
        refused(lambda: kbs_logic.set_recall(shared.kbs, shared.profiles, "carol", "kb_1", True)) == NOT_FOUND
    )
    assert shared.kbs.get_grant("carol", "kb_1") is None


def test_given_a_grant_whose_meta_is_gone_when_setting_recall_then_404(stores: FakeStores) -> None:
    stores.table.seed(grant_record("bob", "kb_gone"))

    assert (
        refused(lambda: kbs_logic.set_recall(stores.kbs, stores.profiles, "bob", "kb_gone", False))
        == NOT_FOUND
    )


# -- list ------------------------------------------------------------------------------------------


def test_given_owned_and_shared_kbs_when_listing_then_owned_come_first_then_by_creation(
    stores: FakeStores,
) -> None:
    shared_early = kb_record("kb_a", owner_id="alice", created_at=at(1))
    owned_late = kb_record("kb_b", owner_id="bob", created_at=at(30))
    owned_early = kb_record("kb_c", owner_id="bob", created_at=at(20))
    shared_late = kb_record("kb_d", owner_id="carol", created_at=at(40))
    stores.table.seed(
        shared_early,
        reader_grant_for(shared_early, "bob"),
        owned_late,
        owner_grant_for(owned_late),
        owned_early,
        owner_grant_for(owned_early),
        shared_late,
        reader_grant_for(shared_late, "bob", recall=False),
        profile_record("alice", display_name="Alice"),
    )

    views = kbs_logic.list_knowledge_bases(stores.kbs, "bob")

    assert [(v.kb.kb_id, v.grant.role, v.grant.recall, v.owner_name) for v in views] == [
        ("kb_c", "owner", True, "bob"),
        ("kb_b", "owner", True, "bob"),
        ("kb_a", "reader", True, "Alice"),
        ("kb_d", "reader", False, "carol"),
    ]


def test_given_a_grant_whose_kb_is_gone_when_listing_then_it_is_left_out(stores: FakeStores) -> None:
    kb = kb_record("kb_1")
    stores.table.seed(kb, reader_grant_for(kb, "bob"), grant_record("bob", "kb_gone"))

    assert [v.kb.kb_id for v in kbs_logic.list_knowledge_bases(stores.kbs, "bob")] == [
        "kb_1"
    ]


def test_given_a_new_user_when_listing_then_the_list_is_empty(shared: FakeStores) -> None:
    assert kbs_logic.list_knowledge_bases(shared.kbs, "carol") == []


def test_given_the_owner_holds_the_most_kbs_allowed_when_creating_then_409_before_memos_is_asked(
    stores: FakeStores, memos: FakeKnowledgeEngine
) -> None:
    ids = iter(["kb_a", "kb_b", "kb_c"])
    make = lambda: kbs_logic.create_knowledge_base(  # noqa: E731
        stores.kbs, stores.profiles, memos, owner=claims("alice"), name="x",
        intents=stores.intents,
        slots=stores.slots, new_id=lambda: next(ids), max_owned=2, request=None,
    )
    make()
    make()
    with pytest.raises(Conflict) as refused:
        make()
    assert (refused.value.code, "at most 2" in refused.value.message) == ("kb_limit_reached", True)
    assert len(memos.knowledge_bases) == 2
    assert stores.table.owned("alice") == 2
    assert stores.table.owned("bob") == 0


def test_given_a_concurrent_create_filled_the_cap_when_the_transaction_runs_then_409_and_the_memos_kb_goes(
    stores: FakeStores, memos: FakeKnowledgeEngine
) -> None:
    class RacedIntents(FakeCreateIntents):
        """Another create of alice's lands between this one's intent and its transaction."""

        def put_create_intent(self, kb_id: str, *args: Any, **kwargs: Any) -> None:
            super().put_create_intent(kb_id, *args, **kwargs)
            self.table.counters["kbs#alice"] = {"n": 1}

    with pytest.raises(Conflict) as refused:
        kbs_logic.create_knowledge_base(
            stores.kbs, stores.profiles, memos, owner=claims("alice"), name="x",
            intents=RacedIntents(stores.table), slots=stores.slots, max_owned=1, request=None, new_id=lambda: "kb_x",
        )
    assert refused.value.code == "kb_limit_reached"
    assert memos.knowledge_bases == {}
    assert len(memos.deleted_knowledge_bases) == 1
    assert (stores.kbs.get_kb("kb_x"), stores.table.intents) == (None, {})
