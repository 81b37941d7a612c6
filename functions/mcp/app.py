"""The remote MCP endpoint: ``POST /mcp`` (read-only tools on the recall domain for agents off the
desktop), its 405s and its protected-resource metadata.

No Powertools resolver: the request goes to the protocol layer as it came (``memmy_kb.api.mcp_endpoint``),
which checks the bearer token itself. PyJWT, the JWKS and the tools' modules load with the first request.
As recall's, it holds the garbage collector off until its first invocation has returned
(``memmy_kb.cold_start``): that request builds most of what the container keeps.
"""

from __future__ import annotations

from memmy_kb import cold_start

cold_start.hold()  # before the imports below: they and the first request are most of the cold start's objects

from typing import Any  # noqa: E402

from aws_lambda_powertools.logging import correlation_paths  # noqa: E402

from memmy_kb.api.mcp_endpoint.endpoint import handle_mcp  # noqa: E402
from memmy_kb.observability import logger, metrics  # noqa: E402


@cold_start.until_first_invocation
@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return handle_mcp(event)
