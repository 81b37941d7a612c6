"""The composition root: the adapters behind each port, built on first use and kept for the container's life.

Domain functions take ports as arguments (``memmy_kb.domain.ports``). The API routes receive what these
factories build through Powertools ``Depends`` (``memmy_kb.api.injected``); the event handlers (ingest,
cleanup, reconcile) call them. Each factory is typed as the port it serves, so the type checker proves that
the adapter implements it. ``reset_composition()`` forgets everything built here (tests after changing the
environment, the local stack between stacks): the one reset there is.
"""

from __future__ import annotations

import sys
from functools import cache
from typing import TYPE_CHECKING, Any, Literal

from memmy_kb.settings import get_settings

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer

    # For the checker only: each factory is typed as its port and imports its adapter when first called.
    from memmy_kb.adapters.dynamodb.table import DynamoTable
    from memmy_kb.adapters.memos.key import SecretBackendsProvider
    from memmy_kb.domain.fingerprints.store import FingerprintStore
    from memmy_kb.domain.ports.activity import ActivityLog, RateCounters
    from memmy_kb.domain.ports.cleanups import CleanupExecutions, CleanupStore
    from memmy_kb.domain.ports.connections import ConnectionStore
    from memmy_kb.domain.ports.contents import ContentStore
    from memmy_kb.domain.ports.engines import BackendSlots, KnowledgeEngines
    from memmy_kb.domain.ports.knowledge_bases import CreateIntents, KnowledgeBaseStore
    from memmy_kb.domain.ports.mcp_auth import McpAuthPorts
    from memmy_kb.domain.ports.mcp_hits import HitStore
    from memmy_kb.domain.ports.profiles import ProfileStore
    from memmy_kb.domain.ports.teams import TeamStore
    from memmy_kb.domain.ports.uploads import UploadObjects, UploadRequeue
    from memmy_kb.domain.recall.prints_cache import PrintsCache, RecallFiles
    from memmy_kb.domain.recall.rate_governor import RateGovernor
    from memmy_kb.domain.recall.user_limit import RecallLimiter
    from memmy_kb.records import KbCapacity

# The adapters are imported by the factories, on first use: a function pays for boto3, httpx and the
# DynamoDB codec only when a request needs them, and never for an adapter it does not use.


@cache
def aws_session() -> Any:
    """The one boto3 session of every client here: boto3's default one, but for its data loader, which
    knows only our services and so skips botocore's listing of all of them (``adapters/aws_session.py``)."""
    from memmy_kb.adapters.aws_session import known_services_session

    return known_services_session()


def _aws_client(service: Literal["dynamodb", "stepfunctions", "sqs", "secretsmanager"]) -> Any:
    """A low-level client with short timeouts and standard retries, from ``aws_session()``."""
    from botocore.config import Config

    config = Config(connect_timeout=2, read_timeout=5, retries={"mode": "standard", "max_attempts": 3})
    return aws_session().client(service, config=config)


@cache
def dynamodb_client() -> Any:
    return _aws_client("dynamodb")


@cache
def get_table() -> DynamoTable:
    from memmy_kb.adapters.dynamodb.table import DynamoTable

    return DynamoTable(get_settings().table_name, dynamodb_client())


@cache
def get_kb_store() -> KnowledgeBaseStore:
    from memmy_kb.adapters.dynamodb.knowledge_bases import DynamoKnowledgeBaseStore

    return DynamoKnowledgeBaseStore(get_table())


@cache
def get_content_store() -> ContentStore:
    from memmy_kb.adapters.dynamodb.contents import DynamoContentStore

    return DynamoContentStore(get_table())


@cache
def get_profile_store() -> ProfileStore:
    from memmy_kb.adapters.dynamodb.profiles import DynamoProfileStore

    return DynamoProfileStore(get_table())


@cache
def get_team_store() -> TeamStore:
    from memmy_kb.adapters.dynamodb.teams import DynamoTeamStore

    return DynamoTeamStore(get_table())


@cache
def get_activity_log() -> ActivityLog:
    from memmy_kb.adapters.dynamodb.activity import DynamoActivityLog

    return DynamoActivityLog(get_table())


@cache
def get_rate_counters() -> RateCounters:
    from memmy_kb.adapters.dynamodb.activity import DynamoRateCounters

    return DynamoRateCounters(get_table())


def get_mcp_stores() -> tuple[ConnectionStore, HitStore]:
    """The remote MCP endpoint's connections (their log kept ``ACTIVITY_RETENTION_DAYS``) and its search
    hits: thin stores over the cached table, built per request like ``get_kb_capacity``."""
    from memmy_kb.adapters.dynamodb.connections import DynamoConnectionStore
    from memmy_kb.adapters.dynamodb.mcp_hits import DynamoHitStore

    retention = get_settings().activity_retention_days
    return DynamoConnectionStore(get_table(), retention_days=retention), DynamoHitStore(get_table())


