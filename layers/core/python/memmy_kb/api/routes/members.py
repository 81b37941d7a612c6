"""Members of a knowledge base: list, share by user id / phone / email, revoke and leave. Never MemOS."""

from __future__ import annotations

from http import HTTPStatus
from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body

from memmy_kb.api.injected import CallerId, KbStoreDep, ProfileStoreDep, SettingsDep, SharePolicyDep
from memmy_kb.api.models.members import Member, MemberList, ShareRequest
from memmy_kb.api.resolver import NOT_VISIBLE, READER, KbId, UserId, json_response, new_router, responses
from memmy_kb.domain.sharing import shares

router = new_router()


@router.get(
    "/knowledge-bases/<kb_id>/members",
    operation_id="listMembers",
    summary="List a knowledge base's members (owner only)",
    responses=responses(HTTPStatus.OK, "The owner and the readers", MemberList, READER, NOT_VISIBLE),
)
def handle_list_members(
    kb_id: KbId, caller: CallerId, kbs: KbStoreDep, profile_store: ProfileStoreDep
) -> MemberList:
    return MemberList.from_views(shares.list_members(kbs, profile_store, caller, kb_id))


@router.post(
    "/knowledge-bases/<kb_id>/members",
    operation_id="shareKnowledgeBase",
    summary="Share a knowledge base read-only by user id, phone or email (owner only)",
    responses=responses(
        HTTPStatus.CREATED,
        "The new reader",
        Member,
        READER,
        (HTTPStatus.NOT_FOUND, "No such knowledge base, or no account with this identifier"),
        (
            HTTPStatus.CONFLICT,
            "Already a member (`already_member`), the member limit is reached (`member_limit_reached`), or the"
            " phone or email is verified by more than one account (`identifier_ambiguous`: share by user id)",
        ),
        (HTTPStatus.TOO_MANY_REQUESTS, "Too many share attempts or new members; see Retry-After"),
    ),
)
def handle_share_knowledge_base(
    kb_id: KbId,
    request: Annotated[ShareRequest, Body()],
    caller: CallerId,
    kbs: KbStoreDep,
    profile_store: ProfileStoreDep,
    policy: SharePolicyDep,
) -> Response[str]:
    member = shares.share_knowledge_base(kbs, profile_store, caller, kb_id, request.identifier, policy=policy)
    return json_response(HTTPStatus.CREATED, Member.from_view(member))


@router.delete(
    "/knowledge-bases/<kb_id>/members/<user_id>",
    operation_id="removeMember",
    summary="Revoke a reader (owner) or leave a shared knowledge base (the reader)",
    responses=responses(
        HTTPStatus.NO_CONTENT,
        "Removed",
        None,
        (HTTPStatus.FORBIDDEN, "A reader may only remove themself"),
        (HTTPStatus.NOT_FOUND, "No such knowledge base or member"),
    ),
)
# No return annotation: Powertools would document it as a body schema of the 204, which has no body.
def handle_remove_member(  # type: ignore[no-untyped-def]
    kb_id: KbId, user_id: UserId, caller: CallerId, kbs: KbStoreDep, settings: SettingsDep
):
    shares.remove_member(kbs, caller, kb_id, user_id, retention_days=settings.activity_retention_days)
    return Response(status_code=HTTPStatus.NO_CONTENT)
