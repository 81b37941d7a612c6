"""``ProfileStore``'s contract, on the fake and on DynamoDB: profiles and their email and phone lookups."""

from __future__ import annotations

from memmy_kb.domain.storage import ConditionFailed
from tests.support.factories import at, profile_record
from tests.support.store_contract import OTHER_PHONE, PHONE, Backend, refused

# == ProfileStore =====================================================================================


def test_given_nothing_when_reading_profiles_and_lookups_then_none(backend: Backend) -> None:
    assert backend.profiles.get_profile("alice") is None
    assert backend.profiles.batch_get_profiles(["alice"]) == {}
    assert backend.profiles.get_lookup_claimants("email", "a@example.com") == set()


def test_given_a_new_profile_when_put_then_it_and_its_lookups_read_back(backend: Backend) -> None:
    profile = profile_record("alice", email="a@example.com", phone=PHONE)

    assert backend.profiles.put_profile_with_lookups(profile, None) == profile

    assert backend.profiles.get_profile("alice") == profile
    assert backend.profiles.get_lookup_claimants("email", "a@example.com") == {"alice"}
    assert backend.profiles.get_lookup_claimants("phone", PHONE) == {"alice"}
    assert backend.profiles.get_lookup_claimants("email", "A@example.com") == set()  # lookups match exactly


def test_given_several_profiles_when_batch_read_then_each_found_once_and_missing_ones_left_out(
    backend: Backend,
) -> None:
    alice, bob = profile_record("alice"), profile_record("bob", email="b@example.com")
    backend.seed(alice, bob)

    assert backend.profiles.batch_get_profiles(["bob", "alice", "nobody", "bob"]) == {
        "alice": alice,
        "bob": bob,
    }


def test_given_a_profile_exists_when_put_as_new_then_condition_failed_profile(backend: Backend) -> None:
    existing = profile_record("alice", display_name="Existing")
    backend.profiles.put_profile_with_lookups(existing, None)

    new = profile_record("alice", display_name="New", email="a@example.com", updated_at=at(1))
    assert refused(ConditionFailed, lambda: backend.profiles.put_profile_with_lookups(new, None)) == "profile"
    assert backend.profiles.get_profile("alice") == existing
    assert backend.profiles.get_lookup_claimants("email", "a@example.com") == set()


def test_given_a_stale_previous_when_put_then_condition_failed_profile_and_no_lookup_moves(
    backend: Backend,
) -> None:
    current = profile_record("alice", phone=PHONE, updated_at=at(5))
    backend.profiles.put_profile_with_lookups(current, None)
    stale = current.model_copy(update={"updated_at": at(1)})

    changed = current.model_copy(update={"phone": OTHER_PHONE, "updated_at": at(6)})
    assert refused(ConditionFailed, lambda: backend.profiles.put_profile_with_lookups(changed, stale)) == "profile"
    assert backend.profiles.get_lookup_claimants("phone", PHONE) == {"alice"}
    assert backend.profiles.get_lookup_claimants("phone", OTHER_PHONE) == set()
    assert backend.profiles.get_profile("alice") == current


def test_given_a_changed_email_when_put_then_the_old_lookup_is_deleted_and_the_new_one_written(
    backend: Backend,
) -> None:
    first = profile_record("alice", email="old@example.com")
    backend.profiles.put_profile_with_lookups(first, None)

    second = first.model_copy(update={"email": "new@example.com", "updated_at": at(1)})
    backend.profiles.put_profile_with_lookups(second, first)

    assert backend.profiles.get_lookup_claimants("email", "old@example.com") == set()
    assert backend.profiles.get_lookup_claimants("email", "new@example.com") == {"alice"}
    assert backend.profiles.get_profile("alice") == second


def test_given_an_identifier_another_account_claims_when_put_then_both_claim_it_and_neither_profile_changes(
    backend: Backend,
) -> None:
    alice = profile_record("alice", phone=PHONE, email="a@example.com")
    backend.profiles.put_profile_with_lookups(alice, None)

    bob = profile_record("bob", phone=PHONE, email="a@example.com", updated_at=at(9))
    assert backend.profiles.put_profile_with_lookups(bob, None) == bob

    assert backend.profiles.get_lookup_claimants("phone", PHONE) == {"alice", "bob"}
    assert backend.profiles.get_lookup_claimants("email", "a@example.com") == {"alice", "bob"}
    assert backend.profiles.get_profile("alice") == alice
    assert backend.profiles.get_profile("bob") == bob


def test_given_a_contested_identifier_when_one_claimant_drops_it_then_the_other_holds_it_alone(
    backend: Backend,
) -> None:
    alice = profile_record("alice", phone=PHONE)
    backend.profiles.put_profile_with_lookups(alice, None)
    backend.profiles.put_profile_with_lookups(profile_record("bob", phone=PHONE), None)

    dropped = alice.model_copy(update={"phone": OTHER_PHONE, "updated_at": at(1)})
    backend.profiles.put_profile_with_lookups(dropped, alice)

    assert backend.profiles.get_lookup_claimants("phone", PHONE) == {"bob"}
    assert backend.profiles.get_lookup_claimants("phone", OTHER_PHONE) == {"alice"}


def test_given_the_same_claims_when_put_again_then_the_claimants_are_unchanged(backend: Backend) -> None:
    alice = profile_record("alice", phone=PHONE)
    backend.profiles.put_profile_with_lookups(alice, None)
    backend.profiles.put_profile_with_lookups(profile_record("bob", phone=PHONE), None)

    backend.profiles.put_profile_with_lookups(alice.model_copy(update={"updated_at": at(1)}), alice)

    assert backend.profiles.get_lookup_claimants("phone", PHONE) == {"alice", "bob"}


def test_given_a_single_holder_lookup_when_another_account_claims_it_then_both_claim_it(
    backend: Backend,
) -> None:
    """A lookup as written before claimants were kept (``user_id`` alone, on DynamoDB) reads as that one
    claimant and keeps it when another account joins or leaves."""
    alice = profile_record("alice", phone=PHONE)
    backend.seed(alice)
    backend.seed_lookup("phone", PHONE, "alice", 5)
    assert backend.profiles.get_lookup_claimants("phone", PHONE) == {"alice"}

    bob = profile_record("bob", phone=PHONE)
    backend.profiles.put_profile_with_lookups(bob, None)
    assert backend.profiles.get_lookup_claimants("phone", PHONE) == {"alice", "bob"}

    backend.profiles.put_profile_with_lookups(bob.model_copy(update={"phone": None, "updated_at": at(1)}), bob)
    assert backend.profiles.get_lookup_claimants("phone", PHONE) == {"alice"}


def test_given_a_single_holder_lookup_when_its_holder_drops_it_then_nobody_claims_it(backend: Backend) -> None:
    alice = profile_record("alice", phone=PHONE)
    backend.seed(alice)
    backend.seed_lookup("phone", PHONE, "alice", 5)

    backend.profiles.put_profile_with_lookups(alice.model_copy(update={"phone": None, "updated_at": at(1)}), alice)

    assert backend.profiles.get_lookup_claimants("phone", PHONE) == set()
