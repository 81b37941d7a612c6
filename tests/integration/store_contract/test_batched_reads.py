"""The share's and the KB list's batched reads, and the attempt counted in the share's transaction, on the
fake and on DynamoDB."""

from __future__ import annotations

from memmy_kb.domain.storage import ConditionFailed
from memmy_kb.records import CountCap, KnowledgeBaseRecord, ShareReads, WindowCount
from tests.support.factories import (
    activity_for,
    kb_record,
    owner_grant_for,
    profile_record,
    reader_grant_for,
    uncapped_daily,
)
from tests.support.store_contract import PHONE, Backend, entry, refused, stored_kb

# == The share's and the KB list's batched reads, and the attempt counted in the share's transaction ==


def test_given_kbs_and_profiles_when_batch_read_together_then_each_found_once_and_missing_ones_left_out(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    other = kb_record("kb_2", owner_id="bob")
    alice, bob = profile_record("alice", phone=PHONE), profile_record("bob")
    backend.seed(other, alice, bob)

    kbs, profiles = backend.kbs.batch_get_kbs_and_profiles(
        ["kb_2", "kb_1", "kb_missing", "kb_1"], ["alice", "bob", "nobody", "alice"]
    )

    assert kbs == {"kb_1": stored_kb(backend), "kb_2": other}
    assert profiles == {"alice": alice, "bob": bob}


def test_given_more_than_a_batch_of_keys_when_batch_read_together_then_every_item_comes_back(
    backend: Backend,
) -> None:
    records = [kb_record(f"kb_{i:03d}", owner_id=f"u{i % 7}") for i in range(90)]
    people = [profile_record(f"u{i}") for i in range(30)]
    backend.seed(*records, *people)

    kbs, profiles = backend.kbs.batch_get_kbs_and_profiles((r.kb_id for r in records), (p.user_id for p in people))

    assert sorted(kbs) == [r.kb_id for r in records]
    assert sorted(profiles) == sorted(p.user_id for p in people)


def test_given_a_share_when_read_then_the_grant_meta_claimants_profile_and_attempt_counts_come_back(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    bob = profile_record("bob", phone=PHONE)
    backend.profiles.put_profile_with_lookups(bob, None)
    backend.profiles.put_profile_with_lookups(profile_record("carol", phone=PHONE), None)
    for window in (9, 10, 10):
        backend.counters.count_in_window("share#alice", window, cap=5, expires_at=1)

    reads = backend.kbs.read_share(
        "alice", "kb_1", identifier=("phone", PHONE), user_id="bob", counter=("share#alice", 10)
    )

    assert reads.owner_grant == owner_grant_for(kb)
    assert reads.kb == stored_kb(backend)
    assert reads.claimants == {"bob", "carol"}
    assert reads.profile == bob
    assert reads.attempts == (2, 1)


def test_given_nothing_when_a_share_is_read_then_all_absent(backend: Backend) -> None:
    reads = backend.kbs.read_share(
        "alice", "kb_1", identifier=("email", "a@example.com"), user_id="bob", counter=("share#alice", 10)
    )
    assert reads == ShareReads()
    assert backend.kbs.read_share("alice", "kb_1", identifier=None, user_id=None, counter=("share#alice", 0)) == ShareReads()


def test_given_an_attempt_slot_when_a_grant_is_put_then_counted_and_a_full_window_is_condition_failed_attempts(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    slot = WindowCount(name="share#alice", window=10, room=1, previous=0, expires_at=1_900_000_000)
    backend.kbs.put_reader_grant(reader_grant_for(kb, "bob"), max_readers=5, attempts=slot, daily=uncapped_daily(), activity=activity_for("shared", kb.kb_id, "bob"))
    assert backend.kbs.read_share("alice", "kb_1", counter=("share#alice", 10), identifier=None, user_id=None).attempts == (1, 0)

    cap = CountCap(name="members#alice#2026-01-01", limit=5, expires_at=1_900_000_000)
    assert refused(ConditionFailed, lambda: backend.kbs.put_reader_grant(reader_grant_for(kb, "carol"), max_readers=5, daily=cap, attempts=slot, activity=entry("shared", "carol", 1))) == "attempts"

    assert backend.kbs.get_grant("carol", "kb_1") is None
    assert stored_kb(backend).member_count == 1
    logged, _ = backend.activity.query_activity("kb_1", limit=10, cursor=None, now=0)
    assert [e.subject for e in logged] == ["bob"]  # carol's refused share logged nothing
    # The previous window moving past what the estimate read refuses it too.
    backend.counters.count_in_window("share#alice", 11, cap=5, expires_at=1)
    later = slot.model_copy(update={"window": 12, "room": 5, "previous": 0})
    assert refused(ConditionFailed, lambda: backend.kbs.put_reader_grant(reader_grant_for(kb, "carol"), max_readers=5, attempts=later, daily=uncapped_daily(), activity=activity_for("shared", kb.kb_id, "carol"))) == "attempts"
    backend.kbs.put_reader_grant(reader_grant_for(kb, "carol"), max_readers=5, attempts=later.model_copy(update={"previous": 1}), daily=uncapped_daily(), activity=activity_for("shared", kb.kb_id, "carol"))
    assert backend.kbs.read_share("alice", "kb_1", counter=("share#alice", 12), identifier=None, user_id=None).attempts == (1, 1)
