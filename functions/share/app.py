"""Members of a knowledge base: list, share by user id / phone / email, revoke and leave; its shares with
teams; the caller's blocks. Never calls MemOS."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.logging import correlation_paths

from memmy_kb.api.resolver import build_resolver
from memmy_kb.api.routes import blocks, members, team_shares
from memmy_kb.observability import logger

app = build_resolver()
app.include_router(members.router)
app.include_router(blocks.router)
app.include_router(team_shares.router)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return app.resolve(event, context)
