"""Members of a knowledge base: list, share by user id / phone / email, revoke and leave. Never calls MemOS."""

from __future__ import annotations

from http import HTTPStatus
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body
from aws_lambda_powertools.logging import correlation_paths

from memmy_kb import sharing
from memmy_kb.dependencies import get_repository
from memmy_kb.http import NOT_VISIBLE, READER, KbId, UserId, build_resolver, json_response, responses
from memmy_kb.identity import caller_id
from memmy_kb.models import Member, MemberList, ShareRequest
from memmy_kb.observability import logger, tracer

app = build_resolver()


@app.get(
    "/knowledge-bases/<kb_id>/members",
    summary="List a knowledge base's members (owner only)",
    responses=responses(HTTPStatus.OK, "The owner and the readers", MemberList, READER, NOT_VISIBLE),
)
def list_members(kb_id: KbId) -> MemberList:
    return sharing.list_members(get_repository(), caller_id(app.current_event.raw_event), kb_id)


@app.post(
    "/knowledge-bases/<kb_id>/members",
    summary="Share a knowledge base read-only by user id, phone or email (owner only)",
    responses=responses(
        HTTPStatus.CREATED,
        "The new reader",
        Member,
        READER,
        (HTTPStatus.NOT_FOUND, "No such knowledge base, or no account with this identifier"),
        (HTTPStatus.CONFLICT, "Already a member, or the member limit is reached"),
    ),
)
def share_knowledge_base(kb_id: KbId, request: Annotated[ShareRequest, Body()]):
    caller = caller_id(app.current_event.raw_event)
    member = sharing.share_knowledge_base(get_repository(), caller, kb_id, request.identifier)
    return json_response(HTTPStatus.CREATED, member)


@app.delete(
    "/knowledge-bases/<kb_id>/members/<user_id>",
    summary="Revoke a reader (owner) or leave a shared knowledge base (the reader)",
    responses=responses(
        HTTPStatus.NO_CONTENT,
        "Removed",
        None,
        (HTTPStatus.FORBIDDEN, "A reader may only remove themself"),
        (HTTPStatus.NOT_FOUND, "No such knowledge base or member"),
    ),
)
def remove_member(kb_id: KbId, user_id: UserId):
    sharing.remove_member(get_repository(), caller_id(app.current_event.raw_event), kb_id, user_id)
    return Response(status_code=HTTPStatus.NO_CONTENT)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@tracer.capture_lambda_handler
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return app.resolve(event, context)
