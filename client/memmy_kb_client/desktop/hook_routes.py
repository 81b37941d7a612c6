"""The hooks' route: ``POST /hook/recall``, the turn's block for the asking agent (docs/desktop.md,
"The local service")."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from memmy_kb_client.desktop.routes import Reply, Request, Route, error_reply
from memmy_kb_client.desktop.state import Access, DesktopState
from memmy_kb_client.recall_contract import MAX_QUERY_CHARS

if TYPE_CHECKING:
    from memmy_kb_client.home.service_replies import HookRecallReply


def _hook_recall(state: DesktopState, request: Request) -> Reply:
    body = request.json_object()
    query = body.get("query") if body else None
    agent = body.get("agent") if body else None
    if not isinstance(query, str) or not query.strip() or not (agent is None or isinstance(agent, str)):
        return error_reply(422, "validation_error", 'expected {"query": "...", "agent"?: "..."}')
    answer = state.recall(query.strip()[:MAX_QUERY_CHARS], agent)
    headers: tuple[tuple[str, str], ...] = ()
    if answer.cloud_seconds is not None:
        headers = (("Server-Timing", f"cloud;dur={answer.cloud_seconds * 1000:.2f}"),)
    reply: HookRecallReply = {"context": answer.context, "cloud": answer.outcome, "excerpts": answer.excerpts}
    if answer.retry_after is not None:
        reply["retry_after"] = answer.retry_after  # rate_limited: when the cloud recalls for this user again
    return Reply(200, reply, headers)


HOOK_ROUTES: Final[dict[tuple[str, str], Route]] = {
    ("POST", "/hook/recall"): Route(Access.HOOK, _hook_recall),
}
