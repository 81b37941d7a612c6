"""The tools of one caller, on this container's ports (the composition root's factories)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memmy_kb import composition
from memmy_kb.api.mcp_endpoint.tools import bound_tools

if TYPE_CHECKING:
    from memmy_kb.api.mcp import Tool
    from memmy_kb.domain.remote_mcp.search import RecallPorts
    from memmy_kb.settings import Settings


def recall_ports(settings: Settings) -> RecallPorts:
    """What ``search`` needs, exactly as ``/recall`` gets it (``memmy_kb.api.injected``)."""
    from memmy_kb.domain.recall.config import RecallConfig
    from memmy_kb.domain.remote_mcp.search import RecallPorts

    return RecallPorts(
        kbs=composition.get_kb_store(),
        memos=composition.get_recall_memos_client(),
        config=RecallConfig.from_settings(settings),
        limiter=composition.get_recall_limiter(),
        counters=composition.get_rate_counters(),
        hits=composition.get_mcp_stores()[1],
        governor=composition.get_rate_governor() if settings.recall_rate_governor else None,
        files=composition.get_recall_files(),
        prints=composition.get_prints_cache(),
    )


def tools_for(user_id: str, settings: Settings) -> list[Tool]:
    from memmy_kb.domain.remote_mcp import listing, search

    def run_search(user: str, query: str, ids: list[str] | None, now: float) -> dict[str, Any]:
        return search.search(recall_ports(settings), user, query, ids, now)

    def run_fetch(user: str, hid: str, now: float) -> dict[str, Any]:
        return search.fetch(composition.get_kb_store(), composition.get_mcp_stores()[1], user, hid, now)

    def run_list(user: str) -> dict[str, Any]:
        return listing.list_knowledge_bases(composition.get_kb_store(), user)

    return bound_tools(user_id, run_search, run_fetch, run_list)
