"""What routes receive through Powertools ``Depends``: the caller's verified id and the ports they use.

A route declares ``caller: CallerId, kbs: KbStoreDep`` and Powertools calls each provider before the
route runs: the caller from the request's verified claims (``memmy_kb.api.identity``), every port from
the composition root's cached factory (``memmy_kb.composition``), so a container builds each client once.
A test swaps one on the resolver that includes the route's router:
``app.dependency_overrides[composition.get_kb_store] = lambda: fake``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from aws_lambda_powertools.event_handler.depends import Depends

from memmy_kb import composition
from memmy_kb.api.identity import current_caller_id, current_claims
from memmy_kb.domain.directory import VerifiedClaims
from memmy_kb.settings import Settings, get_settings

if TYPE_CHECKING:
    from memmy_kb.domain.ports.activity import ActivityLog, RateCounters
    from memmy_kb.domain.ports.cleanups import CleanupExecutions, CleanupStore
    from memmy_kb.domain.ports.connections import ConnectionStore
    from memmy_kb.domain.ports.contents import ContentStore
    from memmy_kb.domain.ports.engines import BackendSlots, KnowledgeEngines
    from memmy_kb.domain.ports.knowledge_bases import CreateIntents, KnowledgeBaseStore
    from memmy_kb.domain.ports.profiles import ProfileStore
    from memmy_kb.domain.ports.teams import TeamStore
    from memmy_kb.domain.ports.uploads import UploadObjects
    from memmy_kb.domain.recall.config import RecallConfig
    from memmy_kb.domain.recall.prints_cache import PrintsCache, RecallFiles
    from memmy_kb.domain.recall.rate_governor import RateGovernor
    from memmy_kb.domain.recall.user_limit import RecallLimiter
    from memmy_kb.domain.sharing.shares import SharePolicy
    from memmy_kb.domain.teams.limits import TeamPolicy
    from memmy_kb.records import KbCapacity
else:
    # Powertools reads only the Depends() of these parameters, never their type: it neither validates nor
    # documents them. The types are the checker's; at run time naming them would load the ports, the
    # sharing rules and the records into every API handler, recall included (test_handler_imports.py).
    ActivityLog = CleanupExecutions = CleanupStore = ContentStore = CreateIntents = KnowledgeBaseStore = Any
    KnowledgeEngines = ProfileStore = UploadObjects = SharePolicy = KbCapacity = BackendSlots = Any
    RateGovernor = RecallConfig = PrintsCache = RecallFiles = RateCounters = RecallLimiter = Any
    TeamStore = TeamPolicy = ConnectionStore = Any

CallerId = Annotated[str, Depends(current_caller_id)]
CallerClaims = Annotated[VerifiedClaims, Depends(current_claims)]
SettingsDep = Annotated[Settings, Depends(get_settings)]

KbStoreDep = Annotated[KnowledgeBaseStore, Depends(composition.get_kb_store)]
ContentStoreDep = Annotated[ContentStore, Depends(composition.get_content_store)]
ProfileStoreDep = Annotated[ProfileStore, Depends(composition.get_profile_store)]
TeamStoreDep = Annotated[TeamStore, Depends(composition.get_team_store)]
ActivityLogDep = Annotated[ActivityLog, Depends(composition.get_activity_log)]
CleanupStoreDep = Annotated[CleanupStore, Depends(composition.get_cleanup_store)]
CreateIntentsDep = Annotated[CreateIntents, Depends(composition.get_create_intents)]
BackendSlotsDep = Annotated[BackendSlots, Depends(composition.get_backend_slots)]
CleanupExecutionsDep = Annotated[CleanupExecutions, Depends(composition.get_cleanup_executions)]
UploadStorageDep = Annotated[UploadObjects, Depends(composition.get_upload_storage)]
# MemOS, a client per backend: the management clients (retries, the longer timeout) and recall's (one
# attempt within its budget).
MemosDep = Annotated[KnowledgeEngines, Depends(composition.get_memos_client)]
RecallMemosDep = Annotated[KnowledgeEngines, Depends(composition.get_recall_memos_client)]
# Recall naming excerpts' files: the reads, and the environment's cache of the KBs' fingerprints.
RecallFilesDep = Annotated[RecallFiles, Depends(composition.get_recall_files)]
PrintsCacheDep = Annotated[PrintsCache, Depends(composition.get_prints_cache)]
# The per-user recall limit: this environment's buckets, and the windowed counters they are shared in.
RecallLimiterDep = Annotated[RecallLimiter, Depends(composition.get_recall_limiter)]
RateCountersDep = Annotated[RateCounters, Depends(composition.get_rate_counters)]
# Built from the settings on each request (they are cheap): a test overrides them whole.
KbCapacityDep = Annotated[KbCapacity, Depends(composition.get_kb_capacity)]


def connection_store() -> ConnectionStore:
    """The caller's connections to the remote MCP endpoint (``composition.get_mcp_stores``)."""
    return composition.get_mcp_stores()[0]


ConnectionStoreDep = Annotated[ConnectionStore, Depends(connection_store)]


def recall_governor(settings: SettingsDep) -> RateGovernor | None:
    """This environment's MemOS rate governor, or None when the settings turn it off
    (``RECALL_RATE_GOVERNOR=off``)."""
    return composition.get_rate_governor() if settings.recall_rate_governor else None


RateGovernorDep = Annotated[RateGovernor | None, Depends(recall_governor)]


def recall_config(settings: SettingsDep) -> RecallConfig:
    """How this environment recalls, built from its settings (``RECALL_*``) once per request."""
    from memmy_kb.domain.recall.config import RecallConfig

    return RecallConfig.from_settings(settings)


RecallConfigDep = Annotated[RecallConfig, Depends(recall_config)]


def share_policy(settings: SettingsDep) -> SharePolicy:
    """The share's abuse limits (``SHARE_*``, ``NEW_MEMBERS_PER_DAY``) and activity log, from the settings."""
    from memmy_kb.domain.sharing.limits import ShareLimits
    from memmy_kb.domain.sharing.shares import SharePolicy

    limits = ShareLimits(
        attempts=settings.share_attempt_limit,
        window_seconds=settings.share_attempt_window_seconds,
        members_per_day=settings.new_members_per_day,
    )
    return SharePolicy(composition.get_rate_counters(), limits, settings.activity_retention_days)


SharePolicyDep = Annotated[SharePolicy, Depends(share_policy)]


def team_policy(settings: SettingsDep) -> TeamPolicy:
    """The teams' limits (``TEAM_*``), the counters of the hourly one and the activity's retention."""
    from memmy_kb.domain.teams.limits import TeamLimits, TeamPolicy

    limits = TeamLimits(
        max_members=settings.team_max_members,
        max_per_user=settings.team_max_per_user,
        invites_per_hour=settings.team_invites_per_hour,
    )
    return TeamPolicy(composition.get_rate_counters(), limits, settings.activity_retention_days)


TeamPolicyDep = Annotated[TeamPolicy, Depends(team_policy)]
