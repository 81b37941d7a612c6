"""Reads and app-only edits: knowledge bases, their files and folders, the caller's profile and their
connections to the remote MCP endpoint; and the public login configuration.

One Lambda, one router per resource; it never writes MemOS (the file list reads live status from it).
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.logging import correlation_paths

from memmy_kb.api.resolver import build_resolver
from memmy_kb.api.routes import activity, connections, files, knowledge_bases, login, profile
from memmy_kb.observability import logger

app = build_resolver()
app.include_router(knowledge_bases.router)
app.include_router(files.router)
app.include_router(profile.router)
app.include_router(activity.router)
app.include_router(login.router)
app.include_router(connections.router)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return app.resolve(event, context)
