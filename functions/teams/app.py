"""Teams: create, list, read, rename, delete; invitations; members, roles and ownership; the team's
activity. Never calls MemOS."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.logging import correlation_paths

from memmy_kb.api.resolver import build_resolver
from memmy_kb.api.routes import activity, teams
from memmy_kb.observability import logger

app = build_resolver()
app.include_router(teams.router)
app.include_router(activity.team_router)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return app.resolve(event, context)
