"""POST /recall: the caller's excerpts for one agent turn and the block a hook injects.

The path of every agent turn, so it imports only what it uses (no Tracer, no idempotency, Parameters
only when the MemOS key is first needed).
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.logging import correlation_paths

from memmy_kb.api.resolver import build_resolver
from memmy_kb.api.routes import recall
from memmy_kb.observability import logger, metrics

app = build_resolver()
app.include_router(recall.router)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return app.resolve(event, context)
