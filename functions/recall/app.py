"""POST /recall: the caller's excerpts for one agent turn and the block a hook injects.

The path of every agent turn, so it imports only what it uses (no Tracer, no idempotency, Parameters
only when the MemOS key is first needed).
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Annotated, Any

from aws_lambda_powertools.event_handler.openapi.params import Body
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit

from memmy_kb import recall as recall_logic
from memmy_kb.dependencies import get_recall_memos_client, get_repository
from memmy_kb.http import build_resolver, responses
from memmy_kb.identity import caller_id
from memmy_kb.models import RecallRequest, RecallResponse
from memmy_kb.observability import logger, metrics
from memmy_kb.settings import get_settings

app = build_resolver()


@app.post(
    "/recall",
    summary="Search the caller's recall scope and build the context block for an agent turn",
    responses=responses(
        HTTPStatus.OK,
        "Excerpts from the knowledge bases the caller may read and has turned on",
        RecallResponse,
        (HTTPStatus.SERVICE_UNAVAILABLE, "MemOS failed or did not answer in time; no excerpts"),
    ),
)
def recall(request: Annotated[RecallRequest, Body()]) -> RecallResponse:
    caller = caller_id(app.current_event.raw_event)
    try:
        result = recall_logic.recall(
            get_repository(),
            get_recall_memos_client(),
            user_id=caller,
            query=request.query,
            limit=request.limit,
            max_context_chars=get_settings().recall_context_max_chars,
        )
    except recall_logic.RecallUnavailable:
        metrics.add_metric(name="RecallUnavailable", unit=MetricUnit.Count, value=1)
        raise
    metrics.add_metric(name="RecallExcerpts", unit=MetricUnit.Count, value=len(result.items))
    if result.discarded:
        metrics.add_metric(name="RecallDiscarded", unit=MetricUnit.Count, value=1)
    return result


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return app.resolve(event, context)
