"""The remote MCP endpoint: ``POST /mcp`` (read-only tools on the recall domain for agents off the
desktop), its 405s and its protected-resource metadata.

No Powertools resolver: the request goes to the protocol layer as it came (``memmy_kb.api.mcp_endpoint``),
which checks the bearer token itself. PyJWT, the JWKS and the tools' modules load with the first request.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.logging import correlation_paths

from memmy_kb.api.mcp_endpoint.endpoint import handle_mcp
from memmy_kb.observability import logger, metrics


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return handle_mcp(event)
