"""Helpers the domain unit tests share: what a refused action would answer, a profile registered with its
lookups, and ``kb`` (a fixture on the domain tests' ``stores`` and ``memos``): kb_1, alice's, read by bob."""

from __future__ import annotations

from collections.abc import Callable
from http import HTTPStatus

import pytest

from memmy_kb.errors import DomainError
from memmy_kb.records import ProfileRecord
from tests.support.factories import kb_record, owner_grant_for, reader_grant_for
from tests.support.fakes import FakeKnowledgeEngine, FakeStores


def refused(action: Callable[[], object]) -> tuple[HTTPStatus, str]:
    """Run ``action``, which must be refused, and return what the API would answer: status and code."""
    with pytest.raises(DomainError) as err:
        action()
    return err.value.status, err.value.code


def register(stores: FakeStores, profile: ProfileRecord) -> None:
    """Store ``profile`` with its phone and email lookups, as a login's ``PUT /me`` does."""
    stores.profiles.put_profile_with_lookups(profile, stores.profiles.get_profile(profile.user_id))


@pytest.fixture
def kb(stores: FakeStores, memos: FakeKnowledgeEngine) -> FakeStores:
    """kb_1 owned by alice, read by bob, with its MemOS KB; carol has no grant."""
    memos_kb = memos.create_knowledgebase("memmy:kb_1")
    memos.calls.clear()
    record = kb_record("kb_1", owner_id="alice", memos_kb_id=memos_kb, member_count=1)
    stores.table.seed(record, owner_grant_for(record), reader_grant_for(record, "bob"))
    return stores
