"""The MCP authorization server: OAuth for MCP clients (registration, authorization with the person's
sign-in at the login provider and a consent page, tokens, revocation, keys), answered by
``memmy_kb.api.mcp_auth.routes`` on the HTTP API's events. No Powertools resolver: Authlib reads the
request itself. Authlib, PyJWT and cryptography are this function's own (requirements.txt).
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.logging import correlation_paths

from memmy_kb.api.mcp_auth.routes import handle_mcp_auth
from memmy_kb.observability import logger, metrics


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return handle_mcp_auth(event)
