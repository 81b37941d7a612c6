"""In-memory fakes of the domain's ports (``memmy_kb.domain.ports``), for unit tests in milliseconds.

The stores (KBs and grants, contents, profiles, activity and counters, deletes with the cleanup outbox,
create intents) share one ``FakeTable``, as the DynamoDB adapters share one table, so that a write can
check another aggregate's item the way the adapters' transactions do (an upload needs the KB's META and
its owner, a folder needs its KB). Each write is written as the adapter's transaction is: every action's
condition is evaluated against the state before the write, the indexes of the failed ones decide which
``memmy_kb.domain.storage`` error (and ``.item``) is raised, and nothing is applied unless all pass.
Like DynamoDB, a transaction that touches one item twice, or more than 100 items, is invalid
(``InvalidTransaction``, not a store error). ``tests/integration/store_contract/`` runs the same
cases against these fakes and the real adapters (moto, the MemOS emulator), so the two cannot drift
apart, and fails when a port has no fake there.

Records go in and come out as copies: a test holding a record cannot change the table behind the store's
back. ``FakeTable.seed`` puts records as they are, for states the stores' writes never produce on their
own (a rejected upload, a grant without its META, a stale ``submitting``).

``FakeKnowledgeEngine`` stands in for MemOS: knowledge bases, files with a settable status, memories
searched by KB, every call counted, and failures injected per method. ``FakeUploadObjects`` is the
upload bucket (ETags, reads pinned to them, deterministic presigned values), ``FakeCleanupExecutions``
the cleanup state machine (one execution per name) and ``FakeUploadRequeue`` the upload queue.
"""

from __future__ import annotations

from memmy_kb.domain.ports.activity import ActivityLog, RateCounters
from memmy_kb.domain.ports.cleanups import CleanupExecutions, CleanupStore
from memmy_kb.domain.ports.connections import ConnectionStore
from memmy_kb.domain.ports.contents import ContentStore
from memmy_kb.domain.ports.engines import BackendSlots, KnowledgeEngine, KnowledgeEngines
from memmy_kb.domain.ports.knowledge_bases import CreateIntents, GrantReader, KnowledgeBaseStore
from memmy_kb.domain.ports.mcp_hits import HitStore
from memmy_kb.domain.ports.profiles import ProfileStore
from memmy_kb.domain.ports.teams import TeamStore
from memmy_kb.domain.ports.uploads import UploadObjects, UploadRequeue
from tests.support.fakes.activity import FakeActivityLog, FakeRateCounters
from tests.support.fakes.bucket import FakeUploadObjects
from tests.support.fakes.cleanups import (
    FakeCleanupExecutions,
    FakeCleanupStore,
    FakeCreateIntents,
    FakeUploadRequeue,
)
from tests.support.fakes.contents import FakeContentStore
from tests.support.fakes.fingerprints import FakeFingerprintStore
from tests.support.fakes.knowledge_bases import FakeKnowledgeBaseStore
from tests.support.fakes.mcp import FakeConnectionStore, FakeHitStore
from tests.support.fakes.memos import (
    EngineMethod,
    FakeEngines,
    FakeKnowledgeEngine,
    FakeMemosKnowledgeBase,
    SearchCall,
    memos_error,
)
from tests.support.fakes.profiles import FakeProfileStore
from tests.support.fakes.stores import FakeBackendSlots, FakeStores, fake_stores
from tests.support.fakes.table import FakeTable, InvalidTransaction
from tests.support.fakes.teams import FakeTeamStore

__all__ = [
    "EngineMethod",
    "FakeActivityLog",
    "FakeBackendSlots",
    "FakeCleanupExecutions",
    "FakeCleanupStore",
    "FakeConnectionStore",
    "FakeContentStore",
    "FakeCreateIntents",
    "FakeEngines",
    "FakeFingerprintStore",
    "FakeHitStore",
    "FakeKnowledgeBaseStore",
    "FakeKnowledgeEngine",
    "FakeMemosKnowledgeBase",
    "FakeProfileStore",
    "FakeRateCounters",
    "FakeStores",
    "FakeTable",
    "FakeTeamStore",
    "FakeUploadObjects",
    "FakeUploadRequeue",
    "InvalidTransaction",
    "SearchCall",
    "fake_stores",
    "memos_error",
]

# mypy --strict (``make lint`` checks this module) proves that each fake still satisfies its port: a
# drift of either side fails here.
_grants: GrantReader = FakeKnowledgeBaseStore()
_kbs: KnowledgeBaseStore = FakeKnowledgeBaseStore()
_contents: ContentStore = FakeContentStore()
_profiles: ProfileStore = FakeProfileStore()
_teams: TeamStore = FakeTeamStore()
_activity: ActivityLog = FakeActivityLog()
_counters: RateCounters = FakeRateCounters()
_cleanups: CleanupStore = FakeCleanupStore()
_intents: CreateIntents = FakeCreateIntents()
_executions: CleanupExecutions = FakeCleanupExecutions()
_requeue: UploadRequeue = FakeUploadRequeue()
_objects: UploadObjects = FakeUploadObjects()
_engine: KnowledgeEngine = FakeKnowledgeEngine()
_one_backend: KnowledgeEngines = FakeKnowledgeEngine()
_engines: KnowledgeEngines = FakeEngines(a=1)
_slots: BackendSlots = FakeBackendSlots()
_connections: ConnectionStore = FakeConnectionStore()
_hits: HitStore = FakeHitStore()
