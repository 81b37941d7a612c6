"""The caller's own directory profile and settings."""

from __future__ import annotations

from http import HTTPStatus
from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body

from memmy_kb.api.dependencies import get_profile_store
from memmy_kb.api.identity import caller_id, verified_claims
from memmy_kb.api.models.profile import Me, UpdateMeRequest
from memmy_kb.api.resolver import NO_PROFILE, new_router, responses
from memmy_kb.domain import profiles

router = new_router()


@router.put(
    "/me",
    operation_id="put_me_me_put",
    summary="Register the caller's profile from verified token claims",
    responses=responses(
        HTTPStatus.OK, "The caller's profile", Me, (HTTPStatus.CONFLICT, "The profile changed concurrently")
    ),
)
def handle_put_me() -> Me:
    profile = profiles.register_profile(get_profile_store(), verified_claims(router.current_event.raw_event))
    return Me.from_record(profile)


@router.get(
    "/me",
    operation_id="get_me_me_get",
    summary="Read the caller's profile and settings",
    responses=responses(HTTPStatus.OK, "The caller's profile", Me, NO_PROFILE),
)
def handle_get_me() -> Me:
    return Me.from_record(profiles.get_me(get_profile_store(), caller_id(router.current_event.raw_event)))


@router.patch(
    "/me",
    operation_id="update_me_me_patch",
    summary="Change the caller's settings (recall of new shares)",
    responses=responses(HTTPStatus.OK, "The caller's profile", Me, NO_PROFILE),
)
def handle_update_me(request: Annotated[UpdateMeRequest, Body()]) -> Me:
    caller = caller_id(router.current_event.raw_event)
    profile = profiles.update_settings(get_profile_store(), caller, recall_new_shares=request.recall_new_shares)
    return Me.from_record(profile)
