"""Knowledge bases: create, list, read, rename, and the caller's own recall switch."""

from __future__ import annotations

from http import HTTPStatus
from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Header
from aws_lambda_powertools.metrics import MetricUnit

from memmy_kb.api.dependencies import (
    get_activity_log,
    get_create_intents,
    get_kb_store,
    get_memos_client,
    get_profile_store,
)
from memmy_kb.api.idempotency import request_record
from memmy_kb.api.identity import caller_id, verified_claims
from memmy_kb.api.models.knowledge_bases import (
    CreateKnowledgeBaseRequest,
    KnowledgeBase,
    KnowledgeBaseList,
    RecallSettingRequest,
    RenameKnowledgeBaseRequest,
)
from memmy_kb.api.resolver import NOT_VISIBLE, READER, KbId, json_response, new_router, responses
from memmy_kb.domain import knowledge_bases
from memmy_kb.errors import DomainError
from memmy_kb.observability import metrics
from memmy_kb.settings import get_settings

creation = new_router()
router = new_router()


@creation.post(
    "/knowledge-bases",
    operation_id="create_knowledge_base_knowledge_bases_post",
    summary="Create a knowledge base",
    responses=responses(
        HTTPStatus.CREATED,
        "The new knowledge base",
        KnowledgeBase,
        (HTTPStatus.CONFLICT, "A request with this Idempotency-Key is in progress, or the caller owns the most KBs allowed"),
        (HTTPStatus.SERVICE_UNAVAILABLE, "MemOS is unavailable, or its plan holds no more KBs"),
    ),
)
def handle_create_knowledge_base(
    request: Annotated[CreateKnowledgeBaseRequest, Body()],
    idempotency_key: Annotated[str | None, Header(alias="Idempotency-Key")] = None,
) -> Response[str]:
    owner = verified_claims(creation.current_event.raw_event)
    # The key's record rides in the create's own two transactions (docs/architecture.md, "Create").
    remembered = request_record(
        "create_kb",
        key=idempotency_key,
        user_id=owner.user_id,
        payload=request.model_dump(),
        lambda_context=creation.lambda_context,
    )
    try:
        view = knowledge_bases.create_knowledge_base(
            get_kb_store(),
            get_profile_store(),
            get_memos_client(),
            owner=owner,
            name=request.name,
            intents=get_create_intents(),
            max_owned=get_settings().max_kbs_per_user,
            request=remembered,
        )
    except DomainError as refused:
        if refused.code == "memos_quota_exhausted":
            # The MemOS plan is full for the whole service: alarmed, an operator must act (README).
            metrics.add_metric(name="MemosQuotaExhausted", unit=MetricUnit.Count, value=1)
        raise
    if not view.replayed:
        metrics.add_metric(name="KnowledgeBaseCreated", unit=MetricUnit.Count, value=1)
    return json_response(HTTPStatus.CREATED, KnowledgeBase.from_view(view))


@router.get(
    "/knowledge-bases",
    operation_id="list_knowledge_bases_knowledge_bases_get",
    summary="List the caller's owned and shared knowledge bases",
    responses=responses(HTTPStatus.OK, "Owned and shared knowledge bases", KnowledgeBaseList),
)
def handle_list_knowledge_bases() -> KnowledgeBaseList:
    caller = caller_id(router.current_event.raw_event)
    views = knowledge_bases.list_knowledge_bases(get_kb_store(), get_profile_store(), caller)
    return KnowledgeBaseList.from_views(views)


@router.get(
    "/knowledge-bases/<kb_id>",
    operation_id="get_knowledge_base_knowledge_bases__kb_id__get",
    summary="Read one knowledge base",
    responses=responses(HTTPStatus.OK, "The knowledge base as the caller sees it", KnowledgeBase, NOT_VISIBLE),
)
def handle_get_knowledge_base(kb_id: KbId) -> KnowledgeBase:
    caller = caller_id(router.current_event.raw_event)
    return KnowledgeBase.from_view(
        knowledge_bases.get_knowledge_base(get_kb_store(), get_profile_store(), caller, kb_id)
    )


@router.patch(
    "/knowledge-bases/<kb_id>",
    operation_id="rename_knowledge_base_knowledge_bases__kb_id__patch",
    summary="Rename a knowledge base (owner only)",
    responses=responses(HTTPStatus.OK, "The renamed knowledge base", KnowledgeBase, READER, NOT_VISIBLE),
)
def handle_rename_knowledge_base(
    kb_id: KbId, request: Annotated[RenameKnowledgeBaseRequest, Body()]
) -> KnowledgeBase:
    caller = caller_id(router.current_event.raw_event)
    view = knowledge_bases.rename_knowledge_base(
        get_kb_store(),
        get_profile_store(),
        caller,
        kb_id,
        request.name,
        log=get_activity_log(),
        retention_days=get_settings().activity_retention_days,
    )
    return KnowledgeBase.from_view(view)


@router.put(
    "/knowledge-bases/<kb_id>/recall",
    operation_id="set_recall_knowledge_bases__kb_id__recall_put",
    summary="Turn the caller's own recall of a knowledge base on or off",
    responses=responses(
        HTTPStatus.OK, "The knowledge base with the caller's new setting", KnowledgeBase, NOT_VISIBLE
    ),
)
def handle_set_recall(kb_id: KbId, request: Annotated[RecallSettingRequest, Body()]) -> KnowledgeBase:
    caller = caller_id(router.current_event.raw_event)
    view = knowledge_bases.set_recall(get_kb_store(), get_profile_store(), caller, kb_id, request.enabled)
    return KnowledgeBase.from_view(view)