def get_kb_capacity() -> KbCapacity:
    """The capacity of one KB (files and bytes), from the settings."""
    from memmy_kb.records import KbCapacity

    settings = get_settings()
    return KbCapacity(max_files=settings.max_files_per_kb, max_bytes=settings.max_bytes_per_kb)


@cache
def get_cleanup_store() -> CleanupStore:
    from memmy_kb.adapters.dynamodb.cleanups import DynamoCleanupStore

    return DynamoCleanupStore(get_table())


@cache
def get_create_intents() -> CreateIntents:
    from memmy_kb.adapters.dynamodb.intents import DynamoCreateIntents

    return DynamoCreateIntents(get_table())


@cache
def get_backend_slots() -> BackendSlots:
    from memmy_kb.adapters.dynamodb.slots import DynamoBackendSlots

    return DynamoBackendSlots(get_table())


@cache
def get_fingerprint_store() -> FingerprintStore:
    from memmy_kb.adapters.dynamodb.fingerprints import DynamoFingerprintStore

    return DynamoFingerprintStore(get_table())


@cache
def get_cleanup_executions() -> CleanupExecutions:
    from memmy_kb.adapters.stepfunctions import CleanupStateMachine

    return CleanupStateMachine(get_settings().cleanup_state_machine_arn, _aws_client("stepfunctions"))


@cache
def get_upload_requeue() -> UploadRequeue:
    from memmy_kb.adapters.sqs import UploadQueue

    settings = get_settings()
    return UploadQueue(settings.upload_queue_url, settings.upload_bucket, _aws_client("sqs"))


@cache
def memos_api_key() -> SecretBackendsProvider:
    """The MemOS backends and their keys, cached by Powertools Parameters; shared by both MemOS pools."""
    from memmy_kb.adapters.memos.key import SecretBackendsProvider

    settings = get_settings()
    return SecretBackendsProvider(
        settings.memos_api_key_secret,
        default_base_url=settings.memos_base_url,
        default_max_kbs=settings.memos_max_kbs,
        client_factory=lambda: _aws_client("secretsmanager"),
    )


@cache
def memos_tls_context() -> Any:
    """The TLS context of every MemOS client, its CA bundle loaded once (about 20 ms) before a SnapStart
    snapshot (``memmy_kb.api.priming``); it holds no connection and no key."""
    import httpx

    return httpx.create_ssl_context()


@cache
def get_rate_governor() -> RateGovernor:
    """This environment's MemOS rate governor, on the fleet's budget unless ``RECALL_FLEET_BUDGET=off``."""
    from memmy_kb.domain.recall.rate_governor import RateGovernor

    if not get_settings().recall_fleet_budget:
        return RateGovernor()
    from memmy_kb.adapters.dynamodb.fleet_budget import DynamoFleetItems
    from memmy_kb.domain.recall.fleet_budget import FleetBudget

    return RateGovernor(fleet=FleetBudget(DynamoFleetItems(get_table())))


@cache
def get_recall_limiter() -> RecallLimiter:
    """This environment's per-user recall buckets (``memmy_kb.domain.recall.user_limit``), from the settings."""
    from memmy_kb.domain.recall.user_limit import RecallLimiter, RecallLimits

    return RecallLimiter(RecallLimits.from_settings(get_settings()))


@cache
def get_recall_files() -> RecallFiles:
    """What recall reads to name an excerpt's file: fingerprints, folders and files."""
    from memmy_kb.adapters.dynamodb.recall_files import DynamoRecallFiles

    return DynamoRecallFiles(get_table())


@cache
def get_prints_cache() -> PrintsCache:
    """This environment's cache of the KBs' fingerprints (``memmy_kb.domain.recall.prints_cache``)."""
    from memmy_kb.domain.recall.prints_cache import PrintsCache
    return PrintsCache()


@cache
def get_memos_client() -> KnowledgeEngines:
    """The MemOS backends, a client each (built on first use with that backend's URL and key)."""
    import httpx

    from memmy_kb.adapters.memos.backends import MemosBackends
    from memmy_kb.adapters.memos.client import MemosClient

    settings = get_settings()
    read = settings.memos_timeout_seconds
    return MemosBackends(
        memos_api_key().backends,
        lambda base_url, api_key: MemosClient(
            base_url,
            api_key,
            timeout=httpx.Timeout(connect=2.0, read=read, write=read, pool=2.0),
            verify=memos_tls_context(),
        ),
    )


