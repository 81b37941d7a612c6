"""The remote MCP endpoint through the real ``mcp`` handler (the ``service`` fixture): its environment on a
JWKS served on 127.0.0.1, people with KBs whose documents are in the MemOS emulator, and ``McpCaller``,
which sends JSON-RPC calls with an MCP access token as a 2025-06-18 client does."""

from __future__ import annotations

import json
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from memmy_kb.adapters.memos.client import MemosClient
from memmy_kb.adapters.memos.key import StaticApiKeyProvider
from memmy_kb.composition import get_kb_store
from memmy_kb.domain.engine import FileInput
from tests.support.aws import Reply, Service
from tests.support.events import claims_for
from tests.support.mcp_tokens import mcp_token
from tests.support.polling import wait_until

QUERY = "差旅报销需要哪些发票"
DOCS = {
    "alice": ("差旅报销制度.md", "# 差旅报销制度\n差旅报销需要哪些发票：住宿发票和行程单。ALPHA1 住宿发票须为专票。"),
    "bob": ("报销常见问题.md", "# 报销常见问题\n差旅报销需要哪些发票？出租车发票和机票行程单。BRAVO2 须在30天内提交。"),
    "carol": ("财务手册.md", "# 财务手册\n差旅报销需要哪些发票由财务部规定。CHARLIE3 发票抬头写公司全称。"),
}
MARKERS = {"alice": "ALPHA1", "bob": "BRAVO2", "carol": "CHARLIE3"}
LEGACY_HEADERS = {"mcp-protocol-version": "2025-06-18", "accept": "application/json, text/event-stream"}


def register(service: Service, *users: str) -> None:
    for user in users:
        assert service.call("PUT", "/me", claims=claims_for(user, name=user.title())).status == HTTPStatus.OK


def add_document(service: Service, kb_id: str, filename: str, text: str) -> None:
    """The document in the KB's MemOS KB, as the ingest would put it, once searchable."""
    record = get_kb_store().get_kb(kb_id)
    assert record is not None
    with MemosClient(service.memos.base_url, StaticApiKeyProvider(service.memos.api_key)) as client:
        client.add_knowledgebase_files(
            record.memos_kb_id, [FileInput.from_bytes(text.encode(), name=filename, mime_type="text/markdown")]
        )

    def processed() -> bool:
        (kb,) = [k for k in service.memos.state()["knowledge_bases"] if k["id"] == record.memos_kb_id]
        return bool(kb["files"]) and all(f["status"] == "completed" for f in kb["files"])

    wait_until(processed, timeout=10, interval=0.02, message="the document to be processed")


def create_kb(service: Service, owner: str) -> str:
    reply = service.call("POST", "/knowledge-bases", owner, body={"name": f"{owner} 的资料"})
    assert reply.status == HTTPStatus.CREATED, reply.body
    kb_id = str(reply.body["id"])
    add_document(service, kb_id, *DOCS[owner])
    return kb_id


def markers_in(value: Any) -> set[str]:
    text = json.dumps(value, ensure_ascii=False)
    return {owner for owner, marker in MARKERS.items() if marker in text}


@dataclass
class McpCaller:
    """One person's MCP client: JSON-RPC over ``POST /mcp`` with a token signed by ``key``."""

    service: Service
    key: Any
    user: str

    def post(self, message: dict[str, Any], token: str | None = None, headers: dict[str, str] | None = None) -> Reply:
        token = token if token is not None else mcp_token(self.key, self.user)
        sent = {**LEGACY_HEADERS, **({"authorization": f"Bearer {token}"} if token else {}), **(headers or {})}
        return self.service.call("POST", "/mcp", None, body=message, headers=sent)

    def call(self, tool: str, arguments: dict[str, Any] | None = None, **sent: Any) -> Reply:
        message = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments or {}},
        }
        return self.post(message, **sent)

    def result(self, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        """The tool's result (``structuredContent``, ``isError``, ``content``) of a call that was answered."""
        reply = self.call(tool, arguments)
        assert reply.status == HTTPStatus.OK, (reply.status, reply.body)
        assert "result" in reply.body, reply.body
        result: dict[str, Any] = reply.body["result"]
        return result


def answered(service: Service, token: str, method: str, params: dict[str, Any] | None = None) -> Any:
    """The result of one JSON-RPC call with ``token`` to ``POST /mcp``; RuntimeError for anything else."""
    headers = {**LEGACY_HEADERS, "authorization": f"Bearer {token}"}
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
    reply = service.call("POST", "/mcp", None, body=body, headers=headers)
    if reply.status != HTTPStatus.OK or "result" not in reply.body or reply.body["result"].get("isError"):
        raise RuntimeError(f"POST /mcp {method}: {reply.status} {reply.body}")
    return reply.body["result"]
