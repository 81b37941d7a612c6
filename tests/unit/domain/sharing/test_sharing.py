"""``memmy_kb.domain.sharing.shares``: resolving identifiers, sharing, the member list, revoking and leaving."""

from __future__ import annotations

from collections.abc import Iterable
from http import HTTPStatus

import pytest

from memmy_kb.domain.access import compute_recall_scope
from memmy_kb.domain.ports.profiles import IdentifierKind
from memmy_kb.domain.sharing import shares
from memmy_kb.domain.sharing.limits import ShareLimits
from memmy_kb.records import GrantRecord, KnowledgeBaseRecord, ProfileRecord
from tests.support.domain import refused, register
from tests.support.factories import (
    T0,
    at,
    kb_record,
    owner_grant_for,
    profile_record,
    reader_grant_for,
)
from tests.support.fakes import FakeKnowledgeBaseStore, FakeProfileStore, FakeStores

ALICE_PHONE = "+8613800138000"
BOB_PHONE = "+8613900139000"
GRANTED_AT = at(5)
NOT_FOUND = (HTTPStatus.NOT_FOUND, "kb_not_found")
OWNER_ONLY = (HTTPStatus.FORBIDDEN, "owner_only")
LIMIT_REACHED = (HTTPStatus.CONFLICT, "member_limit_reached")


@pytest.fixture
def people(stores: FakeStores) -> FakeStores:
    """alice, bob and carol registered (bob with a phone and an email); kb_1 is alice's, unshared."""
    register(
        stores, profile_record("alice", display_name="Alice", phone=ALICE_PHONE, email="alice@example.com")
    )
    register(stores, profile_record("bob", display_name="Bob", phone=BOB_PHONE, email="bob@example.com"))
    register(stores, profile_record("carol", display_name="Carol"))
    kb = kb_record("kb_1", owner_id="alice")
    stores.table.seed(kb, owner_grant_for(kb))
    return stores


def share(
    stores: FakeStores, identifier: str, owner: str = "alice", kb_id: str = "kb_1"
) -> shares.MemberView:
    return shares.share_knowledge_base(
        stores.kbs, stores.profiles, owner, kb_id, identifier, policy=generous(stores), clock=lambda: GRANTED_AT
    )


def generous(stores: FakeStores) -> shares.SharePolicy:
    """Limits no test here reaches (``test_trust.py`` tests the limits)."""
    return shares.SharePolicy(stores.counters, ShareLimits(attempts=1000, members_per_day=1000), retention_days=180)


def member_count(stores: FakeStores, kb_id: str = "kb_1") -> int:
    kb = stores.kbs.get_kb(kb_id)
    assert kb is not None
    return kb.member_count


# -- resolving -------------------------------------------------------------------------------------


def resolve(stores: FakeStores, identifier: str) -> str | None:
    wanted = shares.parse_identifier(identifier)
    reads = stores.kbs.read_share("alice", "kb_1", identifier=wanted.lookup, user_id=wanted.user_id, counter=("share#alice", 0))
    return shares.resolve_identifier(reads)


@pytest.mark.parametrize(
    "identifier",
    ["13900139000", "139 0013 9000", "+86 139-0013-9000", BOB_PHONE, "(139) 0013-9000"],
)
def test_given_a_phone_with_or_without_country_code_when_resolved_then_its_account(
    people: FakeStores, identifier: str
) -> None:
    assert resolve(people, identifier) == "bob"


@pytest.mark.parametrize("identifier", ["bob@example.com", " BOB@Example.COM ", "Bob@example.com"])
def test_given_an_email_in_any_case_when_resolved_then_its_account(
    people: FakeStores, identifier: str
) -> None:
    assert resolve(people, identifier) == "bob"


def test_given_a_registered_user_id_when_resolved_then_that_id(people: FakeStores) -> None:
    assert resolve(people, " carol ") == "carol"


@pytest.mark.parametrize(
    "identifier", ["+8613700137000", "nobody@example.com", "no-such-user", "not an @email"]
)
def test_given_an_unknown_identifier_when_resolved_then_none(people: FakeStores, identifier: str) -> None:
    assert resolve(people, identifier) is None


def test_given_a_numeric_user_id_that_is_no_phone_lookup_when_resolved_then_the_id(
    stores: FakeStores,
) -> None:
    register(stores, profile_record("13700137000", display_name="Numeric"))

    assert resolve(stores, "13700137000") == "13700137000"


def test_given_a_user_who_never_registered_when_resolved_then_none(stores: FakeStores) -> None:
    stores.table.seed(kb_record("kb_1", owner_id="dave"))  # dave owns a KB but has no profile

    assert resolve(stores, "dave") is None


