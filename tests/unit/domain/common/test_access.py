"""``memmy_kb.domain.access``: every authorization decision, on the fake table."""

from __future__ import annotations

from http import HTTPStatus

import pytest

from memmy_kb.domain.access import (
    ScopeEntry,
    compute_recall_scope,
    require_access,
    require_member_removal,
    require_owner,
)
from memmy_kb.errors import NotFound
from tests.support.domain import refused
from tests.support.factories import kb_record, owner_grant_for, reader_grant_for
from tests.support.fakes import FakeStores

NOT_FOUND = (HTTPStatus.NOT_FOUND, "kb_not_found")
OWNER_ONLY = (HTTPStatus.FORBIDDEN, "owner_only")


@pytest.fixture
def shared(stores: FakeStores) -> FakeStores:
    """kb_1 owned by alice and read by bob; carol has no grant."""
    kb = kb_record("kb_1", owner_id="alice", member_count=1)
    stores.table.seed(kb, owner_grant_for(kb), reader_grant_for(kb, "bob"))
    return stores


# -- require_access --------------------------------------------------------------------------------


def test_given_a_reader_when_access_is_required_then_their_grant_is_returned(shared: FakeStores) -> None:
    grant = require_access(shared.kbs, "bob", "kb_1")

    assert (grant.user_id, grant.kb_id, grant.role) == ("bob", "kb_1", "reader")


def test_given_a_stranger_when_access_is_required_then_404_kb_not_found(shared: FakeStores) -> None:
    assert refused(lambda: require_access(shared.kbs, "carol", "kb_1")) == NOT_FOUND


def test_given_a_missing_kb_when_access_is_required_then_the_same_404_as_for_a_stranger(
    shared: FakeStores,
) -> None:
    with pytest.raises(NotFound) as missing:
        require_access(shared.kbs, "alice", "kb_nope")
    with pytest.raises(NotFound) as hidden:
        require_access(shared.kbs, "carol", "kb_1")

    assert (missing.value.code, missing.value.message) == (hidden.value.code, hidden.value.message)
    assert missing.value.status == HTTPStatus.NOT_FOUND


# -- require_owner ---------------------------------------------------------------------------------


def test_given_the_owner_when_ownership_is_required_then_the_owner_grant_is_returned(
    shared: FakeStores,
) -> None:
    assert require_owner(shared.kbs, "alice", "kb_1").role == "owner"


def test_given_a_reader_when_ownership_is_required_then_403_owner_only(shared: FakeStores) -> None:
    assert refused(lambda: require_owner(shared.kbs, "bob", "kb_1")) == OWNER_ONLY


def test_given_a_stranger_when_ownership_is_required_then_404_not_403(shared: FakeStores) -> None:
    assert refused(lambda: require_owner(shared.kbs, "carol", "kb_1")) == NOT_FOUND


# -- require_member_removal ------------------------------------------------------------------------


def test_given_the_owner_when_removing_a_reader_then_allowed(shared: FakeStores) -> None:
    assert require_member_removal(shared.kbs, "alice", "kb_1", "bob").role == "owner"


def test_given_the_owner_when_removing_themself_then_422_owner_cannot_leave(shared: FakeStores) -> None:
    assert refused(lambda: require_member_removal(shared.kbs, "alice", "kb_1", "alice")) == (
        HTTPStatus.UNPROCESSABLE_ENTITY,
        "owner_cannot_leave",
    )


def test_given_a_reader_when_leaving_then_allowed(shared: FakeStores) -> None:
    assert require_member_removal(shared.kbs, "bob", "kb_1", "bob").user_id == "bob"


def test_given_a_reader_when_removing_someone_else_then_403_owner_only(shared: FakeStores) -> None:
    assert refused(lambda: require_member_removal(shared.kbs, "bob", "kb_1", "alice")) == OWNER_ONLY
    assert refused(lambda: require_member_removal(shared.kbs, "bob", "kb_1", "carol")) == OWNER_ONLY


def test_given_a_stranger_when_removing_anyone_then_404(shared: FakeStores) -> None:
    assert refused(lambda: require_member_removal(shared.kbs, "carol", "kb_1", "carol")) == NOT_FOUND
    assert refused(lambda: require_member_removal(shared.kbs, "carol", "kb_1", "bob")) == NOT_FOUND


# -- compute_recall_scope --------------------------------------------------------------------------


def test_given_owned_and_shared_kbs_when_the_scope_is_computed_then_only_those_with_recall_on(
    stores: FakeStores,
) -> None:
    mine, theirs, muted = kb_record("kb_a", owner_id="bob"), kb_record("kb_b"), kb_record("kb_c")
    stores.table.seed(
        mine,
        owner_grant_for(mine),
        theirs,
        reader_grant_for(theirs, "bob"),
        muted,
        reader_grant_for(muted, "bob", recall=False),
        kb_record("kb_d"),  # not shared with bob
    )

    scope = compute_recall_scope(stores.kbs, "bob")

    assert scope == frozenset({ScopeEntry("kb_a", "m-kb_a"), ScopeEntry("kb_b", "m-kb_b")})


def test_given_no_grants_when_the_scope_is_computed_then_it_is_empty(shared: FakeStores) -> None:
    assert compute_recall_scope(shared.kbs, "carol") == frozenset()


def test_given_recall_turned_off_when_the_scope_is_computed_then_the_kb_leaves_it(shared: FakeStores) -> None:
    before = compute_recall_scope(shared.kbs, "bob")
    shared.kbs.update_grant_recall("bob", "kb_1", False)

    assert (before, compute_recall_scope(shared.kbs, "bob")) == (
        frozenset({ScopeEntry("kb_1", "m-kb_1")}),
        frozenset(),
    )
