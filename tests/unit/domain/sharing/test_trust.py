"""Sharing you can trust, on the fakes: recall of new shares, blocks, masked contacts, the
abuse limits and the activity log."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from http import HTTPStatus
from typing import Any, TypeVar

import pytest

from memmy_kb.domain.directory import mask_email, mask_phone, masked_contact
from memmy_kb.domain.knowledge_bases import activity, manage
from memmy_kb.domain.sharing import profiles, shares
from memmy_kb.domain.sharing.limits import ShareLimits, attempt_slot, count_share_attempt, retry_after
from memmy_kb.errors import DomainError, TooManyRequests
from tests.support.domain import refused, register
from tests.support.factories import (
    T0,
    UNCAPPED_COUNT,
    at,
    kb_record,
    owner_grant_for,
    profile_record,
    reader_grant_for,
)
from tests.support.fakes import FakeStores

BOB_PHONE = "+8613900139000"
T = TypeVar("T")
NO_ACCOUNT = (HTTPStatus.NOT_FOUND, "account_not_found")


@pytest.fixture
def people(stores: FakeStores) -> FakeStores:
    """alice (phone), bob (phone) and carol registered; kb_1 and kb_2 are alice's, kb_3 is carol's."""
    register(stores, profile_record("alice", display_name="Alice", phone="+8613800138000"))
    register(stores, profile_record("bob", display_name="Bob", phone=BOB_PHONE))
    register(stores, profile_record("carol", display_name="Carol", email="carol@example.com"))
    for kb_id, owner in (("kb_1", "alice"), ("kb_2", "alice"), ("kb_3", "carol")):
        kb = kb_record(kb_id, owner_id=owner)
        stores.kbs.put_kb_with_owner_grant(kb, owner_grant_for(kb), max_owned=UNCAPPED_COUNT, request=None)
    return stores


def policy(stores: FakeStores, **limits: int) -> shares.SharePolicy:
    return shares.SharePolicy(stores.counters, ShareLimits(**limits), retention_days=180)


def share(stores: FakeStores, kb_id: str, identifier: str, owner: str = "alice", **kw: object) -> shares.MemberView:
    kw.setdefault("policy", policy(stores))
    return shares.share_knowledge_base(stores.kbs, stores.profiles, owner, kb_id, identifier, **kw)  # type: ignore[arg-type]


# -- recall of new shares ---------------------------------------------------------------------------


def test_given_the_default_when_shared_then_recall_is_on(people: FakeStores) -> None:
    assert share(people, "kb_1", "bob").grant.recall is True
    assert profiles.get_me(people.profiles, "bob").recall_new_shares is True


def test_given_recall_of_new_shares_off_when_shared_then_the_new_grant_has_recall_off_and_old_ones_keep_theirs(
    people: FakeStores,
) -> None:
    share(people, "kb_1", "bob")
    me = profiles.update_settings(people.profiles, "bob", recall_new_shares=False, clock=lambda: at(1))
    assert (me.recall_new_shares, me.updated_at) == (False, at(1))
    assert share(people, "kb_2", "bob").grant.recall is False
    assert people.kbs.get_grant("bob", "kb_1").recall is True  # type: ignore[union-attr]
    assert people.kbs.get_grant("bob", "kb_2").recall is False  # type: ignore[union-attr]


def test_given_settings_and_blocks_when_the_profile_is_registered_again_then_they_are_kept(
    people: FakeStores,
) -> None:
    profiles.update_settings(people.profiles, "bob", recall_new_shares=False, clock=lambda: at(1))
    share(people, "kb_3", "bob", owner="carol")
    profiles.block(people.kbs, people.profiles, "bob", "carol", clock=lambda: at(2), policy=policy(people))
    from tests.support.factories import claims

    again = profiles.register_profile(people.profiles, claims("bob", name="Bobby"), clock=lambda: at(3))
    assert (again.display_name, again.recall_new_shares, again.blocked) == ("Bobby", False, frozenset({"carol"}))
    assert again.blocked_names == {"carol": "Carol"}


def test_given_no_profile_when_reading_or_changing_settings_then_profile_not_found(stores: FakeStores) -> None:
    expected = (HTTPStatus.NOT_FOUND, "profile_not_found")
    assert refused(lambda: profiles.get_me(stores.profiles, "nobody")) == expected
    assert refused(lambda: profiles.update_settings(stores.profiles, "nobody", recall_new_shares=False)) == expected
    assert refused(lambda: profiles.block(stores.kbs, stores.profiles, "nobody", "alice", policy=policy(stores))) == expected
    assert refused(lambda: profiles.unblock(stores.profiles, "nobody", "alice")) == expected
    assert refused(lambda: profiles.list_blocked(stores.profiles, "nobody")) == expected


# -- blocks -----------------------------------------------------------------------------------------


def test_given_a_reader_of_two_owners_when_blocking_one_then_only_that_owners_kbs_are_left(
    people: FakeStores,
) -> None:
    share(people, "kb_1", "bob")
    share(people, "kb_2", "bob")
    share(people, "kb_3", "bob", owner="carol")
    profiles.block(people.kbs, people.profiles, "bob", "alice", policy=policy(people))
    assert [g.kb_id for g in people.kbs.query_grants("bob")] == ["kb_3"]
    assert people.kbs.get_kb("kb_1").member_count == 0  # type: ignore[union-attr]
    assert people.kbs.get_kb("kb_1").readers == frozenset()  # type: ignore[union-attr]
    assert profiles.list_blocked(people.profiles, "bob") == [("alice", "Alice")]


def test_given_a_block_when_the_blocked_owner_shares_then_the_answer_is_exactly_that_of_no_account(
    people: FakeStores,
) -> None:
    profiles.block(people.kbs, people.profiles, "bob", "alice", policy=policy(people))
    for identifier in ("bob", BOB_PHONE, "139 0013 9000"):
        with pytest.raises(DomainError) as blocked:
            share(people, "kb_1", identifier)
        with pytest.raises(DomainError) as missing:
            share(people, "kb_1", "nobody-at-all")
        assert (blocked.value.status, blocked.value.code, blocked.value.message, blocked.value.details) == (
            missing.value.status,
            missing.value.code,
            missing.value.message,
            missing.value.details,
        )
    assert people.kbs.get_grant("bob", "kb_1") is None
    # Others may still share with bob, and unblocking lets alice share again.
    assert share(people, "kb_3", "bob", owner="carol").grant.user_id == "bob"
    profiles.unblock(people.profiles, "bob", "alice")
    assert share(people, "kb_1", "bob").grant.user_id == "bob"


def test_given_the_profile_read_missed_a_block_when_the_grant_is_written_then_the_transaction_refuses_it(
    people: FakeStores,
) -> None:
    # A block landing between the share's read of the reader's profile (by user id: in the batched read;
    # by phone: the read after it) and its transaction.
    real_read, real_get = people.kbs.read_share, people.profiles.get_profile

    def block_after(read: Callable[..., T]) -> Callable[..., T]:
        def stale_then_block(*args: Any, **kwargs: Any) -> T:
            seen = read(*args, **kwargs)
            people.profiles.add_blocked("bob", "alice", name=None, max_blocked=10, now=at(9))
            return seen

        return stale_then_block

    people.kbs.read_share = block_after(real_read)  # type: ignore[method-assign]
    assert refused(lambda: share(people, "kb_1", "bob")) == NO_ACCOUNT
    people.kbs.read_share = real_read  # type: ignore[method-assign]
    people.profiles.remove_blocked("bob", "alice", now=at(10))
    people.profiles.get_profile = block_after(real_get)  # type: ignore[method-assign]
    assert refused(lambda: share(people, "kb_1", BOB_PHONE)) == NO_ACCOUNT
    assert people.kbs.get_grant("bob", "kb_1") is None


def test_given_blocking_oneself_or_a_full_list_when_blocking_then_refused(people: FakeStores) -> None:
    assert refused(lambda: profiles.block(people.kbs, people.profiles, "bob", "bob", policy=policy(people))) == (
        HTTPStatus.UNPROCESSABLE_ENTITY,
        "cannot_block_self",
    )
    full = frozenset(f"u{i}" for i in range(profiles.MAX_BLOCKED))
    people.table.profiles["bob"] = people.table.profiles["bob"].model_copy(update={"blocked": full})
    status, code = refused(lambda: profiles.block(people.kbs, people.profiles, "bob", "alice", policy=policy(people)))
    assert (status, code) == (HTTPStatus.CONFLICT, "block_limit_reached")
    # Blocking one already blocked is a no-op, not a refusal.
    assert "u1" in profiles.block(people.kbs, people.profiles, "bob", "u1", policy=policy(people)).blocked


def test_given_an_id_with_no_account_when_blocked_then_accepted(people: FakeStores) -> None:
    profiles.block(people.kbs, people.profiles, "bob", "ghost", policy=policy(people))
    assert profiles.list_blocked(people.profiles, "bob") == [("ghost", None)]
    profiles.unblock(people.profiles, "bob", "ghost")
    profiles.unblock(people.profiles, "bob", "ghost")
    assert profiles.list_blocked(people.profiles, "bob") == []


def test_given_ids_with_and_without_an_account_when_blocked_then_the_list_names_neither(
    people: FakeStores,
) -> None:
    """No directory oracle: carol has an account (and a KB, shared with someone else), ghost has none;
    bob knew neither by name, so the list shows no name for either."""
    share(people, "kb_3", "alice", owner="carol")
    for who in ("carol", "ghost"):
        profiles.block(people.kbs, people.profiles, "bob", who, policy=policy(people))
    assert profiles.list_blocked(people.profiles, "bob") == [("carol", None), ("ghost", None)]


def test_given_an_owner_who_shared_when_blocked_then_the_name_bob_saw_then_is_kept(people: FakeStores) -> None:
    share(people, "kb_1", "bob")
    assert [v.owner_name for v in manage.list_knowledge_bases(people.kbs, "bob")] == ["Alice"]
    profiles.block(people.kbs, people.profiles, "bob", "alice", policy=policy(people))
    # A later name of alice's is not looked up; unblocking forgets the name, and blocking her again
    # (no longer sharing with bob) names nobody.
    register(people, profile_record("alice", display_name="Alicia", phone="+8613800138000", updated_at=at(5)))
    assert profiles.list_blocked(people.profiles, "bob") == [("alice", "Alice")]
    profiles.unblock(people.profiles, "bob", "alice")
    profiles.block(people.kbs, people.profiles, "bob", "alice", policy=policy(people))
    assert profiles.list_blocked(people.profiles, "bob") == [("alice", None)]


def test_given_an_owner_without_a_profile_when_blocked_then_the_kbs_owner_name_is_kept(people: FakeStores) -> None:
    kb = kb_record("kb_9", owner_id="erin", owner_name="Erin")
    people.kbs.put_kb_with_owner_grant(kb, owner_grant_for(kb), max_owned=UNCAPPED_COUNT, request=None)
    share(people, "kb_9", "bob", owner="erin")
    profiles.block(people.kbs, people.profiles, "bob", "erin", policy=policy(people))
    assert profiles.list_blocked(people.profiles, "bob") == [("erin", "Erin")]
    assert people.kbs.get_grant("bob", "kb_9") is None


def test_given_blocks_past_the_limit_when_blocking_then_429_and_unblocking_frees_no_attempt(
    people: FakeStores,
) -> None:
    """Enumeration bounded: every block counts in bob's own window (found or not, new or repeated), and
    unblocking frees a place in the list, never an attempt; shares and other users are unaffected."""
    rules = policy(people, attempts=3, window_seconds=3600)
    for who in ("carol", "ghost", "carol"):
        profiles.block(people.kbs, people.profiles, "bob", who, policy=rules, clock=lambda: T0)
    profiles.unblock(people.profiles, "bob", "carol")
    profiles.unblock(people.profiles, "bob", "ghost")
    with pytest.raises(TooManyRequests) as limited:
        profiles.block(people.kbs, people.profiles, "bob", "someone", policy=rules, clock=lambda: T0)
    assert 0 < limited.value.retry_after <= 2 * 3600
    assert "at most 3" in limited.value.message
    assert profiles.list_blocked(people.profiles, "bob") == []
    assert profiles.block(people.kbs, people.profiles, "carol", "someone", policy=rules, clock=lambda: T0).blocked
    assert share(people, "kb_1", "bob", policy=rules, clock=lambda: T0).grant.user_id == "bob"
    later = T0 + timedelta(hours=2)
    assert profiles.block(people.kbs, people.profiles, "bob", "someone", policy=rules, clock=lambda: later).blocked


# -- who shared this --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("phone", "email", "shown"),
    [
        ("+8613800138000", None, "138****8000"),
        ("+8613800138000", "alice@example.com", "138****8000"),
        (None, "alice@example.com", "a***@example.com"),
        ("+14155552671", None, "415***2671"),
        (None, None, None),
    ],
)
def test_contacts_are_masked(phone: str | None, email: str | None, shown: str | None) -> None:
    assert masked_contact(phone, email) == shown


def test_masks_never_show_the_whole_identifier() -> None:
    assert "13800138000" not in mask_phone("+8613800138000")
    assert mask_email("x@example.com") == "x***@example.com"


def test_given_a_shared_kb_when_listed_then_the_owner_carries_a_masked_verified_contact(people: FakeStores) -> None:
    share(people, "kb_3", "bob", owner="carol")
    views = manage.list_knowledge_bases(people.kbs, "bob")
    assert [(v.kb.kb_id, v.owner_name, v.owner_contact) for v in views] == [("kb_3", "Carol", "c***@example.com")]


# -- rate limits ------------------------------------------------------------------------------------


def test_given_the_attempt_limit_when_one_more_lookup_then_429_with_retry_after(people: FakeStores) -> None:
    rules = policy(people, attempts=3, window_seconds=3600)
    clock = lambda: T0  # noqa: E731
    share(people, "kb_1", "bob", policy=rules, clock=clock)
    for identifier in ("nobody", "+8613700137000"):  # not found: counted all the same
        assert refused(lambda i=identifier: share(people, "kb_1", i, policy=rules, clock=clock)) == NO_ACCOUNT
    with pytest.raises(TooManyRequests) as limited:
        share(people, "kb_1", "carol", policy=rules, clock=clock)
    assert (limited.value.status, limited.value.code) == (HTTPStatus.TOO_MANY_REQUESTS, "rate_limited")
    assert 0 < limited.value.retry_after <= 2 * 3600
    assert "3" in limited.value.message
    assert people.kbs.get_grant("carol", "kb_1") is None
    # Another owner has a budget of their own.
    assert share(people, "kb_3", "bob", owner="carol", policy=rules, clock=clock).grant.user_id == "bob"


def test_given_a_full_window_when_the_next_window_is_mostly_gone_then_attempts_fit_again(people: FakeStores) -> None:
    rules = policy(people, attempts=2, window_seconds=3600)
    start = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)
    for identifier in ("nobody", "nobody2"):
        refused(lambda i=identifier: share(people, "kb_1", i, policy=rules, clock=lambda: start))
    just_after = start + timedelta(hours=1, minutes=5)  # the previous window still weighs ~92 %
    with pytest.raises(TooManyRequests) as limited:
        share(people, "kb_1", "x", policy=rules, clock=lambda: just_after)
    # The refused attempt counts too (hammering keeps the window full): one more fits once the full
    # window has slid out, 55 minutes on.
    assert limited.value.retry_after == 55 * 60
    later = just_after + timedelta(seconds=limited.value.retry_after)
    assert share(people, "kb_1", "bob", policy=rules, clock=lambda: later).grant.user_id == "bob"


def test_given_a_full_kb_when_sharing_then_refused_before_any_attempt_is_counted(people: FakeStores) -> None:
    people.table.kbs["kb_1"] = people.table.kbs["kb_1"].model_copy(update={"member_count": shares.MAX_READERS})
    rules = policy(people, attempts=1)
    for _ in range(3):
        assert refused(lambda: share(people, "kb_1", "bob", policy=rules)) == (
            HTTPStatus.CONFLICT,
            "member_limit_reached",
        )
    # Only the KBs the fixture created are counted (kbs#<owner>), no attempt.
    assert [name for name in people.table.counters if not name.startswith("kbs#")] == []


@pytest.mark.parametrize(
    ("previous", "current", "elapsed", "expected"),
    [
        (0, 5, 0.0, 1.0 + 0.2),  # cap hit at the window's start: the rest of it, then 20 % of the next
        (10, 1, 0.5, 0.7 - 0.5),  # 10 * (1 - f) + 1 + 1 <= 5 from f = 0.7 on
        (0, 5, 0.75, 0.25 + 0.2),
    ],
)
def test_retry_after_is_when_one_more_attempt_fits(previous: int, current: int, elapsed: float, expected: float) -> None:
    assert retry_after(previous, current, 5, elapsed) == pytest.approx(expected)


def test_given_the_new_member_limit_when_one_more_joins_today_then_429_until_midnight(people: FakeStores) -> None:
    register(people, profile_record("dave"))
    rules = policy(people, members_per_day=2)
    noon = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    share(people, "kb_1", "bob", policy=rules, clock=lambda: noon)
    share(people, "kb_1", "carol", policy=rules, clock=lambda: noon)
    with pytest.raises(TooManyRequests) as limited:
        share(people, "kb_2", "dave", policy=rules, clock=lambda: noon)
    assert limited.value.retry_after == 12 * 3600
    assert "2 new members a day" in limited.value.message
    assert people.kbs.get_grant("dave", "kb_2") is None
    tomorrow = noon + timedelta(days=1)
    assert share(people, "kb_2", "dave", policy=rules, clock=lambda: tomorrow).grant.user_id == "dave"


def test_count_share_attempt_alone_counts_one_per_call(people: FakeStores) -> None:
    limits = ShareLimits(attempts=2, window_seconds=60)
    count_share_attempt(people.counters, "alice", limits, T0)
    count_share_attempt(people.counters, "alice", limits, T0)
    with pytest.raises(TooManyRequests):
        count_share_attempt(people.counters, "alice", limits, T0)


# -- activity log -----------------------------------------------------------------------------------


def test_given_shares_revokes_leaves_renames_when_listed_then_newest_first_with_actor_and_subject(
    people: FakeStores,
) -> None:
    rules = policy(people)
    register(people, profile_record("dave"))
    share(people, "kb_1", "bob", policy=rules, clock=lambda: at(1))
    share(people, "kb_1", "dave", policy=rules, clock=lambda: at(2))
    shares.remove_member(people.kbs, "alice", "kb_1", "bob", retention_days=180, clock=lambda: at(3))
    shares.remove_member(people.kbs, "dave", "kb_1", "dave", retention_days=180, clock=lambda: at(4))
    manage.rename_knowledge_base(
        people.kbs, people.profiles, "alice", "kb_1", "新名字", log=people.activity, retention_days=180,
        clock=lambda: at(5),
    )
    page = activity.list_activity(people.kbs, people.activity, "alice", "kb_1", limit=10, cursor=None, now=at(6))
    assert [(e.kind, e.actor_id, e.subject, e.at) for e in page.items] == [
        ("renamed", "alice", "新名字", at(5)),
        ("left", "dave", "dave", at(4)),
        ("revoked", "alice", "bob", at(3)),
        ("shared", "alice", "dave", at(2)),
        ("shared", "alice", "bob", at(1)),
    ]
    assert page.next_cursor is None
    assert activity.list_activity(people.kbs, people.activity, "carol", "kb_3", limit=10, cursor=None, now=at(6)).items == []


def test_given_many_entries_when_paged_then_every_entry_once_newest_first(people: FakeStores) -> None:
    for minute in range(7):
        people.activity.put_activity(activity.new_activity("uploaded", "kb_1", "alice", f"fi_{minute}", at(minute), 180))
    seen, cursor = [], None
    while True:
        page = activity.list_activity(people.kbs, people.activity, "alice", "kb_1", limit=3, cursor=cursor, now=at(10))
        seen += [e.subject for e in page.items]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert seen == [f"fi_{m}" for m in reversed(range(7))]


def test_given_an_expired_entry_when_listed_then_it_is_skipped(people: FakeStores) -> None:
    people.activity.put_activity(activity.new_activity("uploaded", "kb_1", "alice", "old", T0 - timedelta(days=181), 180))
    people.activity.put_activity(activity.new_activity("uploaded", "kb_1", "alice", "new", T0, 180))
    page = activity.list_activity(people.kbs, people.activity, "alice", "kb_1", limit=10, cursor=None, now=T0)
    assert [e.subject for e in page.items] == ["new"]
    assert page.items[0].expires_at == int((T0 + timedelta(days=180)).timestamp())


def test_given_a_reader_or_a_stranger_when_listing_activity_then_403_or_404(people: FakeStores) -> None:
    share(people, "kb_1", "bob")
    listing = lambda user: activity.list_activity(  # noqa: E731
        people.kbs, people.activity, user, "kb_1", limit=10, cursor=None, now=T0
    )
    assert refused(lambda: listing("bob")) == (HTTPStatus.FORBIDDEN, "owner_only")
    assert refused(lambda: listing("carol")) == (HTTPStatus.NOT_FOUND, "kb_not_found")


def test_given_a_block_when_the_owner_reads_the_log_then_it_shows_a_leave_not_a_block(people: FakeStores) -> None:
    share(people, "kb_1", "bob", policy=policy(people), clock=lambda: at(1))
    profiles.block(people.kbs, people.profiles, "bob", "alice", policy=policy(people), clock=lambda: at(2))
    page = activity.list_activity(people.kbs, people.activity, "alice", "kb_1", limit=10, cursor=None, now=at(3))
    assert [(e.kind, e.actor_id) for e in page.items] == [("left", "bob"), ("shared", "alice")]


def test_reader_grants_seeded_without_a_profile_still_share(people: FakeStores) -> None:
    # A reader grant whose user has no profile (seeded) does not break the block check.
    kb = people.kbs.get_kb("kb_1")
    assert kb is not None
    people.table.seed(reader_grant_for(kb, "zed"))
    assert refused(lambda: share(people, "kb_1", "zed")) == NO_ACCOUNT  # no profile: cannot be found


# -- contested identifiers --------------------------------------------------------------------------

AMBIGUOUS = (HTTPStatus.CONFLICT, "identifier_ambiguous")
SHARED_PHONE = "+8613700137000"


@pytest.fixture
def contested(people: FakeStores) -> FakeStores:
    """dave and erin both verified the same phone and email (a reassigned number, a shared mailbox)."""
    for user in ("dave", "erin"):
        register(people, profile_record(user, display_name=user.title(), phone=SHARED_PHONE, email="x@example.com"))
    return people


@pytest.mark.parametrize("identifier", [SHARED_PHONE, "137 0013 7000", " X@Example.com "])
def test_given_two_accounts_verified_an_identifier_when_shared_by_it_then_409_ambiguous_and_nothing_written(
    contested: FakeStores, identifier: str
) -> None:
    with pytest.raises(DomainError) as ambiguous:
        share(contested, "kb_1", identifier)

    assert (ambiguous.value.status, ambiguous.value.code) == AMBIGUOUS
    assert "user id" in ambiguous.value.message
    assert contested.kbs.get_grant("dave", "kb_1") is None
    assert contested.kbs.get_grant("erin", "kb_1") is None
    assert contested.kbs.get_kb("kb_1").member_count == 0  # type: ignore[union-attr]


def test_given_a_contested_identifier_when_shared_by_user_id_then_it_works(contested: FakeStores) -> None:
    assert share(contested, "kb_1", "dave").display_name == "Dave"
    assert share(contested, "kb_1", "erin").display_name == "Erin"


def test_given_one_claimant_logs_in_without_it_when_shared_again_then_the_remaining_claimant_gets_it(
    contested: FakeStores,
) -> None:
    register(contested, profile_record("dave", display_name="Dave", updated_at=at(3)))  # no phone, no email now

    assert share(contested, "kb_1", "137 0013 7000").grant.user_id == "erin"
    assert share(contested, "kb_2", "x@example.com").grant.user_id == "erin"


def test_given_a_contested_identifier_when_shared_then_the_lookup_counts_as_an_attempt(
    contested: FakeStores,
) -> None:
    rules = policy(contested, attempts=2)
    clock = lambda: T0  # noqa: E731
    for _ in range(2):
        assert refused(lambda: share(contested, "kb_1", SHARED_PHONE, policy=rules, clock=clock)) == AMBIGUOUS
    with pytest.raises(TooManyRequests):
        share(contested, "kb_1", "bob", policy=rules, clock=clock)


@pytest.mark.parametrize("owner_claims", [False, True], ids=["a-claimant-blocks-the-owner", "the-owner-claims"])
def test_given_a_contested_identifier_when_a_claimant_blocks_the_owner_or_is_the_owner_then_still_ambiguous(
    contested: FakeStores, owner_claims: bool
) -> None:
    # A block stays unobservable (the answer is the one without it), and the owner is no exception.
    if owner_claims:
        register(contested, profile_record("alice", display_name="Alice", phone=SHARED_PHONE, updated_at=at(3)))
    else:
        profiles.block(contested.kbs, contested.profiles, "dave", "alice", policy=policy(contested))
    assert refused(lambda: share(contested, "kb_1", SHARED_PHONE)) == AMBIGUOUS


@pytest.mark.parametrize("previous", [0, 1, 3, 5])
@pytest.mark.parametrize("current", [0, 1, 2, 4, 5])
@pytest.mark.parametrize("minutes", [0, 15, 30, 59])
def test_the_transactions_attempt_slot_admits_exactly_what_the_sliding_estimate_admits(
    previous: int, current: int, minutes: int
) -> None:
    limits = ShareLimits(attempts=5, window_seconds=3600)
    now = datetime(2026, 1, 1, 9, minutes, tzinfo=UTC)
    elapsed = minutes / 60
    slot = attempt_slot("alice", limits, now, (current, previous))
    assert (slot is not None) == (current + 1 <= 5 and previous * (1 - elapsed) + current + 1 <= 5)
    if slot is not None:
        assert (slot.name, slot.previous) == ("share#alice", previous)
        assert current < slot.room <= 5


def test_given_attempts_landed_after_the_read_when_the_transaction_counts_then_429_and_no_grant(
    people: FakeStores,
) -> None:
    rules = policy(people, attempts=2)
    clock = lambda: T0  # noqa: E731
    real_read = people.kbs.read_share

    def read_then_others_attempt(*args: Any, **kwargs: Any) -> Any:
        seen = real_read(*args, **kwargs)
        for _ in range(2):
            count_share_attempt(people.counters, "alice", rules.limits, T0)
        return seen

    people.kbs.read_share = read_then_others_attempt  # type: ignore[method-assign]
    with pytest.raises(TooManyRequests):
        share(people, "kb_1", "bob", policy=rules, clock=clock)
    assert people.kbs.get_grant("bob", "kb_1") is None
