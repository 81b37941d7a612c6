"""``memmy_kb.domain.profiles``: registering verified claims, and how an email or phone moves between accounts."""

from __future__ import annotations

from http import HTTPStatus

from memmy_kb.domain.profiles import register_profile
from memmy_kb.records import ProfileRecord
from tests.support.factories import T0, at, claims, profile_record
from tests.support.fakes import FakeProfileStore, FakeStores, Lookup
from tests.unit.domain.support import refused

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
    assert stores.profiles.get_lookup_user("email", "alice@example.com") == "alice"
    assert stores.profiles.get_lookup_user("phone", PHONE) == "alice"


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
    assert stores.profiles.get_lookup_user("phone", PHONE) is None
    assert stores.profiles.get_lookup_user("phone", "+8613900139000") == "alice"


def test_given_an_email_no_longer_verified_when_registering_then_its_lookup_is_removed(
    stores: FakeStores,
) -> None:
    register(stores, "alice", email="alice@example.com")

    assert register(stores, "alice", minute=1).email is None
    assert stores.profiles.get_lookup_user("email", "alice@example.com") is None


def test_given_a_phone_verified_earlier_by_another_account_when_verified_later_then_it_moves(
    stores: FakeStores,
) -> None:
    register(stores, "alice", name="Alice", phone=PHONE, issued_at=1_800_000_000)

    bob = register(stores, "bob", name="Bob", phone="13800138000", issued_at=1_800_000_100, minute=5)

    assert bob.phone == PHONE
    assert stores.profiles.get_lookup_user("phone", PHONE) == "bob"
    assert stores.table.lookups[("phone", PHONE)] == Lookup("bob", 1_800_000_100)
    alice = stores.profiles.get_profile("alice")
    assert alice is not None
    assert (alice.phone, alice.updated_at) == (None, at(5))  # touched, so a stale save of alice's fails


def test_given_a_phone_verified_more_recently_by_another_account_when_registering_then_it_stays(
    stores: FakeStores,
) -> None:
    register(stores, "alice", phone=PHONE, issued_at=1_800_000_100)

    bob = register(stores, "bob", phone=PHONE, issued_at=1_800_000_000, minute=5)

    assert bob.phone is None
    assert stores.profiles.get_profile("bob").phone is None  # type: ignore[union-attr]
    assert stores.profiles.get_lookup_user("phone", PHONE) == "alice"
    assert stores.profiles.get_profile("alice").phone == PHONE  # type: ignore[union-attr]


def test_given_the_same_verification_time_when_registering_then_the_holder_keeps_it(
    stores: FakeStores,
) -> None:
    register(stores, "alice", phone=PHONE, issued_at=1_800_000_000)

    assert register(stores, "bob", phone=PHONE, issued_at=1_800_000_000).phone is None
    assert stores.profiles.get_lookup_user("phone", PHONE) == "alice"


def test_given_no_verification_time_when_registering_then_a_held_identifier_never_moves(
    stores: FakeStores,
) -> None:
    register(stores, "alice", email="a@example.com", issued_at=1)

    assert register(stores, "bob", email="a@example.com", issued_at=None).email is None
    assert stores.profiles.get_lookup_user("email", "a@example.com") == "alice"


def test_given_a_holder_with_unknown_verification_time_when_a_timed_verification_comes_then_it_moves(
    stores: FakeStores,
) -> None:
    register(stores, "alice", email="a@example.com", issued_at=None)

    assert register(stores, "bob", email="a@example.com", issued_at=1).email == "a@example.com"
    assert stores.profiles.get_lookup_user("email", "a@example.com") == "bob"


def test_given_an_identifier_taken_over_when_the_old_token_registers_again_then_it_is_not_taken_back(
    stores: FakeStores,
) -> None:
    register(stores, "alice", phone=PHONE, issued_at=1_800_000_000)
    register(stores, "bob", phone=PHONE, issued_at=1_800_000_100, minute=1)

    again = register(stores, "alice", phone=PHONE, issued_at=1_800_000_000, minute=2)

    assert again.phone is None
    assert stores.profiles.get_lookup_user("phone", PHONE) == "bob"


def test_given_the_same_claims_when_registering_twice_then_nothing_moves(stores: FakeStores) -> None:
    first = register(stores, "alice", name="Alice", email="a@example.com", phone=PHONE, issued_at=5)

    second = register(
        stores, "alice", name="Alice", email="a@example.com", phone=PHONE, issued_at=5, minute=1
    )

    assert (second.email, second.phone) == (first.email, first.phone)
    assert stores.table.lookups == {
        ("email", "a@example.com"): Lookup("alice", 5),
        ("phone", PHONE): Lookup("alice", 5),
    }


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
