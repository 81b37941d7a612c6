"""The reconciler's world for its domain tests: every collaborator a fake, and ``World.reconciler`` built
on them at ``NOW``, three days after the factories' ``T0``. The ``world`` fixture takes the domain tests'
``stores`` and ``memos`` (tests/unit/domain/conftest.py)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from memmy_kb.domain.reconcile.repair import ReconcileLimits, Reconciler
from memmy_kb.records import KbCapacity, KnowledgeBaseRecord
from tests.support.factories import T0, UNCAPPED_COUNT, kb_record, owner_grant_for
from tests.support.fakes import (
    FakeCleanupExecutions,
    FakeFingerprintStore,
    FakeKnowledgeEngine,
    FakeStores,
    FakeUploadObjects,
    FakeUploadRequeue,
)

NOW = T0 + timedelta(days=3)
ROOM = KbCapacity(max_files=10, max_bytes=10_000)


class World:
    """The reconciler's collaborators, all fakes, and the reconciler built on them."""

    def __init__(self, stores: FakeStores, memos: FakeKnowledgeEngine) -> None:
        self.stores, self.memos = stores, memos
        self.executions = FakeCleanupExecutions()
        self.requeue = FakeUploadRequeue()
        self.objects = FakeUploadObjects()
        self.prints = FakeFingerprintStore()

    def reconciler(self, *, limits: ReconcileLimits | None = None, time_left: list[float] | None = None) -> Reconciler:
        left = iter(time_left or [])
        return Reconciler(
            self.stores.kbs,
            self.stores.contents,
            self.stores.cleanups,
            self.stores.intents,
            self.executions,
            self.requeue,
            self.memos,
            self.objects,
            self.stores.slots,
            capacity=ROOM,
            activity_retention_days=30,
            limits=limits or ReconcileLimits(),
            clock=lambda: NOW,
            time_left=(lambda: next(left, 0.0)) if time_left is not None else (lambda: None),
            prints=self.prints,
        )

    def live_kb(self, kb_id: str = "kb_1") -> KnowledgeBaseRecord:
        kb = kb_record(kb_id, memos_kb_id=self.memos.create_knowledgebase(f"memmy:{kb_id}"))
        self.stores.kbs.put_kb_with_owner_grant(kb, owner_grant_for(kb), max_owned=UNCAPPED_COUNT, request=None)
        return kb


@pytest.fixture
def world(stores: FakeStores, memos: FakeKnowledgeEngine) -> World:
    return World(stores, memos)
