"""A knowledge base's activity log (owner only), newest first."""

from __future__ import annotations

from http import HTTPStatus
from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query

from memmy_kb.api.dependencies import get_activity_log, get_kb_store
from memmy_kb.api.identity import caller_id
from memmy_kb.api.models.activity import ActivityList
from memmy_kb.api.resolver import NOT_VISIBLE, READER, KbId, new_router, responses
from memmy_kb.domain import activity
from memmy_kb.records import utc_now

router = new_router()


@router.get(
    "/knowledge-bases/<kb_id>/activity",
    operation_id="list_activity_knowledge_bases__kb_id__activity_get",
    summary="A knowledge base's activity: shares, revokes, leaves, renames, uploads, deletions (owner only)",
    responses=responses(HTTPStatus.OK, "A page of entries, newest first", ActivityList, READER, NOT_VISIBLE),
)
def handle_list_activity(
    kb_id: KbId,
    limit: Annotated[int, Query(ge=1, le=activity.MAX_PAGE)] = 50,
    cursor: Annotated[str | None, Query(max_length=512)] = None,
) -> ActivityList:
    caller = caller_id(router.current_event.raw_event)
    page = activity.list_activity(
        get_kb_store(), get_activity_log(), caller, kb_id, limit=limit, cursor=cursor, now=utc_now()
    )
    return ActivityList.from_page(page)
