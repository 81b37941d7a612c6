"""The accounts the caller blocks: their shares answer as for no account, and the caller leaves their KBs."""

from __future__ import annotations

from http import HTTPStatus
from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body

from memmy_kb.api.injected import CallerId, KbStoreDep, ProfileStoreDep, SharePolicyDep
from memmy_kb.api.models.blocks import BlockedList, BlockRequest
from memmy_kb.api.resolver import NO_PROFILE, UserId, new_router, responses
from memmy_kb.domain.sharing import profiles

router = new_router()


@router.get(
    "/me/blocked",
    operation_id="listBlocked",
    summary="List the accounts the caller blocks",
    responses=responses(HTTPStatus.OK, "The blocked accounts", BlockedList, NO_PROFILE),
)
def handle_list_blocked(caller: CallerId, profile_store: ProfileStoreDep) -> BlockedList:
    return BlockedList.from_pairs(profiles.list_blocked(profile_store, caller))


@router.post(
    "/me/blocked",
    operation_id="blockAccount",
    summary="Block an account: its shares are refused and the caller leaves its knowledge bases",
    responses=responses(
        HTTPStatus.NO_CONTENT,
        "Blocked (also when no such account exists)",
        None,
        NO_PROFILE,
        (HTTPStatus.CONFLICT, "The block list is full"),
        (HTTPStatus.TOO_MANY_REQUESTS, "Too many blocks (found or not); see Retry-After"),
    ),
)
def handle_block(  # type: ignore[no-untyped-def]
    request: Annotated[BlockRequest, Body()],
    caller: CallerId,
    kbs: KbStoreDep,
    profile_store: ProfileStoreDep,
    policy: SharePolicyDep,
):
    profiles.block(kbs, profile_store, caller, request.user_id, policy=policy)
    return Response(status_code=HTTPStatus.NO_CONTENT)


@router.delete(
    "/me/blocked/<user_id>",
    operation_id="unblockAccount",
    summary="Lift a block",
    responses=responses(HTTPStatus.NO_CONTENT, "Not blocked (any more)", None, NO_PROFILE),
)
def handle_unblock(user_id: UserId, caller: CallerId, profile_store: ProfileStoreDep):  # type: ignore[no-untyped-def]
    profiles.unblock(profile_store, caller, user_id)
    return Response(status_code=HTTPStatus.NO_CONTENT)
