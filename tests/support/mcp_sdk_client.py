"""What the e2e tests of the remote MCP endpoint share around the official SDK's client: its token
storage (what a connector keeps on its own servers), one raw request without the SDK, and a KB ready to
be searched."""

from __future__ import annotations

from http import HTTPStatus

import httpx
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from tests.support.e2e_story import upload, wait_until_available
from tests.support.stage import Stage


class TokenMemory:
    """The SDK's token storage, in memory: what a connector keeps on its own servers."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


def raw_tools_list(mcp_url: str, token: str) -> httpx.Response:
    """One modern ``tools/list`` with ``token``, without the SDK (which would start a new OAuth flow)."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    return httpx.post(
        mcp_url,
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}},
        headers={
            "Authorization": f"Bearer {token}",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": "tools/list",
        },
        timeout=30,
    )


def kb_with(api: httpx.Client, stage: Stage, name: str, filename: str, text: str) -> str:
    """A KB of ``name`` holding ``filename`` with ``text``, once the engine has it."""
    created = api.post("/knowledge-bases", json={"name": stage.kb_name(name)})
    assert created.status_code == HTTPStatus.CREATED, created.text
    kb_id: str = created.json()["id"]
    upload(api, kb_id, filename, text)
    wait_until_available(api, kb_id, {filename})
    return kb_id
