"""Knowledge bases: create, list, read, rename, and the caller's own recall switch."""

from __future__ import annotations

from http import HTTPStatus
from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Header
from aws_lambda_powertools.metrics import MetricUnit

from memmy_kb.api.idempotency import request_record
from memmy_kb.api.injected import (
    ActivityLogDep,
    BackendSlotsDep,
    CallerClaims,
    CallerId,
    CreateIntentsDep,
    KbStoreDep,
    MemosDep,
    ProfileStoreDep,
    SettingsDep,
)
from memmy_kb.api.models.knowledge_bases import (
    CreateKnowledgeBaseRequest,
    KnowledgeBase,
    KnowledgeBaseList,
    RecallSettingRequest,
    RenameKnowledgeBaseRequest,
)
from memmy_kb.api.resolver import NOT_VISIBLE, READER, KbId, json_response, new_router, responses
from memmy_kb.domain.knowledge_bases import manage
from memmy_kb.errors import DomainError
from memmy_kb.observability import metrics

creation = new_router()
router = new_router()


@creation.post(
    "/knowledge-bases",
    operation_id="createKnowledgeBase",
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
    owner: CallerClaims,
    kbs: KbStoreDep,
    profile_store: ProfileStoreDep,
    memos: MemosDep,
    intents: CreateIntentsDep,
    slots: BackendSlotsDep,
    settings: SettingsDep,
    idempotency_key: Annotated[str | None, Header(alias="Idempotency-Key")] = None,
) -> Response[str]:
    # The key's record rides in the create's own two transactions (docs/architecture.md, "Create").
    remembered = request_record(
        "create_kb",
        key=idempotency_key,
        user_id=owner.user_id,
        payload=request.model_dump(),
        lambda_context=creation.lambda_context,
    )
    try:
        view = manage.create_knowledge_base(
            kbs,
            profile_store,
            memos,
            owner=owner,
            name=request.name,
            intents=intents,
            slots=slots,
            max_owned=settings.max_kbs_per_user,
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
    operation_id="listKnowledgeBases",
    summary="List the caller's owned and shared knowledge bases",
    responses=responses(HTTPStatus.OK, "Owned and shared knowledge bases", KnowledgeBaseList),
)
def handle_list_knowledge_bases(caller: CallerId, kbs: KbStoreDep) -> KnowledgeBaseList:
    views = manage.list_knowledge_bases(kbs, caller)
    return KnowledgeBaseList.from_views(views)


@router.get(
    "/knowledge-bases/<kb_id>",
    operation_id="getKnowledgeBase",
    summary="Read one knowledge base",
    responses=responses(HTTPStatus.OK, "The knowledge base as the caller sees it", KnowledgeBase, NOT_VISIBLE),
)
def handle_get_knowledge_base(
    kb_id: KbId, caller: CallerId, kbs: KbStoreDep, profile_store: ProfileStoreDep
) -> KnowledgeBase:
    return KnowledgeBase.from_view(manage.get_knowledge_base(kbs, profile_store, caller, kb_id))


@router.patch(
    "/knowledge-bases/<kb_id>",
    operation_id="renameKnowledgeBase",
    summary="Rename a knowledge base (owner only)",
    responses=responses(HTTPStatus.OK, "The renamed knowledge base", KnowledgeBase, READER, NOT_VISIBLE),
)
def handle_rename_knowledge_base(
    kb_id: KbId,
    request: Annotated[RenameKnowledgeBaseRequest, Body()],
    caller: CallerId,
    kbs: KbStoreDep,
    profile_store: ProfileStoreDep,
    log: ActivityLogDep,
    settings: SettingsDep,
) -> KnowledgeBase:
    view = manage.rename_knowledge_base(
        kbs,
        profile_store,
        caller,
        kb_id,
        request.name,
        log=log,
        retention_days=settings.activity_retention_days,
    )
    return KnowledgeBase.from_view(view)


@router.put(
    "/knowledge-bases/<kb_id>/recall",
    operation_id="setRecall",
    summary="Turn the caller's own recall of a knowledge base on or off",
    responses=responses(
        HTTPStatus.OK, "The knowledge base with the caller's new setting", KnowledgeBase, NOT_VISIBLE
    ),
)
def handle_set_recall(
    kb_id: KbId,
    request: Annotated[RecallSettingRequest, Body()],
    caller: CallerId,
    kbs: KbStoreDep,
    profile_store: ProfileStoreDep,
) -> KnowledgeBase:
    view = manage.set_recall(kbs, profile_store, caller, kb_id, request.enabled)
    return KnowledgeBase.from_view(view)
