"""POST /knowledge-bases: create a knowledge base (MemOS first, then our records)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.logging import correlation_paths

from memmy_kb.api.resolver import build_resolver
from memmy_kb.api.routes import knowledge_bases
from memmy_kb.observability import logger, metrics

app = build_resolver()
app.include_router(knowledge_bases.creation)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return app.resolve(event, context)
