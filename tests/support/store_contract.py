"""What the ports' contract suite (tests/integration/store_contract/) runs its cases on: a ``Backend``
(the stores of one backend, and ``seed`` to arrange items behind their back, as the adapters lay them
out), built on the fakes or on the DynamoDB adapters of the ``service`` fixture; the upload ``Bucket`` and
the cleanup ``Pipeline`` likewise; ``refused``, which names the item a refused write names; and the
records the cases share. The fixtures that run each case once per backend are the suite's conftest's."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from memmy_kb.adapters.dynamodb.activity import DynamoActivityLog, DynamoRateCounters
from memmy_kb.adapters.dynamodb.cleanups import DynamoCleanupStore
from memmy_kb.adapters.dynamodb.intents import DynamoCreateIntents
from memmy_kb.adapters.dynamodb.keys import (
    cleanup_key,
    cleanup_part_key,
    file_key,
    folder_key,
    grant_key,
    kb_key,
    lookup_key,
    profile_key,
    upload_key,
)
from memmy_kb.adapters.dynamodb.slots import DynamoBackendSlots
from memmy_kb.adapters.dynamodb.table import dump, epoch_key
from memmy_kb.adapters.dynamodb.teams import DynamoTeamStore
from memmy_kb.domain.engine import FileInput
from memmy_kb.domain.ports.activity import ActivityLog, RateCounters
from memmy_kb.domain.ports.cleanups import CleanupExecutions, CleanupStore
from memmy_kb.domain.ports.connections import ConnectionStore
from memmy_kb.domain.ports.contents import ContentStore
from memmy_kb.domain.ports.engines import BackendSlots
from memmy_kb.domain.ports.knowledge_bases import CreateIntents, KnowledgeBaseStore
from memmy_kb.domain.ports.mcp_hits import HitStore
from memmy_kb.domain.ports.profiles import IdentifierKind, ProfileStore
from memmy_kb.domain.ports.teams import TeamStore
from memmy_kb.domain.ports.uploads import UploadObjects, UploadRequeue
from memmy_kb.domain.storage import StoreError
from memmy_kb.records import (
    ActivityRecord,
    CleanupPart,
    CleanupRecord,
    FileRecord,
    FolderRecord,
    GrantRecord,
    KnowledgeBaseRecord,
    MembershipRecord,
    TeamRecord,
    UploadRecord,
)
from tests.support.aws import Stores
from tests.support.factories import T0, at
from tests.support.fakes import FakeTeamStore, fake_stores
from tests.support.fakes.table import Record
from tests.support.teams import membership_item, team_item

PHONE = "+8613800138000"
OTHER_PHONE = "+8613900139000"


@dataclass(frozen=True)
class McpStores:
    """The remote MCP endpoint's two stores of one backend."""

    name: str
    connections: ConnectionStore
    hits: HitStore


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
    teams: TeamStore


def fake_backend() -> Backend:
    """The fakes on one table."""
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
        FakeTeamStore(stores.table),
    )


def _item(record: Record) -> dict[str, Any]:
    """A record as the adapters lay it out in the table (keys, type, index attributes)."""
    data = record.model_dump()
    if isinstance(record, KnowledgeBaseRecord):
        return {**kb_key(record.kb_id), "type": "kb", "GSI2PK": "KB", "GSI2SK": record.kb_id, **data}
    if isinstance(record, CleanupRecord):
        queue: dict[str, Any] = {"GSI2PK": f"CLEANUP#{record.state}", "GSI2SK": record.next_attempt_at.isoformat()}
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
        queue = {}
        if record.state == "pending":
            queue = {"GSI2PK": "UPLOAD#pending", "GSI2SK": epoch_key(record.expires_at)}
        elif record.state == "submitting" and record.submitting_at is not None:
            queue = {"GSI2PK": "UPLOAD#submitting", "GSI2SK": record.submitting_at.isoformat()}
        return {**upload_key(record.kb_id, record.upload_id), **queue, "type": "upload", **data}
    if isinstance(record, TeamRecord):
        return team_item(record)
    if isinstance(record, MembershipRecord):
        return membership_item(record)
    if not data["blocked_names"]:
        del data["blocked_names"]  # a seeded profile has the shape written before names were kept
    return {**profile_key(record.user_id), "type": "profile", **data}


def dynamo_backend(stores: Stores) -> Backend:
    """The DynamoDB adapters on the `service` fixture's table (moto)."""
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
        DynamoTeamStore(table),
    )


def refused(error: type[StoreError], action: Callable[[], object]) -> str:
    """Run ``action``, which must raise exactly ``error``; return the error's ``item``."""
    with pytest.raises(StoreError) as raised:
        action()
    assert type(raised.value) is error, (
        f"{type(raised.value).__name__}({raised.value.item}), not {error.__name__}"
    )
    return raised.value.item


def stored_kb(backend: Backend, kb_id: str = "kb_1") -> KnowledgeBaseRecord:
    record = backend.kbs.get_kb(kb_id)
    assert record is not None
    return record


def entry(kind: str, subject: str, minute: int, *, kb_id: str = "kb_1", days: int = 180) -> ActivityRecord:
    return ActivityRecord(
        kb_id=kb_id,
        activity_id=f"ac_{minute:04d}",
        kind=kind,
        actor_id="alice",
        subject=subject,
        at=at(minute),
        expires_at=int(at(minute).timestamp()) + days * 86400,
    )


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


@dataclass(frozen=True)
class Bucket:
    """The bucket port of one backend, and how a client's POST puts bytes into it."""

    name: str
    objects: UploadObjects
    put: Callable[[str, bytes], None]


@dataclass(frozen=True)
class Pipeline:
    """The cleanup state machine and the upload queue of one backend, and what each was handed."""

    executions: CleanupExecutions
    requeue: UploadRequeue
    started: Callable[[], dict[str, str]]  # execution name -> the cleanup id of its input
    requeued: Callable[[], list[str]]  # the object keys the ingest would read from the queue


def markdown_file(name: str) -> FileInput:
    return FileInput.from_bytes(b"# Notes\n\nThe release checklist is reviewed on Mondays.\n", name=name, mime_type="text/markdown")
