"""A knowledge base shared with teams: share, list and unshare (docs/teams.md). Never MemOS."""

from __future__ import annotations

from http import HTTPStatus
from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Path

from memmy_kb.api.injected import CallerId, KbStoreDep, ProfileStoreDep, SettingsDep
from memmy_kb.api.models.team_shares import ShareWithTeamRequest, TeamShare, TeamShareList
from memmy_kb.api.resolver import NOT_VISIBLE, READER, KbId, json_response, new_router, responses
from memmy_kb.domain.sharing import team_shares

router = new_router()

TeamId = Annotated[str, Path(min_length=1, max_length=64)]
NO_TEAM = (
    HTTPStatus.NOT_FOUND,
    "No such knowledge base, or no such team among the caller's (`team_not_found`), or the knowledge base is not"
    " shared with it (`team_share_not_found`)",
)


@router.get(
    "/knowledge-bases/<kb_id>/teams",
    operation_id="listTeamShares",
    summary="List the teams a knowledge base is shared with (owner only)",
    responses=responses(HTTPStatus.OK, "The teams", TeamShareList, READER, NOT_VISIBLE),
)
def handle_list_team_shares(
    kb_id: KbId, caller: CallerId, kbs: KbStoreDep, profile_store: ProfileStoreDep
) -> TeamShareList:
    return TeamShareList.from_views(team_shares.list_team_shares(kbs, profile_store, caller, kb_id))


@router.post(
    "/knowledge-bases/<kb_id>/teams",
    operation_id="shareWithTeam",
    summary="Share one's knowledge base read-only with a team one is a member of",
    responses=responses(
        HTTPStatus.CREATED,
        "Shared: every member reads it from their next query",
        TeamShare,
        READER,
        NO_TEAM,
        (
            HTTPStatus.CONFLICT,
            "Already shared with the team (`already_shared`), the team has its most knowledge bases"
            " (`team_kb_limit_reached`) or the knowledge base its most teams (`kb_team_limit_reached`)",
        ),
    ),
)
def handle_share_with_team(
    kb_id: KbId,
    request: Annotated[ShareWithTeamRequest, Body()],
    caller: CallerId,
    kbs: KbStoreDep,
    profile_store: ProfileStoreDep,
    settings: SettingsDep,
) -> Response[str]:
    limits = team_shares.TeamLimits(max_team_kbs=settings.team_max_kbs, max_kb_teams=settings.kb_max_teams)
    team = team_shares.share_with_team(
        kbs, caller, kb_id, request.team_id, limits=limits, retention_days=settings.activity_retention_days
    )
    shared = team.kbs[kb_id]
    profile = profile_store.get_profile(caller)
    view = team_shares.TeamShareView(
        team.team_id, team.name, caller, profile.display_name if profile else caller, shared.shared_at
    )
    return json_response(HTTPStatus.CREATED, TeamShare.from_view(view))


@router.delete(
    "/knowledge-bases/<kb_id>/teams/<team_id>",
    operation_id="unshareFromTeam",
    summary="Unshare a knowledge base from a team (the knowledge base's owner, or the team's owner or an admin)",
    responses=responses(
        HTTPStatus.NO_CONTENT,
        "Unshared: the team's members stop reading it at their next query",
        None,
        (HTTPStatus.FORBIDDEN, "A member who is not the team's owner or an admin (`team_admin_only`)"),
        NO_TEAM,
    ),
)
# No return annotation: Powertools would document it as a body schema of the 204, which has no body.
def handle_unshare_from_team(  # type: ignore[no-untyped-def]
    kb_id: KbId, team_id: TeamId, caller: CallerId, kbs: KbStoreDep, settings: SettingsDep
):
    team_shares.unshare_from_team(kbs, caller, kb_id, team_id, retention_days=settings.activity_retention_days)
    return Response(status_code=HTTPStatus.NO_CONTENT)
