"""``KnowledgeBaseStore``'s contract, on the fake and on DynamoDB: KBs and their grants."""

from __future__ import annotations

import pytest

from memmy_kb.domain.storage import AlreadyExists, ConditionFailed, ItemMissing
from memmy_kb.records import KnowledgeBaseRecord
from tests.support.factories import (
    UNCAPPED_COUNT,
    activity_for,
    at,
    grant_record,
    kb_record,
    owner_grant_for,
    reader_grant_for,
    uncapped_daily,
)
from tests.support.store_contract import Backend, refused, stored_kb

# == KnowledgeBaseStore ===============================================================================


def test_given_a_new_kb_when_put_with_its_owner_grant_then_both_read_back_as_written(
    backend: Backend,
) -> None:
    record = kb_record("kb_1", owner_name="Alice", member_count=0)
    grant = owner_grant_for(record)

    backend.kbs.put_kb_with_owner_grant(record, grant, max_owned=UNCAPPED_COUNT, request=None)

    assert backend.kbs.get_kb("kb_1") == record
    assert backend.kbs.get_grant("alice", "kb_1") == grant
    assert backend.kbs.query_grants("alice") == [grant]


def test_given_an_existing_kb_id_when_put_again_then_already_exists_kb_and_nothing_changes(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    clash = kb_record("kb_1", owner_id="dave", name="other")

    assert (
        refused(AlreadyExists, lambda: backend.kbs.put_kb_with_owner_grant(clash, owner_grant_for(clash), max_owned=UNCAPPED_COUNT, request=None))
        == "kb"
    )
    assert stored_kb(backend) == kb
    assert backend.kbs.get_grant("dave", "kb_1") is None


def test_given_only_the_owner_grant_exists_when_put_then_already_exists_kb_and_no_meta(
    backend: Backend,
) -> None:
    record = kb_record("kb_1")
    backend.seed(owner_grant_for(record))

    assert (
        refused(AlreadyExists, lambda: backend.kbs.put_kb_with_owner_grant(record, owner_grant_for(record), max_owned=UNCAPPED_COUNT, request=None))
        == "kb"
    )
    assert backend.kbs.get_kb("kb_1") is None


def test_given_nothing_when_reading_a_kb_or_grant_then_none(backend: Backend) -> None:
    assert (backend.kbs.get_kb("kb_x"), backend.kbs.get_grant("alice", "kb_x")) == (None, None)
    assert backend.kbs.query_grants("alice") == []
    assert backend.kbs.query_kb_members("kb_x") == []


def test_given_several_kbs_when_batch_read_then_each_found_once_and_missing_ones_left_out(
    backend: Backend,
) -> None:
    a, b = kb_record("kb_a"), kb_record("kb_b", owner_id="bob")
    backend.seed(a, b)

    assert backend.kbs.batch_get_kbs_and_profiles(["kb_b", "kb_a", "kb_missing", "kb_a"], [])[0] == {
        "kb_a": a,
        "kb_b": b,
    }
    assert backend.kbs.batch_get_kbs_and_profiles([], [])[0] == {}


def test_given_grants_of_several_users_when_one_users_are_queried_then_only_theirs_in_kb_order(
    backend: Backend,
) -> None:
    grants = [
        grant_record("bob", "kb_c"),
        grant_record("bob", "kb_a", role="owner"),
        grant_record("bob", "kb_b"),
    ]
    backend.seed(*grants, grant_record("carol", "kb_a"), grant_record("bobby", "kb_z"))

    assert [g.kb_id for g in backend.kbs.query_grants("bob")] == ["kb_a", "kb_b", "kb_c"]
    assert backend.kbs.query_grants("bob")[0] == grants[1]


def test_given_the_owner_when_renaming_then_the_renamed_meta_is_returned_and_stored(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    renamed = backend.kbs.update_kb_name("kb_1", "alice", "销售资料")

    assert renamed == kb.model_copy(update={"name": "销售资料"})
    assert stored_kb(backend) == renamed


@pytest.mark.parametrize(
    ("kb_id", "owner"), [("kb_1", "bob"), ("kb_missing", "alice")], ids=["other-owner", "missing"]
)
def test_given_another_owner_or_no_kb_when_renaming_then_item_missing_kb(
    backend: Backend, kb: KnowledgeBaseRecord, kb_id: str, owner: str
) -> None:
    assert refused(ItemMissing, lambda: backend.kbs.update_kb_name(kb_id, owner, "x")) == "kb"
    assert stored_kb(backend).name == kb.name
    assert backend.kbs.get_kb("kb_missing") is None


def test_given_a_grant_when_its_recall_is_switched_then_the_updated_grant_is_returned_and_stored(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    off = backend.kbs.update_grant_recall("alice", "kb_1", False)

    assert off == owner_grant_for(kb, recall=False)
    assert backend.kbs.get_grant("alice", "kb_1") == off
    assert backend.kbs.update_grant_recall("alice", "kb_1", True).recall is True


def test_given_no_grant_when_switching_recall_then_item_missing_grant_and_none_is_created(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    assert refused(ItemMissing, lambda: backend.kbs.update_grant_recall("bob", "kb_1", True)) == "grant"
    assert backend.kbs.get_grant("bob", "kb_1") is None


def test_given_room_when_a_reader_grant_is_put_then_it_is_stored_and_counted(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    grant = reader_grant_for(kb, "bob", granted_at=at(3))

    backend.kbs.put_reader_grant(grant, max_readers=2, daily=uncapped_daily(), activity=activity_for("shared", grant.kb_id, grant.user_id))

    assert backend.kbs.get_grant("bob", "kb_1") == grant
    assert stored_kb(backend).member_count == 1
    assert [g.user_id for g in backend.kbs.query_kb_members("kb_1")] == ["alice", "bob"]


def test_given_the_grant_exists_when_put_again_then_already_exists_grant_and_the_count_stays(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    backend.kbs.put_reader_grant(reader_grant_for(kb, "bob"), max_readers=5, daily=uncapped_daily(), activity=activity_for("shared", kb.kb_id, "bob"))

    again = reader_grant_for(kb, "bob", recall=False)
    assert refused(AlreadyExists, lambda: backend.kbs.put_reader_grant(again, max_readers=5, daily=uncapped_daily(), activity=activity_for("shared", again.kb_id, again.user_id))) == "grant"
    assert stored_kb(backend).member_count == 1
    assert backend.kbs.get_grant("bob", "kb_1").recall is True  # type: ignore[union-attr]


def test_given_the_owners_own_grant_when_a_reader_grant_is_put_for_them_then_already_exists_grant(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    assert refused(
        AlreadyExists, lambda: backend.kbs.put_reader_grant(reader_grant_for(kb, "alice"), max_readers=5, daily=uncapped_daily(), activity=activity_for("shared", kb.kb_id, "alice"))
    ) == ("grant")
    assert backend.kbs.get_grant("alice", "kb_1").role == "owner"  # type: ignore[union-attr]


def test_given_a_full_kb_when_a_reader_grant_is_put_then_condition_failed_member_count(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    backend.kbs.put_reader_grant(reader_grant_for(kb, "bob"), max_readers=1, daily=uncapped_daily(), activity=activity_for("shared", kb.kb_id, "bob"))

    assert refused(
        ConditionFailed, lambda: backend.kbs.put_reader_grant(reader_grant_for(kb, "carol"), max_readers=1, daily=uncapped_daily(), activity=activity_for("shared", kb.kb_id, "carol"))
    ) == ("member_count")
    assert backend.kbs.get_grant("carol", "kb_1") is None
    assert stored_kb(backend).member_count == 1


def test_given_a_full_kb_and_an_existing_grant_when_put_then_the_existing_grant_is_reported(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    backend.kbs.put_reader_grant(reader_grant_for(kb, "bob"), max_readers=1, daily=uncapped_daily(), activity=activity_for("shared", kb.kb_id, "bob"))

    assert refused(
        AlreadyExists, lambda: backend.kbs.put_reader_grant(reader_grant_for(kb, "bob"), max_readers=1, daily=uncapped_daily(), activity=activity_for("shared", kb.kb_id, "bob"))
    ) == ("grant")


def test_given_no_meta_when_a_reader_grant_is_put_then_item_missing_kb_and_no_grant(backend: Backend) -> None:
    grant = reader_grant_for(kb_record("kb_gone"), "bob")

    assert refused(ItemMissing, lambda: backend.kbs.put_reader_grant(grant, max_readers=5, daily=uncapped_daily(), activity=activity_for("shared", grant.kb_id, grant.user_id))) == "kb"
    assert backend.kbs.get_grant("bob", "kb_gone") is None
    assert backend.kbs.get_kb("kb_gone") is None


def test_given_the_kb_changed_hands_when_a_reader_grant_is_put_then_item_missing_kb(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    backend.seed(kb.model_copy(update={"owner_id": "dave"}))

    assert (
        refused(ItemMissing, lambda: backend.kbs.put_reader_grant(reader_grant_for(kb, "bob"), max_readers=5, daily=uncapped_daily(), activity=activity_for("shared", kb.kb_id, "bob")))
        == "kb"
    )
    assert (backend.kbs.get_grant("bob", "kb_1"), stored_kb(backend).member_count) == (None, 0)


def test_given_a_reader_when_their_grant_is_deleted_then_it_is_gone_and_uncounted(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    backend.kbs.put_reader_grant(reader_grant_for(kb, "bob"), max_readers=5, daily=uncapped_daily(), activity=activity_for("shared", kb.kb_id, "bob"))
    backend.kbs.put_reader_grant(reader_grant_for(kb, "carol"), max_readers=5, daily=uncapped_daily(), activity=activity_for("shared", kb.kb_id, "carol"))

    backend.kbs.delete_reader_grant("kb_1", "bob", activity=activity_for("revoked", "kb_1", "bob"))

    assert backend.kbs.get_grant("bob", "kb_1") is None
    assert stored_kb(backend).member_count == 1
    # META names its readers and counts every change, for the KB's delete
    assert (stored_kb(backend).readers, stored_kb(backend).member_version) == ({"carol"}, 3)
    assert [g.user_id for g in backend.kbs.query_kb_members("kb_1")] == ["alice", "carol"]


@pytest.mark.parametrize("user", ["alice", "bob"], ids=["owner-grant", "no-grant"])
def test_given_no_reader_grant_when_deleting_one_then_item_missing_grant_and_nothing_changes(
    backend: Backend, kb: KnowledgeBaseRecord, user: str
) -> None:
    assert refused(ItemMissing, lambda: backend.kbs.delete_reader_grant("kb_1", user, activity=activity_for("revoked", "kb_1", user))) == "grant"
    assert backend.kbs.get_grant("alice", "kb_1") == owner_grant_for(kb)
    assert stored_kb(backend).member_count == 0


def test_given_a_reader_grant_whose_meta_is_gone_when_deleted_then_the_grant_goes_alone(
    backend: Backend,
) -> None:
    backend.seed(reader_grant_for(kb_record("kb_gone"), "bob"))

    backend.kbs.delete_reader_grant("kb_gone", "bob", activity=activity_for("revoked", "kb_gone", "bob"))

    assert backend.kbs.get_grant("bob", "kb_gone") is None
    assert backend.kbs.get_kb("kb_gone") is None


def test_given_grants_on_several_kbs_when_members_are_queried_then_only_the_kbs_by_user_id(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    backend.seed(reader_grant_for(kb, "carol"), reader_grant_for(kb, "bob"), grant_record("bob", "kb_other"))

    assert [(g.user_id, g.role) for g in backend.kbs.query_kb_members("kb_1")] == [
        ("alice", "owner"),
        ("bob", "reader"),
        ("carol", "reader"),
    ]
