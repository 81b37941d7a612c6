"""POST /knowledge-bases: create a knowledge base (MemOS first, then our records)."""

from __future__ import annotations

from http import HTTPStatus
from typing import Annotated, Any

from aws_lambda_powertools.event_handler.openapi.params import Body, Header
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit

from memmy_kb import knowledge_bases
from memmy_kb.dependencies import get_memos_client, get_repository
from memmy_kb.http import build_resolver, json_response, responses
from memmy_kb.idempotency import run_idempotently
from memmy_kb.identity import verified_claims
from memmy_kb.models import CreateKnowledgeBaseRequest, KnowledgeBase
from memmy_kb.observability import logger, metrics, tracer

app = build_resolver()


@app.post(
    "/knowledge-bases",
    summary="Create a knowledge base",
    responses=responses(
        HTTPStatus.CREATED,
        "The new knowledge base",
        KnowledgeBase,
        (HTTPStatus.CONFLICT, "A request with this Idempotency-Key is in progress"),
        (HTTPStatus.SERVICE_UNAVAILABLE, "MemOS is unavailable"),
    ),
)
def create_knowledge_base(
    request: Annotated[CreateKnowledgeBaseRequest, Body()],
    idempotency_key: Annotated[str | None, Header(alias="Idempotency-Key")] = None,
):
    owner = verified_claims(app.current_event.raw_event)

    def create() -> dict[str, Any]:
        kb = knowledge_bases.create_knowledge_base(
            get_repository(), get_memos_client(), owner=owner, name=request.name
        )
        metrics.add_metric(name="KnowledgeBaseCreated", unit=MetricUnit.Count, value=1)
        return kb.model_dump(mode="json")

    result = run_idempotently(
        "create_kb",
        key=idempotency_key,
        user_id=owner.user_id,
        payload=request.model_dump(),
        compute=create,
        lambda_context=app.lambda_context,
    )
    return json_response(HTTPStatus.CREATED, KnowledgeBase.model_validate(result))


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return app.resolve(event, context)
