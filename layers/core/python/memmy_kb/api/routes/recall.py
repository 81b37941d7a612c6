"""POST /recall: the caller's excerpts for one agent turn and the block a hook injects."""

from __future__ import annotations

import time
from http import HTTPStatus
from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body
from aws_lambda_powertools.metrics import MetricUnit

from memmy_kb.api.injected import (
    CallerId,
    KbStoreDep,
    PrintsCacheDep,
    RateCountersDep,
    RateGovernorDep,
    RecallConfigDep,
    RecallFilesDep,
    RecallLimiterDep,
    RecallMemosDep,
)
from memmy_kb.api.models.recall import RecallRequest, RecallResponse
from memmy_kb.api.resolver import new_router, responses
from memmy_kb.domain.recall import turn
from memmy_kb.errors import RecallUnavailable, TooManyRequests
from memmy_kb.observability import metrics

router = new_router()


@router.post(
    "/recall",
    operation_id="recall",
    summary="Search the caller's recall scope and build the context block for an agent turn",
    responses=responses(
        HTTPStatus.OK,
        "Excerpts from the knowledge bases the caller may read and has turned on",
        RecallResponse,
        (
            HTTPStatus.UNPROCESSABLE_ENTITY,
            "Invalid request (validation_error), or a knowledge_base_ids entry outside the caller's recall scope"
            " (knowledge_base_not_in_scope)",
        ),
        (
            HTTPStatus.TOO_MANY_REQUESTS,
            "The caller's recalls are over their per-user limit, or past their share of the MemOS budget"
            " (recall_rate_limited): no search was made; Retry-After says when to ask again",
        ),
        (HTTPStatus.SERVICE_UNAVAILABLE, "MemOS failed or did not answer in time for every KB; no excerpts"),
    ),
)
def handle_recall(
    request: Annotated[RecallRequest, Body()],
    caller: CallerId,
    kbs: KbStoreDep,
    memos: RecallMemosDep,
    config: RecallConfigDep,
    governor: RateGovernorDep,
    files: RecallFilesDep,
    prints: PrintsCacheDep,
    limiter: RecallLimiterDep,
    counters: RateCountersDep,
) -> RecallResponse:
    try:
        limiter.admit(caller, counters, time.time())
    except TooManyRequests:
        metrics.add_metric(name="RecallRateLimited", unit=MetricUnit.Count, value=1)
        raise
    try:
        result = turn.recall(
            kbs, memos, request.question(caller), config, governor=governor, files=files, prints=prints
        )
    except RecallUnavailable:
        metrics.add_metric(name="RecallUnavailable", unit=MetricUnit.Count, value=1)
        raise
    except TooManyRequests:  # the fleet's MemOS budget refused the caller for their own use
        metrics.add_metric(name="RecallRateLimited", unit=MetricUnit.Count, value=1)
        raise
    metrics.add_metric(name="RecallExcerpts", unit=MetricUnit.Count, value=len(result.block.excerpts))
    if result.discarded:
        metrics.add_metric(name="RecallDiscarded", unit=MetricUnit.Count, value=1)
    if result.partial:
        metrics.add_metric(name="RecallPartial", unit=MetricUnit.Count, value=1)
    if result.degraded:
        # Near MemOS's rate limit: KBs searched in groups (template.yaml: RecallDegradedAlarm).
        metrics.add_metric(name="RecallDegraded", unit=MetricUnit.Count, value=1)
    return RecallResponse.from_result(result)
