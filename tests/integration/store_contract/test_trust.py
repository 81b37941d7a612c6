"""The trust settings' contract, on the fake and on DynamoDB: a profile's settings and blocks, and the
share's extra conditions (a reader's blocks, the daily cap)."""

from __future__ import annotations

from memmy_kb.domain.storage import ConditionFailed, ItemMissing
from memmy_kb.records import CountCap, KnowledgeBaseRecord
from tests.support.factories import T0, activity_for, at, profile_record, reader_grant_for, uncapped_daily
from tests.support.store_contract import Backend, refused, stored_kb

# == Trust: settings, blocks, the share's extra conditions, the activity log, rate counters ==========


def test_given_a_profile_when_its_settings_change_then_they_and_updated_at_are_stored(backend: Backend) -> None:
    backend.seed(profile_record("bob"))

    changed = backend.profiles.update_profile_settings("bob", recall_new_shares=False, now=at(2))

    assert (changed.recall_new_shares, changed.updated_at) == (False, at(2))
    assert backend.profiles.get_profile("bob") == changed


def test_given_no_profile_when_settings_or_blocks_change_then_item_missing_profile_and_none_created(
    backend: Backend,
) -> None:
    assert refused(ItemMissing, lambda: backend.profiles.update_profile_settings("bob", recall_new_shares=False, now=T0)) == "profile"
    assert refused(ItemMissing, lambda: backend.profiles.add_blocked("bob", "x", name=None, max_blocked=5, now=T0)) == "profile"
    assert refused(ItemMissing, lambda: backend.profiles.remove_blocked("bob", "x", now=T0)) == "profile"
    assert backend.profiles.get_profile("bob") is None


def test_given_a_profile_when_blocking_and_unblocking_then_the_set_changes_and_repeats_are_no_ops(
    backend: Backend,
) -> None:
    backend.seed(profile_record("bob"))

    backend.profiles.add_blocked("bob", "alice", name=None, max_blocked=2, now=at(1))
    again = backend.profiles.add_blocked("bob", "alice", name=None, max_blocked=2, now=at(2))
    assert (again.blocked, again.updated_at) == (frozenset({"alice"}), at(2))
    backend.profiles.add_blocked("bob", "carol", name=None, max_blocked=2, now=at(3))
    # Full: a new one is refused, one already there is not.
    assert refused(ConditionFailed, lambda: backend.profiles.add_blocked("bob", "dave", name=None, max_blocked=2, now=at(4))) == "blocked"
    assert backend.profiles.add_blocked("bob", "carol", name=None, max_blocked=2, now=at(4)).blocked == {"alice", "carol"}
    backend.profiles.remove_blocked("bob", "alice", now=at(5))
    removed = backend.profiles.remove_blocked("bob", "alice", now=at(6))
    assert removed.blocked == frozenset({"carol"})
    assert backend.profiles.get_profile("bob") == removed


def test_given_a_profile_of_either_shape_when_blocking_with_names_then_each_name_is_kept_until_unblocked(
    backend: Backend,
) -> None:
    """bob is seeded as written before names were kept (no ``blocked_names`` on DynamoDB): his first named
    block makes the map; carol's profile is put with one. A block without a name keeps the one stored;
    unblocking drops it, and a block list of the old shape still unblocks."""
    backend.seed(profile_record("bob").model_copy(update={"blocked": frozenset({"old"})}))
    backend.profiles.put_profile_with_lookups(profile_record("carol"), None)
    assert backend.profiles.get_profile("bob").blocked_names == {}  # type: ignore[union-attr]
    for user in ("bob", "carol"):
        backend.profiles.add_blocked(user, "alice", name="Alice", max_blocked=5, now=at(1))
        backend.profiles.add_blocked(user, "dave", name="Dave", max_blocked=5, now=at(2))
        kept = backend.profiles.add_blocked(user, "alice", name=None, max_blocked=5, now=at(3))
        backend.profiles.add_blocked(user, "ghost", name=None, max_blocked=5, now=at(4))
        assert kept.blocked_names == {"alice": "Alice", "dave": "Dave"}
        renamed = backend.profiles.add_blocked(user, "dave", name="David", max_blocked=5, now=at(5))
        assert renamed.blocked_names == {"alice": "Alice", "dave": "David"}
        removed = backend.profiles.remove_blocked(user, "alice", now=at(6))
        assert (removed.blocked - {"old"}, removed.blocked_names) == ({"dave", "ghost"}, {"dave": "David"})
        assert backend.profiles.get_profile(user) == removed
    assert backend.profiles.remove_blocked("bob", "old", now=at(7)).blocked == {"dave", "ghost"}
    # The cap counts ids, named or not.
    assert refused(ConditionFailed, lambda: backend.profiles.add_blocked("bob", "x", name="X", max_blocked=2, now=at(8))) == "blocked"


def test_given_settings_and_blocks_when_the_profile_is_put_again_then_they_are_stored_as_given(
    backend: Backend,
) -> None:
    first = profile_record("bob").model_copy(
        update={"recall_new_shares": False, "blocked": frozenset({"alice", "x"}), "blocked_names": {"alice": "Alice"}}
    )
    backend.profiles.put_profile_with_lookups(first, None)
    assert backend.profiles.get_profile("bob") == first


def test_given_the_reader_blocks_the_owner_when_a_grant_is_put_then_condition_failed_blocked_and_nothing_written(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    backend.seed(profile_record("bob").model_copy(update={"blocked": frozenset({"alice"})}))

    assert refused(ConditionFailed, lambda: backend.kbs.put_reader_grant(reader_grant_for(kb, "bob"), max_readers=5, daily=uncapped_daily(), activity=activity_for("shared", kb.kb_id, "bob"))) == "blocked"

    assert backend.kbs.get_grant("bob", "kb_1") is None
    assert stored_kb(backend).member_count == 0


def test_given_a_reader_blocking_someone_else_when_a_grant_is_put_then_it_is_stored(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    backend.seed(profile_record("bob").model_copy(update={"blocked": frozenset({"mallory"})}))
    backend.kbs.put_reader_grant(reader_grant_for(kb, "bob"), max_readers=5, daily=uncapped_daily(), activity=activity_for("shared", kb.kb_id, "bob"))
    assert backend.kbs.get_grant("bob", "kb_1") is not None


def test_given_a_daily_cap_when_grants_are_put_then_the_one_past_it_is_condition_failed_daily(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    cap = CountCap(name="members#alice#2026-01-01", limit=1, expires_at=1_900_000_000)
    backend.kbs.put_reader_grant(reader_grant_for(kb, "bob"), max_readers=5, daily=cap, activity=activity_for("shared", kb.kb_id, "bob"))

    assert refused(ConditionFailed, lambda: backend.kbs.put_reader_grant(reader_grant_for(kb, "carol"), max_readers=5, daily=cap, activity=activity_for("shared", kb.kb_id, "carol"))) == "daily"

    assert backend.kbs.get_grant("carol", "kb_1") is None
    assert stored_kb(backend).member_count == 1
    other_day = cap.model_copy(update={"name": "members#alice#2026-01-02"})
    backend.kbs.put_reader_grant(reader_grant_for(kb, "carol"), max_readers=5, daily=other_day, activity=activity_for("shared", kb.kb_id, "carol"))
