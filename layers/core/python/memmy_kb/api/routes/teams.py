"""Teams: create, list, read, rename, delete; invite, accept, decline; remove, leave, roles and
ownership (a team's activity log: ``memmy_kb.api.routes.activity``). Never calls MemOS (docs/teams.md)."""

from __future__ import annotations

from http import HTTPStatus
from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body

from memmy_kb.api.injected import (
    CallerId,
    CleanupExecutionsDep,
    KbStoreDep,
    ProfileStoreDep,
    SharePolicyDep,
    TeamPolicyDep,
    TeamStoreDep,
)
from memmy_kb.api.models.teams import (
    CreateTeamRequest,
    DeclineRequest,
    InviteRequest,
    RenameTeamRequest,
    Team,
    TeamDetail,
    TeamList,
    TeamMember,
    TeamRoleRequest,
)
from memmy_kb.api.resolver import NO_TEAM, TeamId, UserId, json_response, new_router, responses
from memmy_kb.domain.teams import invitations, members, teams

router = new_router()

ADMIN = (HTTPStatus.FORBIDDEN, "Only the owner or an admin may do this (`team_admin_only`)")
OWNER = (HTTPStatus.FORBIDDEN, "Only the owner may do this (`team_owner_only`)")


@router.post(
    "/teams",
    operation_id="createTeam",
    summary="Create a team, the caller its owner",
    responses=responses(
        HTTPStatus.CREATED, "The team", Team, (HTTPStatus.CONFLICT, "The caller's teams are at the limit (`team_limit_reached`)")
    ),
)
def handle_create_team(
    request: Annotated[CreateTeamRequest, Body()],
    caller: CallerId,
    team_store: TeamStoreDep,
    profile_store: ProfileStoreDep,
    policy: TeamPolicyDep,
) -> Response[str]:
    view = teams.create_team(team_store, profile_store, caller, request.name, policy=policy)
    return json_response(HTTPStatus.CREATED, Team.from_view(view))


@router.get(
    "/teams",
    operation_id="listTeams",
    summary="The caller's teams and open invitations",
    responses=responses(HTTPStatus.OK, "Teams, each with the caller's state and role", TeamList),
)
def handle_list_teams(caller: CallerId, team_store: TeamStoreDep, profile_store: ProfileStoreDep) -> TeamList:
    return TeamList.from_views(teams.list_teams(team_store, profile_store, caller))


@router.get(
    "/teams/<team_id>",
    operation_id="getTeam",
    summary="A team with its members and knowledge bases (an invited caller: the team alone)",
    responses=responses(HTTPStatus.OK, "The team", TeamDetail, NO_TEAM),
)
def handle_get_team(
    team_id: TeamId, caller: CallerId, team_store: TeamStoreDep, kbs: KbStoreDep, profile_store: ProfileStoreDep
) -> TeamDetail:
    return TeamDetail.from_detail(teams.get_team(team_store, kbs, profile_store, caller, team_id))


@router.patch(
    "/teams/<team_id>",
    operation_id="renameTeam",
    summary="Rename a team (owner or admin)",
    responses=responses(HTTPStatus.OK, "The team", Team, ADMIN, NO_TEAM),
)
def handle_rename_team(
    team_id: TeamId,
    request: Annotated[RenameTeamRequest, Body()],
    caller: CallerId,
    team_store: TeamStoreDep,
    profile_store: ProfileStoreDep,
    policy: TeamPolicyDep,
) -> Team:
    return Team.from_view(teams.rename_team(team_store, profile_store, caller, team_id, request.name, policy=policy))


@router.delete(
    "/teams/<team_id>",
    operation_id="deleteTeam",
    summary="Delete a team (owner only); its memberships are removed in the background",
    responses=responses(HTTPStatus.NO_CONTENT, "Deleted", None, OWNER, NO_TEAM),
)
# No return annotation: Powertools would document it as a body schema of the 204, which has no body.
def handle_delete_team(  # type: ignore[no-untyped-def]
    team_id: TeamId, caller: CallerId, team_store: TeamStoreDep, executions: CleanupExecutionsDep
):
    teams.delete_team(team_store, executions, caller, team_id)
    return Response(status_code=HTTPStatus.NO_CONTENT)


