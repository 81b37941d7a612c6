"""Activity logs, newest first: a knowledge base's (owner only, ``router``: the manage_kb function) and
a team's (its members, ``team_router``: the teams function)."""

from __future__ import annotations

from http import HTTPStatus
from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query

from memmy_kb.api.injected import ActivityLogDep, CallerId, KbStoreDep, TeamStoreDep
from memmy_kb.api.models.activity import ActivityList
from memmy_kb.api.resolver import NO_TEAM, NOT_VISIBLE, READER, KbId, TeamId, new_router, responses
from memmy_kb.domain.knowledge_bases import activity
from memmy_kb.domain.teams.activity import list_team_activity
from memmy_kb.records import utc_now

router = new_router()
team_router = new_router()


@router.get(
    "/knowledge-bases/<kb_id>/activity",
    operation_id="listActivity",
    summary="A knowledge base's activity: shares, revokes, leaves, renames, uploads, deletions (owner only)",
    responses=responses(HTTPStatus.OK, "A page of entries, newest first", ActivityList, READER, NOT_VISIBLE),
)
def handle_list_activity(
    kb_id: KbId,
    caller: CallerId,
    kbs: KbStoreDep,
    log: ActivityLogDep,
    limit: Annotated[int, Query(ge=1, le=activity.MAX_PAGE)] = 50,
    cursor: Annotated[str | None, Query(max_length=512)] = None,
) -> ActivityList:
    page = activity.list_activity(kbs, log, caller, kb_id, limit=limit, cursor=cursor, now=utc_now())
    return ActivityList.from_page(page)


@team_router.get(
    "/teams/<team_id>/activity",
    operation_id="listTeamActivity",
    summary="A team's activity: invitations, joins, declines, removals, leaves, roles, renames (members)",
    responses=responses(HTTPStatus.OK, "A page of entries, newest first", ActivityList, NO_TEAM),
)
def handle_list_team_activity(
    team_id: TeamId,
    caller: CallerId,
    team_store: TeamStoreDep,
    log: ActivityLogDep,
    limit: Annotated[int, Query(ge=1, le=activity.MAX_PAGE)] = 50,
    cursor: Annotated[str | None, Query(max_length=512)] = None,
) -> ActivityList:
    page = list_team_activity(team_store, log, caller, team_id, limit=limit, cursor=cursor, now=utc_now())
    return ActivityList.from_page(page)
