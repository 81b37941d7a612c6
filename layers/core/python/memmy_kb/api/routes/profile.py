"""The caller's own directory profile."""

from __future__ import annotations

from http import HTTPStatus

from memmy_kb.api.dependencies import get_profile_store
from memmy_kb.api.identity import verified_claims
from memmy_kb.api.models import Me
from memmy_kb.api.resolver import new_router, responses
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
