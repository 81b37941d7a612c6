"""The ports' contract, run against the in-memory fakes and the real adapters alike: the DynamoDB stores,
the S3 bucket, the cleanup state machine and the upload queue on moto, MemOS on its emulator.

Every case goes through the ports (``memmy_kb.domain.ports``) only, so that what the domain unit tests
learn from ``tests.support.fakes`` holds for the adapters the handlers use: which writes succeed, what
they store, and which error (class and ``.item``) a refused write raises. State the writes cannot reach
on their own (a grant without its META, a KB that changed hands, an upload mid-ingest) is arranged with
``Backend.seed``, which writes the items as the adapters lay them out.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import pytest

from memmy_kb.adapters.dynamodb.activity import DynamoActivityLog, DynamoRateCounters
from memmy_kb.adapters.dynamodb.cleanups import DynamoCleanupStore
from memmy_kb.adapters.dynamodb.intents import DynamoCreateIntents
from memmy_kb.adapters.dynamodb.slots import DynamoBackendSlots
from memmy_kb.adapters.dynamodb.table import (
    cleanup_key,
    cleanup_part_key,
    dump,
    epoch_key,
    file_key,
    folder_key,
    grant_key,
    kb_key,
    lookup_key,
    profile_key,
    upload_key,
)
from memmy_kb.adapters.memos.backends import MemosBackends
from memmy_kb.adapters.memos.client import MemosClient
from memmy_kb.adapters.memos.key import MemosBackendConfig
from memmy_kb.adapters.s3 import UploadStorage
from memmy_kb.adapters.sqs import UploadQueue
from memmy_kb.adapters.stepfunctions import CleanupStateMachine
from memmy_kb.api.events import object_keys
from memmy_kb.domain import ports
from memmy_kb.domain.engine import EngineBackend, FileInput, FileStatus, MemosBackendUnknown, MemosNotFound
from memmy_kb.domain.ports import (
    ActivityLog,
    BackendSlots,
    CleanupExecutions,
    CleanupStore,
    ContentStore,
    CreateIntents,
    GrantReader,
    IdentifierKind,
    KnowledgeBaseStore,
    KnowledgeEngine,
    KnowledgeEngines,
    ProfileStore,
    RateCounters,
    RecallSources,
    UploadObjects,
    UploadRequeue,
)
from memmy_kb.domain.storage import (
    AlreadyExists,
    ConditionFailed,
    ItemMissing,
    ObjectChanged,
    ObjectInfo,
    RequestSeen,
    StoreError,
)
from memmy_kb.records import (
    ActivityRecord,
    CleanupPart,
    CleanupRecord,
    CountCap,
    FileRecord,
    FolderRecord,
    GrantRecord,
    KbCapacity,
    KnowledgeBaseRecord,
    ProfileRecord,
    RequestRecord,
    ShareReads,
    UploadRecord,
    WindowCount,
)
from tests.support.aws import Stores
from tests.support.factories import (
    T0,
    UNCAPPED,
    UNCAPPED_COUNT,
    activity_for,
    at,
    file_record,
    folder_record,
    grant_record,
    kb_record,
    owner_grant_for,
    profile_record,
    reader_grant_for,
    uncapped_daily,
    upload_record,
)
from tests.support.fakes import (
    FakeActivityLog,
    FakeBackendSlots,
    FakeCleanupExecutions,
    FakeCleanupStore,
    FakeContentStore,
    FakeCreateIntents,
    FakeEngines,
    FakeKnowledgeBaseStore,
    FakeKnowledgeEngine,
    FakeProfileStore,
    FakeRateCounters,
    FakeUploadObjects,
    FakeUploadRequeue,
    fake_stores,
)

Record = (
    KnowledgeBaseRecord
    | GrantRecord
    | FolderRecord
    | FileRecord
    | UploadRecord
    | ProfileRecord
    | CleanupRecord
    | CleanupPart
)
PHONE = "+8613800138000"
OTHER_PHONE = "+8613900139000"


@dataclass(frozen=True)
class Backend:
    """The three stores of one backend, and a way to arrange items behind their back."""

    name: str
    kbs: KnowledgeBaseStore
    contents: ContentStore
    profiles: ProfileStore
    seed: Callable[..., None]
    seed_lookup: Callable[[IdentifierKind, str, str, int | None], None]
    activity: ActivityLog
    counters: RateCounters
    cleanups: CleanupStore
    intents: CreateIntents
    slots: BackendSlots


def _fake_backend() -> Backend:
    stores = fake_stores()
    return Backend(
        "fake",
        stores.kbs,
        stores.contents,
        stores.profiles,
        stores.table.seed,
        stores.table.seed_lookup,
        stores.activity,
        stores.counters,
        stores.cleanups,
        stores.intents,
        stores.slots,
    )


def _item(record: Record) -> dict[str, Any]:
    """A record as the adapters lay it out in the table (keys, type, index attributes)."""
    data = record.model_dump()
    if isinstance(record, KnowledgeBaseRecord):
        return {**kb_key(record.kb_id), "type": "kb", "GSI2PK": "KB", "GSI2SK": record.kb_id, **data}
    if isinstance(record, CleanupRecord):
        queue = {"GSI2PK": f"CLEANUP#{record.state}", "GSI2SK": record.next_attempt_at.isoformat()}
        return {**cleanup_key(record.cleanup_id), "type": "cleanup", **queue, **data}
    if isinstance(record, CleanupPart):
        return {**cleanup_part_key(record.cleanup_id, record.part_id), "type": "cleanup_part", **data}
    if isinstance(record, GrantRecord):
        by_kb = {"GSI1PK": f"KB#{record.kb_id}", "GSI1SK": f"USER#{record.user_id}"}
        return {**grant_key(record.user_id, record.kb_id), **by_kb, "type": "grant", **data}
    if isinstance(record, FolderRecord):
        return {**folder_key(record.kb_id, record.folder_id), "type": "folder", **data}
    if isinstance(record, FileRecord):
        return {**file_key(record.kb_id, record.file_id), "type": "file", **data}
    if isinstance(record, UploadRecord):
        queue: dict[str, Any] = {}
        if record.state == "pending":
            queue = {"GSI2PK": "UPLOAD#pending", "GSI2SK": epoch_key(record.expires_at)}
        elif record.state == "submitting" and record.submitting_at is not None:
            queue = {"GSI2PK": "UPLOAD#submitting", "GSI2SK": record.submitting_at.isoformat()}
        return {**upload_key(record.kb_id, record.upload_id), **queue, "type": "upload", **data}
    if not data["blocked_names"]:
        del data["blocked_names"]  # a seeded profile has the shape written before names were kept
    return {**profile_key(record.user_id), "type": "profile", **data}


def _dynamo_backend(stores: Stores) -> Backend:
    table = stores.table

    def put(item: dict[str, Any]) -> None:
        table.client.put_item(TableName=table.name, Item=dump(item))

    def seed(*records: Record) -> None:
        for record in records:
            put(_item(record))

    def seed_lookup(kind: IdentifierKind, value: str, user_id: str, verified_at: int | None = None) -> None:
        put({**lookup_key(kind, value), "type": "lookup", "user_id": user_id, "verified_at": verified_at})

    return Backend(
        "dynamodb",
        stores.kbs,
        stores.contents,
        stores.profiles,
        seed,
        seed_lookup,
        DynamoActivityLog(table),
        DynamoRateCounters(table),
        DynamoCleanupStore(table),
        DynamoCreateIntents(table),
        DynamoBackendSlots(table),
    )


@pytest.fixture(params=["fake", "dynamodb"])
def backend(request: pytest.FixtureRequest) -> Backend:
    if request.param == "fake":
        return _fake_backend()
    return _dynamo_backend(request.getfixturevalue("service").stores)


def refused(error: type[StoreError], action: Callable[[], object]) -> str:
    """Run ``action``, which must raise exactly ``error``; return the error's ``item``."""
    with pytest.raises(StoreError) as raised:
        action()
    assert type(raised.value) is error, (
        f"{type(raised.value).__name__}({raised.value.item}), not {error.__name__}"
    )
    return raised.value.item


@pytest.fixture
def kb(backend: Backend) -> KnowledgeBaseRecord:
    """kb_1, alice's, created through the store (META and the owner grant)."""
    record = kb_record("kb_1", owner_id="alice")
    backend.kbs.put_kb_with_owner_grant(record, owner_grant_for(record), max_owned=UNCAPPED_COUNT, request=None)
    return record


def stored_kb(backend: Backend, kb_id: str = "kb_1") -> KnowledgeBaseRecord:
    record = backend.kbs.get_kb(kb_id)
    assert record is not None
    return record


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


# == ContentStore: folders and files ==================================================================