@cache
def get_recall_memos_client() -> KnowledgeEngines:
    """The MemOS client of the recall path: one attempt, bounded by the recall budget.

    An agent turn waits on this call, and a late answer is worth nothing, so there is no retry (a retry
    could only run past the budget); the read timeout is the budget, connecting gets at most a second.
    Recall runs up to ``recall_max_searches`` searches at once through this one client: its connection
    pool keeps that many connections alive, so no search waits for another's, and allows as many again,
    so that a search still running past the budget (nothing waits for it) cannot starve the next recall.
    """
    from memmy_kb.adapters.memos.recall_pool import recall_engines

    settings = get_settings()
    return recall_engines(
        memos_api_key().backends,
        budget=settings.recall_memos_timeout_seconds,
        max_searches=settings.recall_max_searches,
        verify=memos_tls_context(),
    )


@cache
def get_mcp_auth() -> McpAuthPorts:
    """The MCP authorization server's store, signer, metadata fetcher and login provider, built without
    I/O (``memmy_kb.adapters.mcp_auth``); the mcp function uses the signer's public keys only."""
    from memmy_kb.adapters.mcp_auth import mcp_auth_ports

    return mcp_auth_ports(get_settings(), get_table(), aws_session())


@cache
def s3_client() -> Any:
    """S3 with SigV4: presigned POSTs and GETs must be SigV4 (botocore may otherwise sign SigV2)."""
    from botocore.config import Config

    config = Config(
        signature_version="s3v4",
        connect_timeout=2,
        read_timeout=10,
        retries={"mode": "standard", "max_attempts": 3},
    )
    return aws_session().client("s3", config=config)


@cache
def get_upload_storage() -> UploadObjects:
    from memmy_kb.adapters.s3 import UploadStorage

    return UploadStorage(get_settings().upload_bucket, s3_client())


@cache
def get_idempotency_persistence(operation: str) -> DynamoDBPersistenceLayer:
    """Powertools idempotency records of ``operation`` in the main table (``memmy_kb.api.idempotency``)."""
    from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer

    return DynamoDBPersistenceLayer(
        table_name=get_settings().table_name,
        key_attr="PK",
        sort_key_attr="SK",
        static_pk_value=f"IDEMPOTENCY#{operation}",
        expiry_attr="expires_at",
        boto3_client=dynamodb_client(),
    )


# Everything this module caches, the settings included; tests/unit/composition/test_composition.py fails when a cached
# factory is missing here.
_CACHED_FACTORIES = (
    get_settings,
    aws_session,
    dynamodb_client,
    get_table,
    get_kb_store,
    get_content_store,
    get_profile_store,
    get_team_store,
    get_activity_log,
    get_rate_counters,
    get_cleanup_store,
    get_create_intents,
    get_backend_slots,
    get_fingerprint_store,
    get_cleanup_executions,
    get_upload_requeue,
    memos_api_key,
    memos_tls_context,
    get_rate_governor,
    get_recall_limiter,
    get_recall_files,
    get_prints_cache,
    get_memos_client,
    get_recall_memos_client,
    get_mcp_auth,
    s3_client,
    get_upload_storage,
    get_idempotency_persistence,
)
# What a SnapStart snapshot may keep (memmy_kb.api.snapstart): the configuration, the boto3 session with
# botocore's loaded models and endpoint data (it resolves no credentials until a client needs them), and
# the MemOS TLS context. Everything else cached here holds connections, credentials, keys or a history.
_SHAREABLE_FACTORIES = (get_settings, aws_session, memos_tls_context)


def forget_environment_state() -> None:
    """Forget the clients (their connection pools and credentials), the MemOS keys and every cached secret
    value, the rate governor's history and the recall buckets; keep what ``_SHAREABLE_FACTORIES`` built. After a SnapStart
    restore: whatever was cached before the snapshot is of unknown age, and must not be shared."""
    for factory in _CACHED_FACTORIES:
        if factory not in _SHAREABLE_FACTORIES:
            factory.cache_clear()
    parameters = sys.modules.get("aws_lambda_powertools.utilities.parameters")
    if parameters is not None:
        parameters.clear_caches()


def reset_composition() -> None:
    """Forget every client and adapter built so far, and the settings, as a new Lambda container would.

    The MemOS key's cache in Powertools Parameters goes too, when Parameters is loaded at all.
    """
    for factory in _CACHED_FACTORIES:
        factory.cache_clear()
    parameters = sys.modules.get("aws_lambda_powertools.utilities.parameters")
    if parameters is not None:
        parameters.clear_caches()