@router.post(
    "/teams/<team_id>/members",
    operation_id="inviteToTeam",
    summary="Invite someone by user id, phone or email (owner or admin)",
    responses=responses(
        HTTPStatus.CREATED,
        "The invitation",
        TeamMember,
        ADMIN,
        (HTTPStatus.NOT_FOUND, "No such team (`team_not_found`), or no account with this identifier (`account_not_found`)"),
        (
            HTTPStatus.CONFLICT,
            "`already_member`, `already_invited`, `team_member_limit_reached`, or the phone or email is verified"
            " by more than one account (`identifier_ambiguous`: invite by user id)",
        ),
        (HTTPStatus.TOO_MANY_REQUESTS, "Too many invitations this hour; see Retry-After"),
    ),
)
def handle_invite(
    team_id: TeamId,
    request: Annotated[InviteRequest, Body()],
    caller: CallerId,
    team_store: TeamStoreDep,
    profile_store: ProfileStoreDep,
    policy: TeamPolicyDep,
) -> Response[str]:
    invitation, name = invitations.invite(team_store, profile_store, caller, team_id, request.identifier, policy=policy)
    member = TeamMember(
        user_id=invitation.user_id,
        display_name=name,
        role=invitation.role,
        state=invitation.state,
        invited_at=invitation.invited_at,
        joined_at=None,
    )
    return json_response(HTTPStatus.CREATED, member)


@router.patch(
    "/teams/<team_id>/members/<user_id>",
    operation_id="setTeamRole",
    summary="Make a member an admin or a member; `owner` transfers ownership (owner only)",
    responses=responses(HTTPStatus.NO_CONTENT, "Changed", None, OWNER, NO_TEAM),
)
def handle_set_role(  # type: ignore[no-untyped-def]
    team_id: TeamId,
    user_id: UserId,
    request: Annotated[TeamRoleRequest, Body()],
    caller: CallerId,
    team_store: TeamStoreDep,
    policy: TeamPolicyDep,
):
    members.set_role(team_store, caller, team_id, user_id, request.role, policy=policy)
    return Response(status_code=HTTPStatus.NO_CONTENT)


@router.delete(
    "/teams/<team_id>/members/<user_id>",
    operation_id="removeTeamMember",
    summary="Remove a member or cancel an invitation (owner, admin), or leave (oneself)",
    responses=responses(
        HTTPStatus.NO_CONTENT,
        "Removed, cancelled or left",
        None,
        ADMIN,
        NO_TEAM,
        (HTTPStatus.UNPROCESSABLE_ENTITY, "The owner cannot leave (`owner_cannot_leave`)"),
    ),
)
def handle_remove_team_member(  # type: ignore[no-untyped-def]
    team_id: TeamId, user_id: UserId, caller: CallerId, team_store: TeamStoreDep, policy: TeamPolicyDep
):
    members.remove_member(team_store, caller, team_id, user_id, policy=policy)
    return Response(status_code=HTTPStatus.NO_CONTENT)


@router.post(
    "/teams/<team_id>/accept",
    operation_id="acceptTeamInvitation",
    summary="Accept an invitation",
    responses=responses(
        HTTPStatus.OK,
        "The membership",
        TeamMember,
        NO_TEAM,
        (HTTPStatus.CONFLICT, "Already a member (`already_member`), or at the teams limit (`team_limit_reached`)"),
    ),
)
def handle_accept(
    team_id: TeamId, caller: CallerId, team_store: TeamStoreDep, profile_store: ProfileStoreDep, policy: TeamPolicyDep
) -> TeamMember:
    joined = invitations.accept(team_store, profile_store, caller, team_id, policy=policy)
    profile = profile_store.get_profile(caller)
    return TeamMember(
        user_id=caller,
        display_name=profile.display_name if profile else caller,
        role=joined.role,
        state=joined.state,
        invited_at=joined.invited_at,
        joined_at=joined.joined_at,
    )


@router.post(
    "/teams/<team_id>/decline",
    operation_id="declineTeamInvitation",
    summary="Decline an invitation, optionally blocking the team or its owner",
    responses=responses(HTTPStatus.NO_CONTENT, "Declined", None, NO_TEAM),
)
def handle_decline(  # type: ignore[no-untyped-def]
    team_id: TeamId,
    caller: CallerId,
    team_store: TeamStoreDep,
    kbs: KbStoreDep,
    profile_store: ProfileStoreDep,
    policy: TeamPolicyDep,
    share_policy: SharePolicyDep,
    request: Annotated[DeclineRequest | None, Body()] = None,  # no body: decline without blocking
):
    block = request.block if request is not None else None
    invitations.decline(team_store, kbs, profile_store, caller, team_id, block=block, policy=policy, share_policy=share_policy)
    return Response(status_code=HTTPStatus.NO_CONTENT)