# -- sharing ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("identifier", ["13900139000", " BOB@example.COM ", "bob"])
def test_given_the_owner_when_sharing_by_phone_email_or_id_then_a_reader_grant_with_recall_on(
    people: FakeStores, identifier: str
) -> None:
    member = share(people, identifier)

    expected = GrantRecord(
        user_id="bob",
        kb_id="kb_1",
        role="reader",
        recall=True,
        memos_kb_id="m-kb_1",
        owner_id="alice",
        granted_at=GRANTED_AT,
    )
    assert (member.grant, member.display_name) == (expected, "Bob")
    assert people.kbs.get_grant("bob", "kb_1") == expected
    assert member_count(people) == 1
    assert {e.kb_id for e in compute_recall_scope(people.kbs, "bob")} == {"kb_1"}


@pytest.mark.parametrize("identifier", ["+8613700137000", "nobody@example.com", "no-such-user"])
def test_given_no_account_behind_the_identifier_when_sharing_then_404_account_not_found(
    people: FakeStores, identifier: str
) -> None:
    assert refused(lambda: share(people, identifier)) == (HTTPStatus.NOT_FOUND, "account_not_found")
    assert member_count(people) == 0


@pytest.mark.parametrize("identifier", ["alice", ALICE_PHONE, "13800138000", "ALICE@example.com"])
def test_given_the_owners_own_identifier_when_sharing_then_422_cannot_share_with_self(
    people: FakeStores, identifier: str
) -> None:
    assert refused(lambda: share(people, identifier)) == (
        HTTPStatus.UNPROCESSABLE_ENTITY,
        "cannot_share_with_self",
    )


def test_given_an_existing_reader_when_sharing_again_then_409_already_member(people: FakeStores) -> None:
    share(people, "bob")

    assert refused(lambda: share(people, BOB_PHONE)) == (HTTPStatus.CONFLICT, "already_member")
    assert member_count(people) == 1


def test_given_49_readers_when_sharing_then_the_50th_is_accepted(people: FakeStores) -> None:
    people.table.seed(kb_record("kb_1", member_count=shares.MAX_READERS - 1))

    share(people, "bob")

    assert member_count(people) == shares.MAX_READERS == 50


class RecordingProfileStore(FakeProfileStore):
    """Records which identifier lookups and profile reads were made."""

    def __init__(self, stores: FakeStores) -> None:
        super().__init__(stores.table)
        self.reads: list[str] = []

    def get_lookup_claimants(self, kind: IdentifierKind, value: str) -> frozenset[str]:
        self.reads.append(f"{kind}:{value}")
        return super().get_lookup_claimants(kind, value)

    def get_profile(self, user_id: str) -> ProfileRecord | None:
        self.reads.append(f"profile:{user_id}")
        return super().get_profile(user_id)

    def batch_get_profiles(self, user_ids: Iterable[str]) -> dict[str, ProfileRecord]:
        ids = list(user_ids)
        self.reads.extend(f"profile:{u}" for u in ids)
        return super().batch_get_profiles(ids)


@pytest.mark.parametrize("identifier", ["bob", "13900139000", "nobody@example.com", "+8613700137000"])
def test_given_50_readers_when_sharing_then_409_limit_reached_before_any_identifier_lookup(
    people: FakeStores, identifier: str
) -> None:
    people.table.seed(kb_record("kb_1", member_count=50))
    profiles = RecordingProfileStore(people)

    assert (
        refused(lambda: shares.share_knowledge_base(people.kbs, profiles, "alice", "kb_1", identifier, policy=generous(people)))
        == LIMIT_REACHED
    )
    assert profiles.reads == []
    assert people.kbs.get_grant("bob", "kb_1") is None


class StaleCountStore(FakeKnowledgeBaseStore):
    """Reads META as it was before concurrent shares filled the KB."""

    def get_kb(self, kb_id: str) -> KnowledgeBaseRecord | None:
        kb = super().get_kb(kb_id)
        return kb.model_copy(update={"member_count": 0}) if kb else None


def test_given_the_kb_filled_up_concurrently_when_sharing_then_the_write_refuses_with_limit_reached(
    people: FakeStores,
) -> None:
    people.table.seed(kb_record("kb_1", member_count=50))
    stale = StaleCountStore(people.table)

    assert refused(lambda: shares.share_knowledge_base(stale, people.profiles, "alice", "kb_1", "bob", policy=generous(people))) == (
        LIMIT_REACHED
    )
    assert people.kbs.get_grant("bob", "kb_1") is None


def test_given_the_kb_changed_hands_when_sharing_then_404_and_no_grant(people: FakeStores) -> None:
    people.table.seed(kb_record("kb_1", owner_id="carol"))  # alice's owner grant is stale

    assert refused(lambda: share(people, "bob")) == NOT_FOUND
    assert people.kbs.get_grant("bob", "kb_1") is None


def test_given_a_reader_when_sharing_then_403_owner_only(people: FakeStores) -> None:
    share(people, "bob")

    assert refused(lambda: share(people, "carol", owner="bob")) == OWNER_ONLY


