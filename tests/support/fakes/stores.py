"""The fake stores on one table (``fake_stores``), and ``BackendSlots`` in memory."""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass

from tests.support.fakes.activity import FakeActivityLog, FakeRateCounters
from tests.support.fakes.cleanups import FakeCleanupStore, FakeCreateIntents
from tests.support.fakes.contents import FakeContentStore
from tests.support.fakes.knowledge_bases import FakeKnowledgeBaseStore
from tests.support.fakes.profiles import FakeProfileStore
from tests.support.fakes.table import FakeTable


@dataclass(frozen=True)
class FakeStores:
    """The fake stores on one table (the counterpart of ``tests.support.aws.Stores``)."""

    table: FakeTable
    kbs: FakeKnowledgeBaseStore
    contents: FakeContentStore
    profiles: FakeProfileStore
    activity: FakeActivityLog
    counters: FakeRateCounters
    cleanups: FakeCleanupStore
    intents: FakeCreateIntents
    slots: FakeBackendSlots


def fake_stores(table: FakeTable | None = None) -> FakeStores:
    table = table if table is not None else FakeTable()
    return FakeStores(
        table,
        FakeKnowledgeBaseStore(table),
        FakeContentStore(table),
        FakeProfileStore(table),
        FakeActivityLog(table),
        FakeRateCounters(table),
        FakeCleanupStore(table),
        FakeCreateIntents(table),
        FakeBackendSlots(),
    )


class FakeBackendSlots:
    """``BackendSlots`` in memory: a counter per backend, a slot per KB, claims under a lock."""

    def __init__(self) -> None:
        self.used: Counter[str] = Counter()
        self.slots: dict[str, str] = {}  # kb_id -> backend
        self._lock = threading.Lock()

    def claim_slot(self, backend_id: str, kb_id: str, *, max_kbs: int) -> bool:
        with self._lock:
            if self.used[backend_id] >= max_kbs or self.slots.get(kb_id) == backend_id:
                return False
            self.used[backend_id] += 1
            self.slots[kb_id] = backend_id
            return True

    def release_slot(self, backend_id: str, kb_id: str) -> None:
        with self._lock:
            if self.slots.get(kb_id) == backend_id:
                del self.slots[kb_id]
                self.used[backend_id] -= 1

    def slot_of(self, kb_id: str, backend_ids: list[str]) -> str | None:
        backend = self.slots.get(kb_id)
        return backend if backend in backend_ids else None

    def used_slots(self, backend_ids: list[str]) -> dict[str, int]:
        return {b: self.used[b] for b in backend_ids}
