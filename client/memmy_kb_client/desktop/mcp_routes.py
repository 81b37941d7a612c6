"""The hook token's two routes for ``memmy-kb mcp``: the recall scope (``GET /hook/knowledge-bases``) and
a search inside it (``POST /hook/search``), answered from the cloud with the held login
(docs/desktop.md, "Agents that search")."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, cast

from memmy_kb_client.desktop.cloud import RATE_LIMITED, rate_limited, retry_after
from memmy_kb_client.desktop.routes import Reply, Request, Route, error_reply
from memmy_kb_client.desktop.state import Access, DesktopState
from memmy_kb_client.http_client import CLOUD_ERROR, OK, UNAUTHORIZED, CallResult
from memmy_kb_client.recall_contract import MAX_QUERY_CHARS, MAX_RECALL_KBS, MAX_RECALL_LIMIT

if TYPE_CHECKING:
    from memmy_kb_client.home.service_replies import (
        ScopeKnowledgeBase,
        ScopeReply,
        SearchExcerpt,
        SearchReply,
        Sharer,
    )
    from memmy_kb_client.recall_contract import RecallRequest
    from memmy_kb_client.replies import KnowledgeBase, KnowledgeBaseList, Owner, RecallResponse


def _cloud(state: DesktopState, method: str, target: str, payload: RecallRequest | None) -> CallResult:
    """One cloud call with the held (refreshed) login; a login that is missing or expired is the outcome
    ``fresh_login`` gives, and one the cloud refuses is marked rejected."""
    login, outcome = state.fresh_login()
    if login is None:
        return CallResult(outcome)
    result = state.cloud.call(login.token, method, target, payload)
    if result.outcome == UNAUTHORIZED:
        state.mark_rejected(login)
    return result


def _owner(kb: KnowledgeBase) -> Sharer:
    given = kb.get("owner")
    # A reply without its owner (or with another shape) names nobody: the agent reads "someone".
    owner = given if isinstance(given, dict) else cast("Owner", {})
    return {"name": owner.get("display_name"), "contact": owner.get("contact")}


def _knowledge_bases(state: DesktopState, request: Request) -> Reply:
    result = _cloud(state, "GET", "/knowledge-bases", None)
    answer, outcome = result.answer, result.outcome
    if outcome == OK and not isinstance(answer, dict):
        outcome = CLOUD_ERROR
    if outcome != OK:
        refused: ScopeReply = {"knowledge_bases": [], "cloud": outcome}
        return Reply(200, refused)
    listed: KnowledgeBaseList = answer
    found: list[ScopeKnowledgeBase] = []
    not_in_recall = 0
    for kb in listed.get("items") or []:
        if not isinstance(kb, dict):
            continue
        if kb.get("recall") is not True:
            not_in_recall += 1
            continue
        owned = kb.get("role") == "owner"
        found.append(
            {
                "id": kb.get("id"),
                "name": kb.get("name"),
                "owned": owned,
                "owner": None if owned else _owner(kb),
            }
        )
    scope: ScopeReply = {"knowledge_bases": found, "not_in_recall": not_in_recall, "cloud": "ok"}
    return Reply(200, scope)


def _search_body(request: Request) -> RecallRequest | None:
    body = request.json_object()
    if not body or set(body) - {"query", "knowledge_base_ids", "limit"}:
        return None
    query, ids, limit = body.get("query"), body.get("knowledge_base_ids"), body.get("limit")
    if not isinstance(query, str) or not query.strip():
        return None
    sent: RecallRequest = {"query": query.strip()[:MAX_QUERY_CHARS]}
    if ids is not None:
        if (
            not isinstance(ids, list)
            or not 0 < len(ids) <= MAX_RECALL_KBS
            or not all(isinstance(i, str) for i in ids)
        ):
            return None
        sent["knowledge_base_ids"] = ids
    if limit is not None:
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_RECALL_LIMIT:
            return None
        sent["limit"] = limit
    return sent


def _search(state: DesktopState, request: Request) -> Reply:
    sent = _search_body(request)
    if sent is None:
        return error_reply(
            422,
            "validation_error",
            f'expected {{"query": "...", "knowledge_base_ids"?: [<= {MAX_RECALL_KBS} ids], "limit"?: 1..{MAX_RECALL_LIMIT}}}',
        )
    result = rate_limited(_cloud(state, "POST", "/recall", sent))
    answer, outcome = result.answer, result.outcome
    if outcome == RATE_LIMITED:
        limited: SearchReply = {"excerpts": [], "partial": False, "cloud": outcome, "retry_after": retry_after(result)}
        return Reply(200, limited)
    if result.status == 422 and result.error is not None:
        return Reply(422, result.error.as_json())  # the cloud's own refusal (an id outside the scope)
    if outcome == OK and not isinstance(answer, dict):
        outcome = CLOUD_ERROR
    if outcome != OK:
        failed: SearchReply = {"excerpts": [], "partial": False, "cloud": outcome}
        return Reply(200, failed)
    recalled: RecallResponse = answer
    excerpts: list[SearchExcerpt] = []
    for item in recalled.get("items") or []:
        if not isinstance(item, dict):
            continue
        excerpts.append(
            {
                "title": item.get("title"),
                "text": item.get("content"),
                "file": item.get("file"),
                "files": item.get("files"),
                "knowledge_base": item.get("knowledge_base"),
                "knowledge_bases": item.get("knowledge_bases"),
                "owner": item.get("owner"),
                "team": item.get("team"),
            }
        )
    scope_size = recalled.get("scope_size")
    searched = scope_size if isinstance(scope_size, int) and not isinstance(scope_size, bool) else None
    reply: SearchReply = {
        "excerpts": excerpts,
        "partial": recalled.get("partial") is True,
        "scope_size": searched,
        "cloud": "ok",
    }
    return Reply(200, reply)


MCP_ROUTES: Final[dict[tuple[str, str], Route]] = {
    ("GET", "/hook/knowledge-bases"): Route(Access.HOOK, _knowledge_bases),
    ("POST", "/hook/search"): Route(Access.HOOK, _search),
}
