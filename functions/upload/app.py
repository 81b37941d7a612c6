"""POST /knowledge-bases/{kb_id}/uploads: record an upload and hand out a presigned POST; DELETE
.../uploads/{upload_id}: dismiss a failed one (owner only)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.logging import correlation_paths

from memmy_kb.api.resolver import build_resolver
from memmy_kb.api.routes import uploads
from memmy_kb.observability import logger, metrics

app = build_resolver()
app.include_router(uploads.router)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return app.resolve(event, context)
