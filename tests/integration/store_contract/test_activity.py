"""``ActivityLog``'s and ``RateCounters``' contract, on the fake and on DynamoDB, and the cap on owned KBs."""

from __future__ import annotations

import pytest

from memmy_kb.domain.storage import AlreadyExists, ConditionFailed
from memmy_kb.records import KnowledgeBaseRecord
from tests.support.factories import at, kb_record, owner_grant_for, reader_grant_for, uncapped_daily
from tests.support.store_contract import Backend, entry, refused


def test_given_activity_with_a_share_and_a_revoke_when_written_then_both_are_logged(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    backend.kbs.put_reader_grant(reader_grant_for(kb, "bob"), max_readers=5, activity=entry("shared", "bob", 1), daily=uncapped_daily())
    backend.kbs.delete_reader_grant("kb_1", "bob", activity=entry("revoked", "bob", 2))

    items, cursor = backend.activity.query_activity("kb_1", limit=10, cursor=None, now=0)
    assert [(e.kind, e.subject) for e in items] == [("revoked", "bob"), ("shared", "bob")]
    assert cursor is None


def test_given_a_refused_share_when_it_carried_activity_then_nothing_is_logged(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    backend.kbs.put_reader_grant(reader_grant_for(kb, "bob"), max_readers=5, daily=uncapped_daily(), activity=entry("shared", "bob", 1))
    with pytest.raises(AlreadyExists):
        backend.kbs.put_reader_grant(reader_grant_for(kb, "bob"), max_readers=5, daily=uncapped_daily(), activity=entry("shared", "bob", 2))
    items, _ = backend.activity.query_activity("kb_1", limit=10, cursor=None, now=0)
    assert [e.activity_id for e in items] == ["ac_0001"]


def test_given_entries_of_two_kbs_when_paged_then_newest_first_each_once_expired_and_foreign_left_out(
    backend: Backend,
) -> None:
    for minute in range(5):
        backend.activity.put_activity(entry("uploaded", f"fi_{minute}", minute))
    backend.activity.put_activity(entry("uploaded", "other", 9, kb_id="kb_2"))
    backend.activity.put_activity(entry("uploaded", "expired", 7, days=0))
    now = int(at(8).timestamp())

    first, cursor = backend.activity.query_activity("kb_1", limit=2, cursor=None, now=now)
    second, cursor2 = backend.activity.query_activity("kb_1", limit=2, cursor=cursor, now=now)
    third, cursor3 = backend.activity.query_activity("kb_1", limit=2, cursor=cursor2, now=now)

    assert [e.subject for e in first + second + third] == ["fi_4", "fi_3", "fi_2", "fi_1", "fi_0"]
    assert cursor3 is None
    assert first[0] == entry("uploaded", "fi_4", 4)
    # A cursor of another KB (or garbage) reads as the start.
    foreign, _ = backend.activity.query_activity("kb_2", limit=1, cursor=None, now=now)
    assert backend.activity.query_activity("kb_2", limit=5, cursor=cursor, now=now)[0] == foreign
    assert backend.activity.query_activity("kb_1", limit=1, cursor="!!not-a-cursor", now=now)[0][0].subject == "fi_4"


def test_given_a_counter_when_counted_then_this_and_the_previous_window_come_back_and_the_cap_holds(
    backend: Backend,
) -> None:
    assert backend.counters.count_in_window("share#alice", 10, cap=2, expires_at=1) == (1, 0)
    assert backend.counters.count_in_window("share#alice", 10, cap=2, expires_at=1) == (2, 0)
    assert backend.counters.count_in_window("share#alice", 10, cap=2, expires_at=1) is None
    assert backend.counters.count_in_window("share#alice", 11, cap=2, expires_at=1) == (1, 2)
    assert backend.counters.count_in_window("share#bob", 11, cap=2, expires_at=1) == (1, 0)
    # Two windows on, window 10 is gone.
    assert backend.counters.count_in_window("share#alice", 12, cap=2, expires_at=1) == (1, 1)
    assert backend.counters.count_in_window("share#alice", 11, cap=5, expires_at=1) == (2, 0)


def test_given_a_cap_on_owned_kbs_when_creating_then_counted_and_the_one_past_it_is_condition_failed(
    backend: Backend,
) -> None:
    # The counter is observed through the cap: a create under cap N passes only while fewer than N are counted.
    first, second, third = (kb_record(f"kb_{n}", owner_id="alice") for n in (1, 2, 3))
    backend.kbs.put_kb_with_owner_grant(first, owner_grant_for(first), max_owned=1, request=None)

    assert refused(ConditionFailed, lambda: backend.kbs.put_kb_with_owner_grant(second, owner_grant_for(second), max_owned=1, request=None)) == "kb_count"

    assert backend.kbs.get_kb("kb_2") is None
    # A larger cap admits kb_2 and counts it too: with two counted, a cap of 2 refuses kb_3 and 3 admits it.
    backend.kbs.put_kb_with_owner_grant(second, owner_grant_for(second), max_owned=2, request=None)
    assert refused(ConditionFailed, lambda: backend.kbs.put_kb_with_owner_grant(third, owner_grant_for(third), max_owned=2, request=None)) == "kb_count"
    backend.kbs.put_kb_with_owner_grant(third, owner_grant_for(third), max_owned=3, request=None)
    # Another owner's counter is their own.
    other = kb_record("kb_4", owner_id="bob")
    backend.kbs.put_kb_with_owner_grant(other, owner_grant_for(other), max_owned=1, request=None)