def test_given_a_stranger_when_sharing_then_404(people: FakeStores) -> None:
    assert refused(lambda: share(people, "bob", owner="carol")) == NOT_FOUND


# -- members ---------------------------------------------------------------------------------------


def test_given_readers_when_the_owner_lists_members_then_owner_first_then_by_when_added(
    people: FakeStores,
) -> None:
    kb = kb_record("kb_1")
    people.table.seed(
        reader_grant_for(kb, "carol", granted_at=at(1)),
        reader_grant_for(kb, "bob", granted_at=at(2)),
        reader_grant_for(kb, "erin", granted_at=at(1)),  # no profile: shown by id
    )

    members = shares.list_members(people.kbs, people.profiles, "alice", "kb_1")

    assert [(m.grant.user_id, m.grant.role, m.display_name) for m in members] == [
        ("alice", "owner", "Alice"),
        ("carol", "reader", "Carol"),
        ("erin", "reader", "erin"),
        ("bob", "reader", "Bob"),
    ]
    assert members[0].grant.granted_at == T0


def test_given_a_reader_when_listing_members_then_403(people: FakeStores) -> None:
    share(people, "bob")

    assert refused(lambda: shares.list_members(people.kbs, people.profiles, "bob", "kb_1")) == OWNER_ONLY


def test_given_a_stranger_when_listing_members_then_404(people: FakeStores) -> None:
    assert refused(lambda: shares.list_members(people.kbs, people.profiles, "carol", "kb_1")) == NOT_FOUND


# -- revoke and leave ------------------------------------------------------------------------------


def test_given_a_reader_when_the_owner_revokes_then_grant_scope_and_count_are_gone(
    people: FakeStores,
) -> None:
    share(people, "bob")
    share(people, "carol")

    shares.remove_member(people.kbs, "alice", "kb_1", "bob", retention_days=180)

    assert people.kbs.get_grant("bob", "kb_1") is None
    assert compute_recall_scope(people.kbs, "bob") == frozenset()
    assert member_count(people) == 1
    assert [g.user_id for g in people.kbs.query_kb_members("kb_1")] == ["alice", "carol"]


def test_given_a_revoked_reader_when_revoked_again_then_404_member_not_found(people: FakeStores) -> None:
    share(people, "bob")
    shares.remove_member(people.kbs, "alice", "kb_1", "bob", retention_days=180)

    assert refused(lambda: shares.remove_member(people.kbs, "alice", "kb_1", "bob", retention_days=180)) == (
        HTTPStatus.NOT_FOUND,
        "member_not_found",
    )
    assert member_count(people) == 0


def test_given_someone_who_never_was_a_member_when_revoked_then_404_member_not_found(
    people: FakeStores,
) -> None:
    assert refused(lambda: shares.remove_member(people.kbs, "alice", "kb_1", "carol", retention_days=180)) == (
        HTTPStatus.NOT_FOUND,
        "member_not_found",
    )


def test_given_a_reader_when_leaving_then_only_their_grant_goes(people: FakeStores) -> None:
    share(people, "bob")
    share(people, "carol")

    shares.remove_member(people.kbs, "bob", "kb_1", "bob", retention_days=180)

    assert people.kbs.get_grant("bob", "kb_1") is None
    assert {e.kb_id for e in compute_recall_scope(people.kbs, "carol")} == {"kb_1"}
    assert member_count(people) == 1


def test_given_a_reader_who_left_when_leaving_again_then_404_kb_not_found(people: FakeStores) -> None:
    share(people, "bob")
    shares.remove_member(people.kbs, "bob", "kb_1", "bob", retention_days=180)

    assert refused(lambda: shares.remove_member(people.kbs, "bob", "kb_1", "bob", retention_days=180)) == NOT_FOUND


def test_given_the_owner_when_leaving_then_422_owner_cannot_leave_and_the_grant_stays(
    people: FakeStores,
) -> None:
    assert refused(lambda: shares.remove_member(people.kbs, "alice", "kb_1", "alice", retention_days=180)) == (
        HTTPStatus.UNPROCESSABLE_ENTITY,
        "owner_cannot_leave",
    )
    assert people.kbs.get_grant("alice", "kb_1") is not None


def test_given_a_reader_when_removing_another_reader_then_403_and_both_stay(people: FakeStores) -> None:
    share(people, "bob")
    share(people, "carol")

    assert refused(lambda: shares.remove_member(people.kbs, "bob", "kb_1", "carol", retention_days=180)) == OWNER_ONLY
    assert member_count(people) == 2


def test_given_a_full_kb_when_a_reader_is_revoked_then_a_new_share_fits_again(people: FakeStores) -> None:
    people.table.seed(kb_record("kb_1", member_count=49))
    share(people, "bob")
    assert refused(lambda: share(people, "carol")) == LIMIT_REACHED

    shares.remove_member(people.kbs, "alice", "kb_1", "bob", retention_days=180)

    assert share(people, "carol").grant.user_id == "carol"
    assert member_count(people) == 50
