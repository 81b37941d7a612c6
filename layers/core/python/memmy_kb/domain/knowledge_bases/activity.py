"""A KB's activity log: who shared, revoked, left, blocked, renamed, uploaded or deleted what, and when.

Owner only (a reader gets 403, anyone else the 404 of a missing KB). Entries ride in the transaction of
the action where that is free (share, revoke, leave, block, file and folder deletions, an upload's record
transaction in the ingest), otherwise (renames) they are written right after it;
they are kept ``retention_days`` (DynamoDB TTL; reads skip expired entries, since TTL deletes late).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime, timedelta

from aws_lambda_powertools import Logger

from memmy_kb.domain.access import require_owner
from memmy_kb.domain.ports.activity import ActivityLog
from memmy_kb.domain.ports.knowledge_bases import GrantReader
from memmy_kb.records import ActivityKind, ActivityRecord

logger = Logger(child=True)

MAX_PAGE = 100


@dataclass(frozen=True)
class ActivityPage:
    items: list[ActivityRecord]
    next_cursor: str | None


def new_activity(
    kind: ActivityKind, kb_id: str, actor_id: str, subject: str, now: datetime, retention_days: int
) -> ActivityRecord:
    return ActivityRecord(
        kb_id=kb_id,
        activity_id="ac_" + os.urandom(6).hex(),  # as ``secrets.token_hex``, without its imports
        kind=kind,
        actor_id=actor_id,
        subject=subject,
        at=now,
        expires_at=int((now + timedelta(days=retention_days)).timestamp()),
    )


def record(log: ActivityLog, entry: ActivityRecord) -> None:
    """Write an entry after its action: a failure is logged, never turned into a failure of the action."""
    try:
        log.put_activity(entry)
    except Exception:
        logger.exception("activity entry not written", extra={"kind": entry.kind})


def list_activity(
    grants: GrantReader,
    log: ActivityLog,
    caller_id: str,
    kb_id: str,
    *,
    limit: int,
    cursor: str | None,
    now: datetime,
) -> ActivityPage:
    """A page of the KB's activity, newest first (owner only)."""
    require_owner(grants, caller_id, kb_id)
    items, next_cursor = log.query_activity(
        kb_id, limit=max(1, min(limit, MAX_PAGE)), cursor=cursor, now=int(now.timestamp())
    )
    return ActivityPage(items=items, next_cursor=next_cursor)
