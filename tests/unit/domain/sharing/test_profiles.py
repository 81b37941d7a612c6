"""``memmy_kb.domain.sharing.profiles``: registering verified claims, and the claims accounts hold on an email or phone."""

from __future__ import annotations

from http import HTTPStatus

import pytest

from memmy_kb.domain.sharing.profiles import register_profile
from memmy_kb.records import ProfileRecord
from tests.support.domain import refused
from tests.support.factories import T0, at, claims, profile_record
from tests.support.fakes import FakeProfileStore, FakeStores

PHONE = "+8613800138000"


def register(
    stores: FakeStores,
    user_id: str,
    *,
    name: str | None = None,
    email: str | None = None,
    phone: str | None = None,
    issued_at: int | None = None,
    minute: int = 0,
) -> ProfileRecord:
    return register_profile(
        stores.profiles,
        claims(user_id, name=name, email=email, phone=phone, issued_at=issued_at),
        clock=lambda: at(minute),
    )


def test_given_verified_claims_when_registering_then_the_profile_is_stored_in_normal_form_with_lookups(
    stores: FakeStores,
) -> None:
    profile = register(stores, "alice", name="Alice Wang", email=" Alice@Example.COM ", phone="138 0013 8000")

    expected = ProfileRecord(
        user_id="alice", display_name="Alice Wang", email="alice@example.com", phone=PHONE, updated_at=T0
    )
    assert profile == expected
    assert stores.profiles.get_profile("alice") == expected
    assert stores.profiles.get_lookup_claimants("email", "alice@example.com") == {"alice"}
    assert stores.profiles.get_lookup_claimants("phone", PHONE) == {"alice"}


def test_given_invalid_identifiers_when_registering_then_they_are_left_out(stores: FakeStores) -> None:
    profile = register(stores, "alice", name="Alice", email="not-an-email", phone="12345")

    assert (profile.email, profile.phone) == (None, None)
    assert stores.table.lookups == {}


def test_given_no_name_in_the_token_when_registering_again_then_the_previous_name_is_kept(
    stores: FakeStores,
) -> None:
    register(stores, "alice", name="Alice")

    assert register(stores, "alice", minute=1).display_name == "Alice"


def test_given_no_name_ever_when_registering_then_the_user_id_is_the_name(stores: FakeStores) -> None:
    assert register(stores, "alice").display_name == "alice"


def test_given_a_changed_phone_when_registering_then_the_lookup_moves_and_the_old_one_is_freed(
    stores: FakeStores,
) -> None:
    register(stores, "alice", phone=PHONE)

    profile = register(stores, "alice", phone="+8613900139000", minute=1)

    assert profile.phone == "+8613900139000"
    assert stores.profiles.get_lookup_claimants("phone", PHONE) == set()
    assert stores.profiles.get_lookup_claimants("phone", "+8613900139000") == {"alice"}


def test_given_an_email_no_longer_verified_when_registering_then_its_lookup_is_removed(
    stores: FakeStores,
) -> None:
    register(stores, "alice", email="alice@example.com")

    assert register(stores, "alice", minute=1).email is None
    assert stores.profiles.get_lookup_claimants("email", "alice@example.com") == set()


@pytest.mark.parametrize(
    ("first", "second"), [(1_800_000_000, 1_800_000_100), (1_800_000_100, 1_800_000_000), (None, None)]
)
def test_given_a_phone_another_account_verified_when_verified_again_then_both_hold_a_claim(
    stores: FakeStores, first: int | None, second: int | None
) -> None:
    alice = register(stores, "alice", name="Alice", phone=PHONE, issued_at=first)

    bob = register(stores, "bob", name="Bob", phone="13800138000", issued_at=second, minute=5)

    # Whichever token is newer: nobody's claim is taken away, and the phone is contested.
    assert (alice.phone, bob.phone) == (PHONE, PHONE)
    assert stores.profiles.get_profile("alice") == alice
    assert stores.profiles.get_lookup_claimants("phone", PHONE) == {"alice", "bob"}


def test_given_a_contested_email_when_one_claimant_registers_without_it_then_the_other_holds_it_alone(
    stores: FakeStores,
) -> None:
    register(stores, "alice", email="a@example.com", phone=PHONE)
    register(stores, "bob", email="a@example.com")

    register(stores, "alice", phone=PHONE, minute=1)  # a later login without that verified email

    assert stores.profiles.get_lookup_claimants("email", "a@example.com") == {"bob"}
    assert stores.profiles.get_lookup_claimants("phone", PHONE) == {"alice"}


def test_given_a_contested_phone_when_a_claimant_changes_number_then_it_leaves_one_and_claims_the_other(
    stores: FakeStores,
) -> None:
    register(stores, "alice", phone=PHONE)
    register(stores, "bob", phone=PHONE)

    register(stores, "bob", phone="+8613900139000", minute=1)

    assert stores.profiles.get_lookup_claimants("phone", PHONE) == {"alice"}
    assert stores.profiles.get_lookup_claimants("phone", "+8613900139000") == {"bob"}


def test_given_the_same_claims_when_registering_twice_then_nothing_moves(stores: FakeStores) -> None:
    first = register(stores, "alice", name="Alice", email="a@example.com", phone=PHONE, issued_at=5)

    second = register(
        stores, "alice", name="Alice", email="a@example.com", phone=PHONE, issued_at=5, minute=1
    )

    assert (second.email, second.phone) == (first.email, first.phone)
    assert stores.table.lookups == {("email", "a@example.com"): {"alice"}, ("phone", PHONE): {"alice"}}


class StaleProfileStore(FakeProfileStore):
    """Reads the caller's profile as it was before a concurrent save."""

    def get_profile(self, user_id: str) -> ProfileRecord | None:
        return profile_record(user_id, updated_at=T0)


def test_given_the_profile_changed_since_it_was_read_when_registering_then_409_profile_conflict(
    stores: FakeStores,
) -> None:
    stores.table.seed(profile_record("alice", display_name="Newer", updated_at=at(9)))
    stale = StaleProfileStore(stores.table)

    assert refused(lambda: register_profile(stale, claims("alice", name="Alice"))) == (
        HTTPStatus.CONFLICT,
        "profile_conflict",
    )
    assert stores.profiles.get_profile("alice").display_name == "Newer"  # type: ignore[union-attr]
