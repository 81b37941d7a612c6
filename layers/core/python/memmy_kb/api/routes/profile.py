"""The caller's own directory profile and settings."""

from __future__ import annotations

from http import HTTPStatus
from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body

from memmy_kb.api.injected import CallerClaims, CallerId, ProfileStoreDep
from memmy_kb.api.models.profile import Me, UpdateMeRequest
from memmy_kb.api.resolver import NO_PROFILE, new_router, responses
from memmy_kb.domain.sharing import profiles

router = new_router()


@router.put(
    "/me",
    operation_id="registerProfile",
    summary="Register the caller's profile from verified token claims",
    responses=responses(
        HTTPStatus.OK, "The caller's profile", Me, (HTTPStatus.CONFLICT, "The profile changed concurrently")
    ),
)
def handle_put_me(claims: CallerClaims, profile_store: ProfileStoreDep) -> Me:
    profile = profiles.register_profile(profile_store, claims)
    return Me.from_record(profile)


@router.get(
    "/me",
    operation_id="getProfile",
    summary="Read the caller's profile and settings",
    responses=responses(HTTPStatus.OK, "The caller's profile", Me, NO_PROFILE),
)
def handle_get_me(caller: CallerId, profile_store: ProfileStoreDep) -> Me:
    return Me.from_record(profiles.get_me(profile_store, caller))


@router.patch(
    "/me",
    operation_id="updateProfile",
    summary="Change the caller's settings (recall of new shares)",
    responses=responses(HTTPStatus.OK, "The caller's profile", Me, NO_PROFILE),
)
def handle_update_me(
    request: Annotated[UpdateMeRequest, Body()], caller: CallerId, profile_store: ProfileStoreDep
) -> Me:
    profile = profiles.update_settings(profile_store, caller, recall_new_shares=request.recall_new_shares)
    return Me.from_record(profile)