def test_given_items_of_two_kbs_when_one_is_queried_then_its_folders_files_and_uploads_in_id_order(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    folders = [folder_record("fo_b"), folder_record("fo_a", parent_id="fo_b")]
    files = [file_record("fi_2", folder_id="fo_a"), file_record("fi_1")]
    uploads = [upload_record("up_2", state="rejected", reason="bad"), upload_record("up_1")]
    backend.seed(*folders, *files, *uploads)
    backend.seed(
        folder_record("fo_x", kb_id="kb_2"),
        file_record("fi_x", kb_id="kb_2"),
        upload_record("up_x", kb_id="kb_2"),
    )

    assert backend.contents.query_kb_items("kb_1") == (
        [folders[1], folders[0]],
        [files[1], files[0]],
        [uploads[1], uploads[0]],
    )
    assert backend.contents.query_kb_items("kb_empty") == ([], [], [])


def test_given_nothing_when_reading_a_folder_file_or_upload_then_none(backend: Backend) -> None:
    assert backend.contents.get_folder("kb_1", "fo_x") is None
    assert backend.contents.get_file("kb_1", "fi_x") is None
    assert backend.contents.get_upload("kb_1", "up_x") is None


def test_given_a_kb_when_folders_are_put_at_the_root_and_nested_then_they_read_back(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    docs, v1 = folder_record("fo_docs", name="文档"), folder_record("fo_v1", parent_id="fo_docs")

    backend.contents.put_folder(docs)
    backend.contents.put_folder(v1)

    assert (backend.contents.get_folder("kb_1", "fo_docs"), backend.contents.get_folder("kb_1", "fo_v1")) == (
        docs,
        v1,
    )


def test_given_no_kb_when_a_folder_is_put_then_item_missing_kb(backend: Backend) -> None:
    assert (
        refused(ItemMissing, lambda: backend.contents.put_folder(folder_record("fo_a", kb_id="kb_gone")))
        == "kb"
    )
    assert backend.contents.get_folder("kb_gone", "fo_a") is None


def test_given_no_parent_when_a_folder_is_put_then_item_missing_folder(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    assert refused(
        ItemMissing, lambda: backend.contents.put_folder(folder_record("fo_a", parent_id="fo_none"))
    ) == ("folder")
    assert backend.contents.get_folder("kb_1", "fo_a") is None


def test_given_no_kb_and_no_parent_when_a_folder_is_put_then_the_kb_is_reported(backend: Backend) -> None:
    folder = folder_record("fo_a", kb_id="kb_gone", parent_id="fo_none")

    assert refused(ItemMissing, lambda: backend.contents.put_folder(folder)) == "kb"


def test_given_a_folder_id_in_use_when_a_folder_is_put_then_item_missing_folder_and_it_is_kept(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    backend.contents.put_folder(folder_record("fo_a", name="first"))

    assert (
        refused(ItemMissing, lambda: backend.contents.put_folder(folder_record("fo_a", name="second")))
        == "folder"
    )
    assert backend.contents.get_folder("kb_1", "fo_a").name == "first"  # type: ignore[union-attr]


def test_given_a_folder_when_renamed_and_moved_then_name_and_parent_change_and_the_rest_stays(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    docs, specs = folder_record("fo_docs"), folder_record("fo_specs", parent_id="fo_docs")
    v1 = folder_record("fo_v1", name="v1", created_at=at(7))
    backend.seed(docs, specs, v1)
    moved = v1.model_copy(update={"name": "v2", "parent_id": "fo_specs"})

    backend.contents.update_folder(moved, v1, [specs, docs])

    assert backend.contents.get_folder("kb_1", "fo_v1") == moved


def test_given_a_folder_moved_to_the_root_when_moved_again_then_its_root_parent_still_matches(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    docs, v1 = folder_record("fo_docs"), folder_record("fo_v1", parent_id="fo_docs")
    backend.seed(docs, v1)
    at_root = v1.model_copy(update={"parent_id": None})
    backend.contents.update_folder(at_root, v1, [])
    assert backend.contents.get_folder("kb_1", "fo_v1") == at_root

    back = at_root.model_copy(update={"parent_id": "fo_docs", "name": "again"})
    backend.contents.update_folder(back, at_root, [docs])

    assert backend.contents.get_folder("kb_1", "fo_v1") == back


def test_given_the_folder_moved_meanwhile_when_updated_from_a_stale_read_then_condition_failed_folders(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    a, b, v1 = folder_record("fo_a"), folder_record("fo_b"), folder_record("fo_v1", parent_id="fo_a")
    backend.seed(a, b, v1)
    stale = v1.model_copy(update={"parent_id": None})

    assert (
        refused(
            ConditionFailed,
            lambda: backend.contents.update_folder(v1.model_copy(update={"parent_id": "fo_b"}), stale, [b]),
        )
        == "folders"
    )
    assert backend.contents.get_folder("kb_1", "fo_v1") == v1


def test_given_an_ancestor_moved_meanwhile_when_a_folder_moves_under_it_then_condition_failed_folders(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    a, b = folder_record("fo_a"), folder_record("fo_b")
    backend.seed(
        a, b.model_copy(update={"parent_id": "fo_a"})
    )  # b moved under a after b was read at the root

    assert refused(
        ConditionFailed,
        lambda: backend.contents.update_folder(a.model_copy(update={"parent_id": "fo_b"}), a, [b]),
    ) == ("folders")
    assert backend.contents.get_folder("kb_1", "fo_a") == a


@pytest.mark.parametrize("missing", ["folder", "ancestor"])
def test_given_a_missing_folder_or_ancestor_when_updating_then_condition_failed_folders(
    backend: Backend, kb: KnowledgeBaseRecord, missing: str
) -> None:
    a, b = folder_record("fo_a"), folder_record("fo_b")
    backend.seed(b if missing == "folder" else a)

    assert refused(
        ConditionFailed,
        lambda: backend.contents.update_folder(a.model_copy(update={"parent_id": "fo_b"}), a, [b]),
    ) == ("folders")


def test_given_a_file_when_pointed_at_a_folder_and_back_at_the_root_then_only_its_folder_changes(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    file = file_record("fi_1")
    backend.seed(folder_record("fo_docs"), file)

    backend.contents.update_file_folder("kb_1", "fi_1", "fo_docs")
    assert backend.contents.get_file("kb_1", "fi_1") == file.model_copy(update={"folder_id": "fo_docs"})
    backend.contents.update_file_folder("kb_1", "fi_1", None)

    assert backend.contents.get_file("kb_1", "fi_1") == file


@pytest.mark.parametrize(
    ("seeded", "folder_id", "item"),
    [
        ("folder", "fo_docs", "file"),
        ("file", "fo_none", "folder"),
        ("nothing", "fo_none", "file"),
        ("nothing", None, "file"),
    ],
)
def test_given_a_missing_file_or_folder_when_moving_a_file_then_item_missing_names_it(
    backend: Backend, kb: KnowledgeBaseRecord, seeded: str, folder_id: str | None, item: str
) -> None:
    if seeded == "folder":
        backend.seed(folder_record("fo_docs"))
    if seeded == "file":
        backend.seed(file_record("fi_1"))

    assert (
        refused(ItemMissing, lambda: backend.contents.update_file_folder("kb_1", "fi_1", folder_id)) == item
    )
    assert backend.contents.get_file("kb_1", "fi_1") == (file_record("fi_1") if seeded == "file" else None)


# == ContentStore: uploads ============================================================================


def test_given_the_owner_when_an_upload_is_put_then_it_reads_back_pending(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    upload = upload_record("up_1", folder_id="fo_docs", created_at=T0, expires_at=1_900_000_000)

    backend.contents.put_upload(upload, capacity=UNCAPPED)

    assert backend.contents.get_upload("kb_1", "up_1") == upload


@pytest.mark.parametrize("state", ["pending", "submitting", "submitted"])
def test_given_an_undecided_or_submitted_upload_when_deleted_as_decided_then_condition_failed_and_it_stays(
    backend: Backend, kb: KnowledgeBaseRecord, state: str
) -> None:
    backend.seed(upload_record("up_1", state=state))  # type: ignore[arg-type]

    assert refused(ConditionFailed, lambda: backend.contents.delete_decided_upload("kb_1", "up_1")) == "upload"
    assert backend.contents.get_upload("kb_1", "up_1") is not None


@pytest.mark.parametrize("state", ["rejected", "expired"])
def test_given_a_decided_upload_when_deleted_as_decided_then_it_is_gone_and_again_is_fine(
    backend: Backend, kb: KnowledgeBaseRecord, state: str
) -> None:
    backend.seed(upload_record("up_1", state=state))  # type: ignore[arg-type]

    backend.contents.delete_decided_upload("kb_1", "up_1")
    backend.contents.delete_decided_upload("kb_1", "up_1")
    backend.contents.delete_decided_upload("kb_1", "up_never")

    assert backend.contents.get_upload("kb_1", "up_1") is None


@pytest.mark.parametrize(
    ("kb_id", "owner"), [("kb_gone", "alice"), ("kb_1", "bob")], ids=["missing", "other-owner"]
)
def test_given_no_kb_or_another_owner_when_an_upload_is_put_then_item_missing_kb(
    backend: Backend, kb: KnowledgeBaseRecord, kb_id: str, owner: str
) -> None:
    upload = upload_record("up_1", kb_id=kb_id, owner_id=owner)

    assert refused(ItemMissing, lambda: backend.contents.put_upload(upload, capacity=UNCAPPED)) == "kb"
    assert backend.contents.get_upload(kb_id, "up_1") is None


def test_given_an_upload_id_in_use_when_put_again_then_item_missing_kb_and_the_first_is_kept(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    first = upload_record("up_1", filename="first.md", created_at=T0)
    backend.contents.put_upload(first, capacity=UNCAPPED)

    assert (
        refused(ItemMissing, lambda: backend.contents.put_upload(upload_record("up_1", filename="second.md"), capacity=UNCAPPED))
        == "kb"
    )
    assert backend.contents.get_upload("kb_1", "up_1") == first


@pytest.fixture
def pending(backend: Backend, kb: KnowledgeBaseRecord) -> UploadRecord:
    upload = upload_record("up_1", created_at=T0, expires_at=1_900_000_000)
    backend.contents.put_upload(upload, capacity=UNCAPPED)
    return upload


def submit(
    backend: Backend, attempt_id: str = "att-1", keep_until: int = 1_900_100_000, sha256: str | None = None
) -> UploadRecord:
    backend.contents.update_upload_submitting(
        "kb_1", "up_1", attempt_id=attempt_id, now=at(30), keep_until=keep_until, owner_id="alice", size=0,
        capacity=UNCAPPED, sha256=sha256,
    )
    held = backend.contents.get_upload("kb_1", "up_1")
    assert held is not None
    return held


def test_given_a_pending_upload_when_submitting_then_it_is_held_by_the_attempt(
    backend: Backend, pending: UploadRecord
) -> None:
    held = submit(backend)

    expected = pending.model_copy(
        update={
            "state": "submitting",
            "attempt_id": "att-1",
            "submitting_at": at(30),
            "expires_at": 1_900_100_000,
        }
    )
    assert held == expected
    assert backend.contents.get_upload("kb_1", "up_1") == expected


def test_given_the_hash_the_ingest_computed_when_submitting_then_the_upload_keeps_it(
    backend: Backend, pending: UploadRecord
) -> None:
    assert submit(backend, sha256="ab" * 32).content_sha256 == "ab" * 32


def test_given_an_upload_already_submitting_when_submitting_again_then_condition_failed_upload(
    backend: Backend, pending: UploadRecord
) -> None:
    first = submit(backend, "att-1")

    assert refused(ConditionFailed, lambda: submit(backend, "att-2")) == "upload"
    assert backend.contents.get_upload("kb_1", "up_1") == first


def test_given_no_upload_when_submitting_then_condition_failed_upload_and_none_is_created(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    assert refused(ConditionFailed, lambda: submit(backend)) == "upload"
    assert backend.contents.get_upload("kb_1", "up_1") is None


def test_given_a_held_upload_when_released_then_it_is_pending_again_without_holder(
    backend: Backend, pending: UploadRecord
) -> None:
    submit(backend)

    backend.contents.update_upload_released("kb_1", "up_1", attempt_id="att-1", expires_at=1_900_200_000)

    assert backend.contents.get_upload("kb_1", "up_1") == pending.model_copy(
        update={"expires_at": 1_900_200_000}
    )


@pytest.mark.parametrize("held", [True, False], ids=["other-attempt", "pending"])
def test_given_another_holder_or_none_when_released_then_condition_failed_upload(
    backend: Backend, pending: UploadRecord, held: bool
) -> None:
    if held:
        submit(backend, "att-1")
    before = backend.contents.get_upload("kb_1", "up_1")

    assert (
        refused(
            ConditionFailed,
            lambda: backend.contents.update_upload_released("kb_1", "up_1", attempt_id="att-2", expires_at=1),
        )
        == "upload"
    )
    assert backend.contents.get_upload("kb_1", "up_1") == before


def test_given_a_pending_upload_when_rejected_without_attempt_then_rejected_with_reason(
    backend: Backend, pending: UploadRecord
) -> None:
    backend.contents.update_upload_rejected("kb_1", "up_1", reason="Not a PDF.", expires_at=1_900_300_000, attempt_id=None)

    assert backend.contents.get_upload("kb_1", "up_1") == pending.model_copy(
        update={"state": "rejected", "reason": "Not a PDF.", "expires_at": 1_900_300_000}
    )


def test_given_a_held_upload_when_its_holder_rejects_it_then_rejected_and_the_holder_fields_remain(
    backend: Backend, pending: UploadRecord
) -> None:
    held = submit(backend)

    backend.contents.update_upload_rejected(
        "kb_1", "up_1", reason="MemOS refused it.", expires_at=5, attempt_id="att-1"
    )

    assert backend.contents.get_upload("kb_1", "up_1") == held.model_copy(
        update={"state": "rejected", "reason": "MemOS refused it.", "expires_at": 5}
    )


@pytest.mark.parametrize(
    ("submitted_by", "rejected_by"),
    [("att-1", None), (None, "att-1"), ("att-1", "att-2")],
    ids=["held-but-no-attempt", "pending-but-attempt", "other-attempt"],
)
def test_given_the_wrong_state_or_holder_when_rejecting_then_condition_failed_upload(
    backend: Backend, pending: UploadRecord, submitted_by: str | None, rejected_by: str | None
) -> None:
    if submitted_by:
        submit(backend, submitted_by)
    before = backend.contents.get_upload("kb_1", "up_1")

    assert (
        refused(
            ConditionFailed,
            lambda: backend.contents.update_upload_rejected(
                "kb_1", "up_1", reason="x", expires_at=1, attempt_id=rejected_by
            ),
        )
        == "upload"
    )
    assert backend.contents.get_upload("kb_1", "up_1") == before


def test_given_a_rejected_or_missing_upload_when_rejecting_again_then_condition_failed_upload(
    backend: Backend, pending: UploadRecord
) -> None:
    backend.contents.update_upload_rejected("kb_1", "up_1", reason="first", expires_at=1, attempt_id=None)

    assert (
        refused(
            ConditionFailed,
            lambda: backend.contents.update_upload_rejected("kb_1", "up_1", reason="second", expires_at=2, attempt_id=None),
        )
        == "upload"
    )
    assert backend.contents.get_upload("kb_1", "up_1").reason == "first"  # type: ignore[union-attr]
    assert (
        refused(
            ConditionFailed,
            lambda: backend.contents.update_upload_rejected("kb_1", "up_none", reason="x", expires_at=2, attempt_id=None),
        )
        == "upload"
    )


# -- put_file_for_upload ---------------------------------------------------------------------------


def held_upload(backend: Backend, *, kb_id: str = "kb_1", folder_id: str | None = None) -> UploadRecord:
    """An upload mid-ingest: submitting, held by att-1 (seeded, so that its KB need not exist)."""
    upload = upload_record(
        "up_1",
        kb_id=kb_id,
        folder_id=folder_id,
        state="submitting",
        attempt_id="att-1",
        submitting_at=at(30),
        created_at=T0,
        expires_at=1_900_000_000,
    )
    backend.seed(upload)
    return upload


def the_file(kb_id: str = "kb_1", folder_id: str | None = None) -> FileRecord:
    return file_record("fi_1", kb_id=kb_id, memos_file_id="mf-9", folder_id=folder_id, upload_id="up_1")


def put_file(
    backend: Backend, file: FileRecord, *, owner: str = "alice", attempt_id: str = "att-1"
) -> FileRecord:
    return backend.contents.put_file_for_upload(
        file, owner_id=owner, attempt_id=attempt_id, expires_at=1_900_900_000, capacity=UNCAPPED, activity=activity_for("uploaded", file.kb_id, file.file_id)
    )


def test_given_a_held_upload_when_its_file_is_put_then_the_file_is_stored_and_the_upload_submitted(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    backend.seed(folder_record("fo_docs"))
    upload = held_upload(backend, folder_id="fo_docs")
    file = the_file(folder_id="fo_docs")

    stored = put_file(backend, file)

    assert stored == file
    assert backend.contents.get_file("kb_1", "fi_1") == file
    assert backend.contents.get_upload("kb_1", "up_1") == upload.model_copy(
        update={"state": "submitted", "file_id": "fi_1", "memos_file_id": "mf-9", "expires_at": 1_900_900_000}
    )


def test_given_the_folder_was_deleted_when_the_file_is_put_then_item_missing_folder_and_nothing_is_written(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    upload = held_upload(backend, folder_id="fo_gone")

    assert refused(ItemMissing, lambda: put_file(backend, the_file(folder_id="fo_gone"))) == "folder"
    assert backend.contents.get_file("kb_1", "fi_1") is None
    assert backend.contents.get_upload("kb_1", "up_1") == upload


@pytest.mark.parametrize("folder_id", [None, "fo_gone"])
def test_given_no_kb_when_the_file_is_put_then_item_missing_kb_and_nothing_is_written(
    backend: Backend, folder_id: str | None
) -> None:
    upload = held_upload(backend, kb_id="kb_gone", folder_id=folder_id)

    assert (
        refused(ItemMissing, lambda: put_file(backend, the_file(kb_id="kb_gone", folder_id=folder_id)))
        == "kb"
    )
    assert backend.contents.get_file("kb_gone", "fi_1") is None
    assert backend.contents.get_upload("kb_gone", "up_1") == upload


def test_given_the_kb_changed_hands_when_the_file_is_put_then_item_missing_kb(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    held_upload(backend)

    assert refused(ItemMissing, lambda: put_file(backend, the_file(), owner="bob")) == "kb"
    assert backend.contents.get_file("kb_1", "fi_1") is None


@pytest.mark.parametrize("folder_id", [None, "fo_gone"])
def test_given_another_attempt_when_the_file_is_put_then_condition_failed_upload_and_no_file(
    backend: Backend, kb: KnowledgeBaseRecord, folder_id: str | None
) -> None:
    upload = held_upload(backend, folder_id=folder_id)

    assert refused(
        ConditionFailed, lambda: put_file(backend, the_file(folder_id=folder_id), attempt_id="att-2")
    ) == ("upload")
    assert backend.contents.get_file("kb_1", "fi_1") is None
    assert backend.contents.get_upload("kb_1", "up_1") == upload


def test_given_the_upload_is_not_submitting_when_the_file_is_put_then_condition_failed_upload(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    backend.contents.put_upload(upload_record("up_1"), capacity=UNCAPPED)

    assert refused(ConditionFailed, lambda: put_file(backend, the_file())) == "upload"
    assert backend.contents.get_file("kb_1", "fi_1") is None


def test_given_the_file_already_exists_when_put_again_then_condition_failed_upload(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    held_upload(backend)
    existing = file_record("fi_1", memos_file_id="mf-old", upload_id="up_0")
    backend.seed(existing)

    assert refused(ConditionFailed, lambda: put_file(backend, the_file())) == "upload"
    assert backend.contents.get_file("kb_1", "fi_1") == existing
    assert backend.contents.get_upload("kb_1", "up_1").state == "submitting"  # type: ignore[union-attr]


# -- capacity: files and bytes per KB, counted on META -------------------------------------------

ROOM = KbCapacity(max_files=2, max_bytes=100)


def test_given_room_when_files_are_put_then_meta_counts_them_and_a_repeat_counts_nothing(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    held_upload(backend)
    backend.contents.put_file_for_upload(
        file_record("fi_1", size_bytes=60, upload_id="up_1"),
        owner_id="alice", attempt_id="att-1", expires_at=1, capacity=ROOM,
        activity=activity_for("uploaded", "kb_1", "file"),
    )

    with pytest.raises(ConditionFailed):
        backend.contents.put_file_for_upload(
            file_record("fi_2", size_bytes=60, upload_id="up_1"),
            owner_id="alice", attempt_id="att-1", expires_at=1, capacity=ROOM,
            activity=activity_for("uploaded", "kb_1", "file"),
        )
    stored = backend.kbs.get_kb("kb_1")
    assert stored is not None
    assert (stored.file_count, stored.bytes_used) == (1, 60)


@pytest.mark.parametrize(
    ("count", "used", "size", "which"),
    [(2, 10, 1, "kb_files"), (1, 60, 41, "kb_bytes")],
    ids=["files", "bytes"],
)
def test_given_a_full_kb_when_an_upload_is_put_held_or_recorded_then_condition_failed_names_the_cap(
    backend: Backend, count: int, used: int, size: int, which: str
) -> None:
    backend.seed(kb_record("kb_1").model_copy(update={"file_count": count, "bytes_used": used}))
    assert refused(ConditionFailed, lambda: backend.contents.put_upload(
        upload_record("up_9", size_bytes=size), capacity=ROOM
    )) == which
    held_upload(backend)
    pending = upload_record("up_2", size_bytes=size)
    backend.seed(pending)
    assert refused(ConditionFailed, lambda: backend.contents.update_upload_submitting(
        "kb_1", "up_2", attempt_id="a", now=at(30), keep_until=1, owner_id="alice", size=size, capacity=ROOM
    )) == which
    assert refused(ConditionFailed, lambda: backend.contents.put_file_for_upload(
        file_record("fi_1", size_bytes=size, upload_id="up_1"),
        owner_id="alice", attempt_id="att-1", expires_at=1, capacity=ROOM,
        activity=activity_for("uploaded", "kb_1", "file"),
    )) == which
    assert backend.contents.get_upload("kb_1", "up_9") is None
    assert backend.contents.get_upload("kb_1", "up_2") == pending
    assert backend.contents.get_file("kb_1", "fi_1") is None
    stored = backend.kbs.get_kb("kb_1")
    assert stored is not None
    assert (stored.file_count, stored.bytes_used) == (count, used)


def test_given_no_kb_or_another_owner_when_held_then_item_missing_kb_and_it_stays_pending(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    pending = upload_record("up_2")
    backend.seed(pending, upload_record("up_3", kb_id="kb_gone"))
    hold = backend.contents.update_upload_submitting
    assert refused(ItemMissing, lambda: hold(
        "kb_1", "up_2", attempt_id="a", now=at(30), keep_until=1, owner_id="bob", size=0, capacity=ROOM
    )) == "kb"
    assert refused(ItemMissing, lambda: hold(
        "kb_gone", "up_3", attempt_id="a", now=at(30), keep_until=1, owner_id="alice", size=0, capacity=ROOM
    )) == "kb"
    assert backend.contents.get_upload("kb_1", "up_2") == pending


def test_given_a_recorded_upload_when_its_file_is_put_then_the_activity_entry_rides_with_it(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    held_upload(backend)
    entry = ActivityRecord(
        kb_id="kb_1", activity_id="ac_1", kind="uploaded", actor_id="alice", subject="fi_1", at=at(31), expires_at=9
    )
    backend.contents.put_file_for_upload(the_file(), owner_id="alice", attempt_id="att-1", expires_at=1, activity=entry, capacity=UNCAPPED)

    assert backend.activity.query_activity("kb_1", limit=10, cursor=None, now=0)[0] == [entry]


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


def entry(kind: str, subject: str, minute: int, *, kb_id: str = "kb_1", days: int = 180) -> ActivityRecord:
    return ActivityRecord(
        kb_id=kb_id,
        activity_id=f"ac_{minute:04d}",
        kind=kind,  # type: ignore[arg-type]
        actor_id="alice",
        subject=subject,
        at=at(minute),
        expires_at=int(at(minute).timestamp()) + days * 86400,
    )


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


# == CleanupStore: a delete's transactions with their outbox item ======================================


def cleanup_record(
    cleanup_id: str = "cl_1",
    *,
    target: str = "files",
    kb_id: str = "kb_1",
    state: str = "pending",
    attempts: int = 1,
    due: int = 15,
    **extra: Any,
) -> CleanupRecord:
    return CleanupRecord.model_validate(
        {
            "cleanup_id": cleanup_id,
            "target": target,
            "kb_id": kb_id,
            "memos_kb_id": f"m-{kb_id}",
            "owner_id": "alice",
            "state": state,
            "attempts": attempts,
            "created_at": T0,
            "next_attempt_at": at(due),
            **extra,
        }
    )


def test_given_a_shared_kb_when_deleted_with_its_outbox_then_meta_every_grant_and_one_owned_go_and_the_item_is_written(
    backend: Backend,
) -> None:
    record = kb_record("kb_1")
    backend.kbs.put_kb_with_owner_grant(record, owner_grant_for(record), max_owned=5, request=None)
    backend.kbs.put_reader_grant(reader_grant_for(record, "bob"), max_readers=5, daily=uncapped_daily(), activity=activity_for("shared", record.kb_id, "bob"))
    backend.kbs.put_reader_grant(reader_grant_for(record, "carol"), max_readers=5, daily=uncapped_daily(), activity=activity_for("shared", record.kb_id, "carol"))
    cleanup = cleanup_record(target="kb")

    backend.cleanups.delete_kb_with_outbox(stored_kb(backend), ["bob", "carol"], cleanup)

    assert backend.kbs.get_kb("kb_1") is None
    assert backend.kbs.query_kb_members("kb_1") == []
    assert backend.cleanups.get_cleanup("cl_1") == (cleanup, [])
    # One owned KB was uncounted: a cap of 1 admits a new one.
    again = kb_record("kb_2")
    backend.kbs.put_kb_with_owner_grant(again, owner_grant_for(again), max_owned=1, request=None)


def test_given_a_share_after_the_read_when_the_kb_is_deleted_then_condition_failed_kb_and_nothing_changes(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    read = stored_kb(backend)
    backend.kbs.put_reader_grant(reader_grant_for(kb, "bob"), max_readers=5, daily=uncapped_daily(), activity=activity_for("shared", kb.kb_id, "bob"))

    assert refused(ConditionFailed, lambda: backend.cleanups.delete_kb_with_outbox(read, [], cleanup_record())) == "kb"
    assert stored_kb(backend).member_count == 1
    assert backend.kbs.get_grant("alice", "kb_1") is not None
    assert backend.cleanups.get_cleanup("cl_1") == (None, [])


def test_given_no_meta_or_another_owner_when_the_kb_is_deleted_then_condition_failed_kb(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    gone = kb_record("kb_gone")
    assert refused(ConditionFailed, lambda: backend.cleanups.delete_kb_with_outbox(gone, [], cleanup_record())) == "kb"
    backend.seed(kb.model_copy(update={"owner_id": "dave"}))
    assert refused(ConditionFailed, lambda: backend.cleanups.delete_kb_with_outbox(kb, [], cleanup_record())) == "kb"
    assert backend.cleanups.get_cleanup("cl_1") == (None, [])


def test_given_a_counted_file_when_deleted_with_its_outbox_then_it_goes_uncounted_logged_and_the_item_is_written(
    backend: Backend,
) -> None:
    backend.seed(kb_record("kb_1").model_copy(update={"file_count": 2, "bytes_used": 100}))
    file = file_record("fi_1", size_bytes=30)
    backend.seed(file)
    cleanup = cleanup_record(memos_file_ids=["mf-fi_1"], upload_ids=["up-fi_1"])

    backend.cleanups.delete_file_with_outbox(file, "alice", cleanup, activity=entry("file_deleted", "fi_1", 1))

    assert backend.contents.get_file("kb_1", "fi_1") is None
    assert (stored_kb(backend).file_count, stored_kb(backend).bytes_used) == (1, 70)
    assert backend.cleanups.get_cleanup("cl_1") == (cleanup, [])
    assert [e.subject for e in backend.activity.query_activity("kb_1", limit=5, cursor=None, now=0)[0]] == ["fi_1"]


@pytest.mark.parametrize("what", ["file-gone", "file-replaced", "kb-gone", "other-owner"])
def test_given_the_file_or_kb_changed_when_the_file_is_deleted_then_item_missing_names_it_and_nothing_is_written(
    backend: Backend, what: str
) -> None:
    file = file_record("fi_1")
    if what != "kb-gone":
        backend.seed(kb_record("kb_1", owner_id="dave" if what == "other-owner" else "alice"))
    if what != "file-gone":
        backend.seed(file.model_copy(update={"memos_file_id": "mf-other"}) if what == "file-replaced" else file)
    expected = "kb" if what in ("kb-gone", "other-owner") else "file"

    delete = lambda: backend.cleanups.delete_file_with_outbox(  # noqa: E731
        file, "alice", cleanup_record(), activity=entry("file_deleted", "fi_1", 1)
    )
    assert refused(ItemMissing, delete) == expected
    assert backend.cleanups.get_cleanup("cl_1") == (None, [])
    assert backend.activity.query_activity("kb_1", limit=5, cursor=None, now=0) == ([], None)


def test_given_a_folder_when_deleted_with_its_outbox_then_only_the_folder_goes_and_missing_ones_are_named(
    backend: Backend, kb: KnowledgeBaseRecord
) -> None:
    docs, sub = folder_record("fo_docs"), folder_record("fo_sub", parent_id="fo_docs")
    backend.seed(docs, sub)
    cleanup = cleanup_record(target="folder", folder_id="fo_docs")

    backend.cleanups.delete_folder_with_outbox(docs, "alice", cleanup, activity=entry("folder_deleted", "fo_docs", 1))

    assert backend.contents.query_folders("kb_1") == [sub]
    assert backend.cleanups.get_cleanup("cl_1") == (cleanup, [])
    again = cleanup_record("cl_2")
    logged = entry("folder_deleted", "fo_sub", 2)
    assert refused(ItemMissing, lambda: backend.cleanups.delete_folder_with_outbox(docs, "alice", again, activity=logged)) == "folder"
    assert refused(ItemMissing, lambda: backend.cleanups.delete_folder_with_outbox(sub, "bob", again, activity=logged)) == "kb"
    assert backend.cleanups.get_cleanup("cl_2") == (None, [])
    assert [e.subject for e in backend.activity.query_activity("kb_1", limit=5, cursor=None, now=0)[0]] == ["fo_docs"]


def test_given_files_one_already_gone_when_swept_with_a_part_then_the_rest_go_counted_once_and_the_part_is_written(
    backend: Backend,
) -> None:
    backend.seed(kb_record("kb_1").model_copy(update={"file_count": 3, "bytes_used": 60}))
    a, b, c = (file_record(f"fi_{n}", size_bytes=20) for n in "abc")
    backend.seed(a, c)
    part = CleanupPart(cleanup_id="cl_1", part_id="p1", memos_file_ids=["mf-fi_a", "mf-fi_b", "mf-fi_c"])

    backend.cleanups.delete_files_with_part(part, [a, b, c])

    assert backend.contents.query_kb_items("kb_1")[1] == []
    assert (stored_kb(backend).file_count, stored_kb(backend).bytes_used) == (1, 20)
    assert backend.cleanups.get_cleanup("cl_1") == (None, [part])


def test_given_no_meta_when_files_are_swept_then_they_go_uncounted_and_a_part_without_files_is_written_too(
    backend: Backend,
) -> None:
    a = file_record("fi_a", kb_id="kb_gone")
    backend.seed(a)
    uploads_only = CleanupPart(cleanup_id="cl_1", part_id="p0", upload_ids=["up_1"])

    backend.cleanups.delete_files_with_part(uploads_only, [])
    backend.cleanups.delete_files_with_part(CleanupPart(cleanup_id="cl_1", part_id="p1"), [a])

    assert backend.contents.get_file("kb_gone", "fi_a") is None
    assert [p.part_id for p in backend.cleanups.get_cleanup("cl_1")[1]] == ["p0", "p1"]
    backend.cleanups.delete_cleanup_parts("cl_1", ["p0", "p1"])
    assert backend.cleanups.get_cleanup("cl_1") == (None, [])


def test_given_a_kbs_partition_when_its_items_are_deleted_in_bounded_calls_then_all_go_and_only_its_own(
    backend: Backend,
) -> None:
    backend.seed(
        folder_record("fo_a"), file_record("fi_a"), upload_record("up_a"), folder_record("fo_b"),
        file_record("fi_x", kb_id="kb_2"),
    )

    assert backend.cleanups.delete_kb_items("kb_1", 2) is False
    assert backend.cleanups.delete_kb_items("kb_1", 2) is True
    assert backend.contents.query_kb_items("kb_1") == ([], [], [])
    assert backend.contents.get_file("kb_2", "fi_x") is not None
    backend.cleanups.delete_folders([folder_record("fo_gone")])  # deleting nothing is fine


# == CleanupStore: the reconciler's queue of due cleanups and its cursor ================================


def test_given_cleanups_in_both_queues_when_due_ones_are_queried_then_failed_first_each_oldest_first_and_limited(
    backend: Backend,
) -> None:
    backend.seed(
        cleanup_record("cl_p2", due=20),
        cleanup_record("cl_p1", due=10),
        cleanup_record("cl_f1", state="failed", due=30),
        cleanup_record("cl_late", due=90),
    )

    due = backend.cleanups.query_due_cleanups(at(60), 10)

    assert [c.cleanup_id for c in due] == ["cl_f1", "cl_p1", "cl_p2"]
    assert due[1] == cleanup_record("cl_p1", due=10)
    assert [c.cleanup_id for c in backend.cleanups.query_due_cleanups(at(60), 2)] == ["cl_f1", "cl_p1"]
    assert backend.cleanups.query_due_cleanups(at(5), 10) == []


def test_given_a_due_cleanup_when_restarted_then_counted_once_pending_again_and_a_stale_count_is_refused(
    backend: Backend,
) -> None:
    failed = cleanup_record(state="failed", attempts=2, due=10, last_error="States.Timeout")
    backend.seed(failed)

    restarted = backend.cleanups.update_cleanup_restarted(failed, at(100))

    assert restarted == failed.model_copy(update={"attempts": 3, "state": "pending", "next_attempt_at": at(100)})
    assert backend.cleanups.get_cleanup("cl_1")[0] == restarted
    assert backend.cleanups.query_due_cleanups(at(60), 10) == []
    assert refused(ConditionFailed, lambda: backend.cleanups.update_cleanup_restarted(failed, at(200))) == "cleanup"
    gone = cleanup_record("cl_gone")
    assert refused(ConditionFailed, lambda: backend.cleanups.update_cleanup_restarted(gone, at(200))) == "cleanup"


def test_given_live_kbs_when_paged_after_a_cursor_then_in_id_order_and_the_cursor_reads_back(
    backend: Backend,
) -> None:
    for kb_id in ("kb_c", "kb_a", "kb_b"):
        record = kb_record(kb_id)
        backend.kbs.put_kb_with_owner_grant(record, owner_grant_for(record), max_owned=UNCAPPED_COUNT, request=None)

    assert [k.kb_id for k in backend.cleanups.query_kbs_after(None, 2)] == ["kb_a", "kb_b"]
    assert backend.cleanups.query_kbs_after(None, 1) == [kb_record("kb_a")]
    assert [k.kb_id for k in backend.cleanups.query_kbs_after("kb_b", 2)] == ["kb_c"]
    assert backend.cleanups.get_cursor("residue") is None
    backend.cleanups.put_cursor("residue", "kb_b")
    assert backend.cleanups.get_cursor("residue") == "kb_b"
    backend.cleanups.put_cursor("residue", None)
    assert backend.cleanups.get_cursor("residue") is None


# == CreateIntents =====================================================================================


def put_intent(
    backend: Backend, kb_id: str = "kb_1", minute: int = 0, *, max_owned: int = 5, request: RequestRecord | None = None, now: int = 0
) -> None:
    backend.intents.put_create_intent(
        kb_id, f"memmy:{kb_id}", at(minute), 1_900_000_000, owner_id="alice", max_owned=max_owned, request=request, now=now
    )


def key_record(attempt: str = "kb_1", **changes: Any) -> RequestRecord:
    return RequestRecord.model_validate(
        {
            "operation": "create_kb",
            "key_hash": "h1",
            "payload_hash": "p1",
            "attempt": attempt,
            "in_progress_until": 1_000,
            "expires_at": 90_000,
            **changes,
        }
    )


def test_given_intents_when_stale_ones_are_queried_then_older_ones_oldest_first_limited_and_deleted_ones_gone(
    backend: Backend,
) -> None:
    put_intent(backend, "kb_b", 20)
    put_intent(backend, "kb_a", 10)
    put_intent(backend, "kb_c", 50)

    assert backend.intents.query_stale_intents(at(30), 10) == [("kb_a", "memmy:kb_a"), ("kb_b", "memmy:kb_b")]
    assert backend.intents.query_stale_intents(at(30), 1) == [("kb_a", "memmy:kb_a")]
    backend.intents.delete_create_intent("kb_a")
    backend.intents.delete_create_intent("kb_missing")
    assert backend.intents.query_stale_intents(at(30), 10) == [("kb_b", "memmy:kb_b")]


def test_given_the_owner_at_the_cap_when_an_intent_is_put_then_condition_failed_kb_count_and_no_intent(
    backend: Backend,
) -> None:
    first = kb_record("kb_0")
    backend.kbs.put_kb_with_owner_grant(first, owner_grant_for(first), max_owned=1, request=None)

    assert refused(ConditionFailed, lambda: put_intent(backend, max_owned=1)) == "kb_count"
    assert backend.intents.query_stale_intents(at(60), 10) == []
    put_intent(backend, max_owned=2)


def test_given_a_create_recorded_when_its_intent_was_put_then_the_intent_is_gone(backend: Backend) -> None:
    put_intent(backend)
    record = kb_record("kb_1")

    backend.kbs.put_kb_with_owner_grant(record, owner_grant_for(record), max_owned=5, request=None)

    assert backend.intents.query_stale_intents(at(60), 10) == []


def test_given_a_key_claimed_by_an_intent_when_claimed_again_then_request_seen_until_completed_or_expired(
    backend: Backend,
) -> None:
    claim = key_record()
    put_intent(backend, request=claim, now=10)

    with pytest.raises(RequestSeen) as seen:
        put_intent(backend, "kb_2", request=key_record("kb_2"), now=20)
    assert seen.value.record == claim
    record = kb_record("kb_1")
    answered = claim.model_copy(update={"status": "completed", "result": '{"kb": 1}'})
    backend.kbs.put_kb_with_owner_grant(record, owner_grant_for(record), max_owned=5, request=answered)
    with pytest.raises(RequestSeen) as again:
        put_intent(backend, "kb_2", request=key_record("kb_2"), now=20)
    assert again.value.record == answered
    assert backend.intents.query_stale_intents(at(60), 10) == []
    put_intent(backend, "kb_3", request=key_record("kb_3"), now=100_000)  # expired: taken over
    assert backend.intents.query_stale_intents(at(60), 10) == [("kb_3", "memmy:kb_3")]


def test_given_a_claim_taken_over_when_the_old_attempt_records_its_create_then_condition_failed_request(
    backend: Backend,
) -> None:
    put_intent(backend, request=key_record(), now=10)
    put_intent(backend, "kb_2", request=key_record("kb_2"), now=5_000)  # past in_progress_until
    record = kb_record("kb_1")
    late = key_record().model_copy(update={"status": "completed", "result": "{}"})

    assert refused(
        ConditionFailed, lambda: backend.kbs.put_kb_with_owner_grant(record, owner_grant_for(record), request=late, max_owned=UNCAPPED_COUNT)
    ) == "request"
    assert backend.kbs.get_kb("kb_1") is None


@pytest.mark.parametrize("keep_intent", [False, True])
def test_given_a_failed_keyed_create_when_abandoned_then_the_key_is_free_and_the_intent_kept_only_if_asked(
    backend: Backend, keep_intent: bool
) -> None:
    claim = key_record()
    put_intent(backend, request=claim, now=10)

    backend.intents.abandon_create("kb_1", request=claim, keep_intent=keep_intent)

    put_intent(backend, "kb_2", request=key_record("kb_2"), now=20)
    stale = [kb_id for kb_id, _ in backend.intents.query_stale_intents(at(60), 10)]
    assert stale == (["kb_1", "kb_2"] if keep_intent else ["kb_2"])


def test_given_a_key_taken_over_when_the_old_create_is_abandoned_then_its_intent_still_goes_and_the_key_stays(
    backend: Backend,
) -> None:
    put_intent(backend, request=key_record(), now=10)
    put_intent(backend, "kb_2", request=key_record("kb_2", in_progress_until=10_000), now=5_000)

    backend.intents.abandon_create("kb_1", request=key_record(), keep_intent=False)
    backend.intents.abandon_create("kb_9", request=None, keep_intent=False)

    assert backend.intents.query_stale_intents(at(60), 10) == [("kb_2", "memmy:kb_2")]
    with pytest.raises(RequestSeen):
        put_intent(backend, "kb_3", request=key_record("kb_3"), now=5_001)


# == UploadObjects: the upload bucket =================================================================


@dataclass(frozen=True)
class Bucket:
    """The bucket port of one backend, and how a client's POST puts bytes into it."""

    name: str
    objects: UploadObjects
    put: Callable[[str, bytes], None]


@pytest.fixture(params=["fake", "s3"])
def bucket(request: pytest.FixtureRequest) -> Bucket:
    if request.param == "fake":
        fake = FakeUploadObjects()
        return Bucket("fake", fake, lambda key, data: fake.put(key, data) and None)
    import boto3
    from botocore.config import Config

    name = request.getfixturevalue("service").refs["UploadBucket"]
    client = boto3.client("s3", region_name="us-east-1", config=Config(signature_version="s3v4"))
    return Bucket(
        "s3", UploadStorage(name, client), lambda key, data: client.put_object(Bucket=name, Key=key, Body=data) and None
    )


KEY = "uploads/kb_1/up_1"
DATA = "第一段。\nsecond line\n".encode() * 3


def head(bucket: Bucket, key: str = KEY) -> ObjectInfo:
    info = bucket.objects.head(key)
    assert info is not None
    return info


def test_given_an_object_when_headed_and_read_then_size_etag_and_bytes_agree(bucket: Bucket) -> None:
    bucket.put(KEY, DATA)

    info = head(bucket)

    assert (info.key, info.size, info.etag) == (KEY, len(DATA), '"' + hashlib.md5(DATA, usedforsecurity=False).hexdigest() + '"')
    assert bucket.objects.read_start(KEY, 10) == (info, DATA[:10])
    assert bucket.objects.read_start(KEY, 10_000) == (info, DATA)
    assert bucket.objects.read_range(info, 5, 7) == DATA[5:12]
    assert bucket.objects.read_range(info, len(DATA) - 3, 100) == DATA[-3:]
    assert (bucket.objects.read_range(info, len(DATA), 5), bucket.objects.read_range(info, 0, 0)) == (b"", b"")
    assert b"".join(bucket.objects.iter_chunks(info, 16)) == DATA
    assert all(len(chunk) <= 16 for chunk in bucket.objects.iter_chunks(info, 16))


def test_given_no_object_or_an_empty_one_when_read_then_none_or_no_bytes(bucket: Bucket) -> None:
    assert (bucket.objects.head(KEY), bucket.objects.read_start(KEY, 10)) == (None, None)
    bucket.put(KEY, b"")
    info = head(bucket)
    assert info.size == 0
    assert bucket.objects.read_start(KEY, 10) == (info, b"")


def test_given_the_object_replaced_after_the_head_when_read_or_copied_then_object_changed(bucket: Bucket) -> None:
    bucket.put(KEY, DATA)
    info = head(bucket)
    bucket.put(KEY, DATA + b"more")

    with pytest.raises(ObjectChanged):
        bucket.objects.read_range(info, 0, 5)
    with pytest.raises(ObjectChanged):
        list(bucket.objects.iter_chunks(info))
    if bucket.name == "fake":
        # S3 answers 412 to a copy whose CopySourceIfMatch no longer holds; moto 5.2 ignores the header, so
        # only the fake can show it here (the adapter maps 412 to ObjectChanged like the reads' 412).
        with pytest.raises(ObjectChanged):
            bucket.objects.copy(info, "verified/kb_1/up_1")
        assert bucket.objects.head("verified/kb_1/up_1") is None
    bucket.objects.delete(KEY)
    with pytest.raises(ObjectChanged):
        bucket.objects.read_range(info, 0, 5)


def test_given_an_object_when_copied_and_deleted_then_the_copy_is_the_same_bytes_and_deletes_are_idempotent(
    bucket: Bucket,
) -> None:
    bucket.put(KEY, DATA)
    info = head(bucket)

    bucket.objects.copy(info, "verified/kb_1/up_1")
    bucket.objects.delete(KEY)
    bucket.objects.delete(KEY)

    copy = head(bucket, "verified/kb_1/up_1")
    assert (copy.size, copy.etag) == (info.size, info.etag)
    assert bucket.objects.read_range(copy, 0, copy.size) == DATA
    assert bucket.objects.head(KEY) is None


def test_given_objects_under_a_prefix_when_deleted_in_pages_then_done_once_nothing_is_left_and_others_stay(
    bucket: Bucket,
) -> None:
    for n in range(3):
        bucket.put(f"uploads/kb_1/up_{n}", b"x")
    bucket.put("uploads/kb_10/up_0", b"x")

    assert bucket.objects.delete_prefix("uploads/kb_1/", 2) is False
    assert bucket.objects.delete_prefix("uploads/kb_1/", 2) is True
    assert bucket.objects.delete_prefix("uploads/kb_1/", 2) is True
    assert [bucket.objects.head(f"uploads/kb_1/up_{n}") for n in range(3)] == [None] * 3
    assert bucket.objects.head("uploads/kb_10/up_0") is not None


def test_given_objects_when_listed_in_pages_then_keys_come_in_order_after_the_cursor(bucket: Bucket) -> None:
    keys = ["uploads/kb_1/up_0", "uploads/kb_1/up_1", "uploads/kb_2/up_0", "verified/kb_1/up_1"]
    for key in reversed(keys):
        bucket.put(key, b"x")

    first = bucket.objects.list_keys(start_after=None, limit=3)
    rest = bucket.objects.list_keys(start_after=first[-1], limit=3)

    assert (first, rest) == (keys[:3], keys[3:])
    assert bucket.objects.list_keys(start_after=keys[-1], limit=3) == []


def test_given_a_key_when_presigned_then_the_post_pins_key_and_type_and_the_get_names_the_key(bucket: Bucket) -> None:
    post = bucket.objects.presign_post(KEY, size_bytes=42, content_type="text/markdown", expires_in=300)
    url = bucket.objects.presign_get("verified/kb_1/up_1", expires_in=60)

    assert (post.fields["key"], post.fields["Content-Type"]) == (KEY, "text/markdown")
    assert post.url.startswith("https://") or post.url.startswith("http://")
    assert "verified/kb_1/up_1" in url
    assert url != bucket.objects.presign_get("verified/kb_1/up_2", expires_in=60)


# == CleanupExecutions and UploadRequeue: Step Functions and SQS ========================================


@dataclass(frozen=True)
class Pipeline:
    """The cleanup state machine and the upload queue of one backend, and what each was handed."""

    executions: CleanupExecutions
    requeue: UploadRequeue
    started: Callable[[], dict[str, str]]  # execution name -> the cleanup id of its input
    requeued: Callable[[], list[str]]  # the object keys the ingest would read from the queue


@pytest.fixture(params=["fake", "aws"])
def pipeline(request: pytest.FixtureRequest) -> Pipeline:
    if request.param == "fake":
        machine, queue = FakeCleanupExecutions(), FakeUploadRequeue()
        return Pipeline(machine, queue, lambda: dict(machine.executions), lambda: list(queue.requeued))
    import boto3

    refs = request.getfixturevalue("service").refs
    sfn = boto3.client("stepfunctions", region_name="us-east-1")
    sqs = boto3.client("sqs", region_name="us-east-1")
    arn, queue_url = refs["CleanupStateMachine"], refs["UploadQueue"]
    # Executions outlive the per-test reset: each test only sees the names it started (its own prefix).
    prefix = f"t{uuid.uuid4().hex[:8]}"

    def started() -> dict[str, str]:
        listed = sfn.list_executions(stateMachineArn=arn)["executions"]
        return {
            e["name"][len(prefix):]: json.loads(sfn.describe_execution(executionArn=e["executionArn"])["input"])["cleanup_id"]
            for e in listed
            if e["name"].startswith(prefix)
        }

    def requeued() -> list[str]:
        messages = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages", [])
        return [key for m in messages for key in object_keys(m["Body"])]

    machine = CleanupStateMachine(arn, sfn)

    class Prefixed:
        def start(self, cleanup_id: str, execution_name: str) -> None:
            machine.start(cleanup_id, prefix + execution_name)

    return Pipeline(Prefixed(), UploadQueue(queue_url, refs["UploadBucket"], sqs), started, requeued)


def test_given_a_cleanup_when_started_twice_under_one_name_then_one_execution_and_new_names_start_new_ones(
    pipeline: Pipeline,
) -> None:
    pipeline.executions.start("cl_1", "cl_1")
    pipeline.executions.start("cl_1", "cl_1")
    pipeline.executions.start("cl_2", "cl_1")  # the name is taken: counts as started, changes nothing

    assert pipeline.started() == {"cl_1": "cl_1"}
    pipeline.executions.start("cl_1", "cl_1-2")
    assert pipeline.started() == {"cl_1": "cl_1", "cl_1-2": "cl_1"}


def test_given_an_upload_object_when_requeued_then_the_ingest_reads_exactly_its_key(pipeline: Pipeline) -> None:
    pipeline.requeue.requeue("uploads/kb_1/up_1")

    assert pipeline.requeued() == ["uploads/kb_1/up_1"]


# == Every port has a fake in this suite ===============================================================

# Each port, the fake that stands for it here, and the fixture that runs it beside its adapter.
# ``KnowledgeEngine``'s fake runs beside ``MemosClient`` on the emulator below.
PORT_FAKES: dict[type, tuple[type, str]] = {
    GrantReader: (FakeKnowledgeBaseStore, "backend"),
    RecallSources: (FakeKnowledgeBaseStore, "backend"),
    KnowledgeBaseStore: (FakeKnowledgeBaseStore, "backend"),
    ContentStore: (FakeContentStore, "backend"),
    ProfileStore: (FakeProfileStore, "backend"),
    ActivityLog: (FakeActivityLog, "backend"),
    RateCounters: (FakeRateCounters, "backend"),
    CleanupStore: (FakeCleanupStore, "backend"),
    CreateIntents: (FakeCreateIntents, "backend"),
    CleanupExecutions: (FakeCleanupExecutions, "pipeline"),
    UploadRequeue: (FakeUploadRequeue, "pipeline"),
    UploadObjects: (FakeUploadObjects, "bucket"),
    KnowledgeEngine: (FakeKnowledgeEngine, "engine"),
    KnowledgeEngines: (FakeEngines, "engines"),
    BackendSlots: (FakeBackendSlots, "backend"),
}


def _protocol_members(port: type) -> dict[str, inspect.Signature]:
    members: dict[str, inspect.Signature] = {}
    for klass in reversed(port.__mro__):
        if getattr(klass, "_is_protocol", False) and klass is not Protocol:
            members.update(
                {
                    name: inspect.signature(value)
                    for name, value in vars(klass).items()
                    if inspect.isfunction(value) and not name.startswith("_")
                }
            )
    return members


def test_every_port_in_domain_ports_has_a_fake_with_its_methods_run_in_this_suite() -> None:
    declared = {
        value
        for value in vars(ports).values()
        if isinstance(value, type) and value.__module__ == ports.__name__ and getattr(value, "_is_protocol", False)
    }

    assert declared == set(PORT_FAKES), f"ports without a fake here: {sorted(p.__name__ for p in declared - set(PORT_FAKES))}"
    module = sys.modules[__name__]
    for port, (fake, fixture) in PORT_FAKES.items():
        for name, signature in _protocol_members(port).items():
            assert hasattr(fake, name), f"{fake.__name__} lacks {port.__name__}.{name}"
            theirs = [p for p in inspect.signature(getattr(fake, name)).parameters if p != "self"]
            assert theirs == [p for p in signature.parameters if p != "self"], f"{fake.__name__}.{name}"
        assert any(
            fixture in inspect.signature(test).parameters
            for test_name, test in vars(module).items()
            if test_name.startswith("test_") and callable(test)
        ), f"no contract case uses the {fixture!r} fixture of {port.__name__}"


# == KnowledgeEngine: MemOS, beside MemosClient on the emulator ========================================


@pytest.fixture(params=["fake", "memos"])
def engine(request: pytest.FixtureRequest) -> Iterator[KnowledgeEngine]:
    if request.param == "fake":
        yield FakeKnowledgeEngine()
        return
    emulator = request.getfixturevalue("memos_emulator")
    with MemosClient(emulator.base_url, lambda _refresh: emulator.api_key, sleep=lambda _s: None) as client:
        yield client


def markdown_file(name: str) -> FileInput:
    return FileInput.from_bytes(b"# Notes\n\nThe release checklist is reviewed on Mondays.\n", name=name, mime_type="text/markdown")


def test_given_a_kb_when_files_are_added_listed_and_deleted_then_each_step_shows_and_repeats_are_harmless(
    engine: KnowledgeEngine,
) -> None:
    kb = engine.create_knowledgebase("memmy:kb_1")
    other = engine.create_knowledgebase("memmy:kb_2")

    [added] = engine.add_knowledgebase_files(kb, [markdown_file("notes~up_1.md")])
    engine.add_knowledgebase_files(other, [markdown_file("other~up_2.md")])

    assert [(f.id, f.name) for f in engine.iter_knowledgebase_files(kb)] == [(added.id, "notes~up_1.md")]
    assert [f.id for f in engine.get_knowledgebase_files([added.id, "missing"])] == [added.id]
    engine.delete_knowledgebase_files([added.id])
    engine.delete_knowledgebase_files([added.id])  # already gone: done
    assert list(engine.iter_knowledgebase_files(kb)) == []
    assert len(list(engine.iter_knowledgebase_files(other))) == 1


def test_given_a_deleted_kb_when_its_files_are_listed_or_added_then_memos_not_found(engine: KnowledgeEngine) -> None:
    kb = engine.create_knowledgebase("memmy:kb_1")

    engine.delete_knowledgebase(kb, delete_all=True)

    with pytest.raises(MemosNotFound):
        list(engine.iter_knowledgebase_files(kb))
    with pytest.raises(MemosNotFound):
        engine.add_knowledgebase_files(kb, [markdown_file("late~up_3.md")])


def test_given_a_file_when_its_next_version_is_sent_then_the_same_file_processes_it_and_a_gone_file_is_not_found(
    engine: KnowledgeEngine,
) -> None:
    kb = engine.create_knowledgebase("memmy:kb_1")
    [added] = engine.add_knowledgebase_files(kb, [markdown_file("notes~up_1.md")])

    updated = engine.update_knowledgebase_file(added.id, markdown_file("notes~up_2.md"))

    assert (updated.id, updated.status) == (added.id, FileStatus.PROCESSING)
    assert [(f.id, f.name) for f in engine.iter_knowledgebase_files(kb)] == [(added.id, "notes~up_2.md")]
    engine.delete_knowledgebase_files([added.id])
    with pytest.raises(MemosNotFound):
        engine.update_knowledgebase_file(added.id, markdown_file("notes~up_3.md"))


def test_given_kbs_without_memories_when_searched_then_nothing_and_a_scope_of_all_is_refused(
    engine: KnowledgeEngine,
) -> None:
    kb = engine.create_knowledgebase("memmy:kb_1")

    assert engine.search_memory("alice", "release checklist", [kb], limit=3) == []
    with pytest.raises(ValueError, match="explicit knowledge base ids"):
        engine.search_memory("alice", "x", ["all"])
    with pytest.raises(ValueError, match="at least one knowledge base"):
        engine.search_memory("alice", "x", [])


# == KnowledgeEngines: the MemOS backends, beside MemosBackends on two emulator projects ==================


@pytest.fixture(params=["fake", "memos"])
def engines(request: pytest.FixtureRequest) -> Iterator[KnowledgeEngines]:
    if request.param == "fake":
        fake = FakeEngines(a=2, b=3)
        fake.draining.add("b")
        yield fake
        return
    emulator = request.getfixturevalue("memos_emulator")
    configs = [
        MemosBackendConfig("a", emulator.base_url, emulator.api_key, max_kbs=2),
        MemosBackendConfig("b", emulator.base_url, emulator.other_project_key, max_kbs=3, draining=True),
    ]
    built: list[MemosClient] = []

    def build(base_url: str, key: Callable[[bool], str]) -> KnowledgeEngine:
        built.append(MemosClient(base_url, key, sleep=lambda _s: None))
        return built[-1]

    yield MemosBackends(lambda _refresh: configs, build)
    for client in built:
        client.close()


def test_given_two_backends_when_listed_then_each_with_its_cap_and_draining_flag(engines: KnowledgeEngines) -> None:
    assert engines.backends() == [EngineBackend("a", max_kbs=2), EngineBackend("b", max_kbs=3, draining=True)]
    with pytest.raises(MemosBackendUnknown):
        engines.engine("retired")


def test_given_a_kb_on_one_backend_when_the_other_is_asked_then_it_is_not_there_and_cannot_be_deleted_there(
    engines: KnowledgeEngines,
) -> None:
    kb = engines.engine("a").create_knowledgebase("memmy:kb_1")
    engines.engine("a").add_knowledgebase_files(kb, [markdown_file("notes~up_1.md")])

    with pytest.raises(MemosNotFound):
        list(engines.engine("b").iter_knowledgebase_files(kb))
    engines.engine("b").delete_knowledgebase(kb, delete_all=True)  # not there: done, and nothing happens
    assert len(list(engines.engine("a").iter_knowledgebase_files(kb))) == 1
    assert engines.engine("a") is engines.engine("a")  # one client per backend, kept


# == BackendSlots: the KBs placed per backend ===========================================================


def test_given_a_backend_of_two_when_claimed_thrice_then_the_third_is_refused_and_a_release_frees_one_once(
    backend: Backend,
) -> None:
    slots = backend.slots

    claimed = [slots.claim_slot("p1", kb, max_kbs=2) for kb in ("kb_1", "kb_2", "kb_3")]

    assert claimed == [True, True, False]
    assert (slots.slot_of("kb_1", ["p1", "p2"]), slots.slot_of("kb_3", ["p1"]), slots.slot_of("kb_1", ["p2"])) == (
        "p1",
        None,
        None,
    )
    assert not slots.claim_slot("p1", "kb_1", max_kbs=5)  # placed once
    slots.release_slot("p1", "kb_1")
    slots.release_slot("p1", "kb_1")  # a cleanup round repeated: freed once
    assert slots.used_slots(["p1", "p2"]) == {"p1": 1, "p2": 0}
    assert slots.claim_slot("p1", "kb_3", max_kbs=2)
    assert not slots.claim_slot("p1", "kb_4", max_kbs=2)
    assert slots.claim_slot("p2", "kb_4", max_kbs=2)


def test_given_twenty_concurrent_claims_with_room_for_six_then_exactly_six_succeed(backend: Backend) -> None:
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=20) as pool:
        results = list(pool.map(lambda i: backend.slots.claim_slot("p1", f"kb_{i}", max_kbs=6), range(20)))

    assert results.count(True) == 6
    assert backend.slots.used_slots(["p1"]) == {"p1": 6}


def test_given_a_backend_one_short_of_the_largest_cap_when_claimed_then_its_counter_still_fits_one_item(
    service: Any,
) -> None:
    # The secret allows at most MAX_BACKEND_KBS KBs a backend because its counter lists their ids: the
    # full set (ids as new_kb_id makes them) must stay under DynamoDB's 400 KB item.
    from memmy_kb.adapters.dynamodb.slots import counter_key
    from memmy_kb.adapters.memos.key import MAX_BACKEND_KBS
    from memmy_kb.domain.knowledge_bases import new_kb_id

    table = service.stores.table
    placed = {new_kb_id() for _ in range(MAX_BACKEND_KBS - 1)}
    counter = {**counter_key("p1"), "type": "backend_counter", "used": len(placed), "kbs": placed}
    table.client.put_item(TableName=table.name, Item=dump(counter))
    slots = DynamoBackendSlots(table)

    assert slots.claim_slot("p1", new_kb_id(), max_kbs=MAX_BACKEND_KBS)
    assert not slots.claim_slot("p1", new_kb_id(), max_kbs=MAX_BACKEND_KBS)
    assert slots.used_slots(["p1"]) == {"p1": MAX_BACKEND_KBS}
    assert slots.slot_of(next(iter(placed)), ["p1"]) == "p1"
