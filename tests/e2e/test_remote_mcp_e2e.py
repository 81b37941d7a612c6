"""The remote MCP endpoint driven by a client no one here wrote: the official MCP Python SDK.

A person connects an MCP client that lives off their desktop. The SDK's own OAuth flow goes from the
endpoint's 401 to a token: protected-resource metadata, the authorization server's metadata, dynamic
client registration, sign-in and consent on the dev identity provider (driven as a browser would, over
HTTP), PKCE and the ``resource`` parameter. Then, in both protocol generations (the 2025 ``initialize``
handshake and the stateless 2026-07-28 revision), ``search`` returns attributed excerpts of the caller's
scope only; a KB unshared mid-session is gone from the next call and its hit can no longer be fetched;
a disconnected client gets 401 at once; an MCP token is refused by every other route, and a desktop
token by ``/mcp``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Awaitable, Callable
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qs, urlparse

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientMetadata,
)

from tests.support.e2e_story import client
from tests.support.mcp_oauth import sign_in_and_consent
from tests.support.mcp_sdk_client import TokenMemory, kb_with, raw_tools_list
from tests.support.stack import RunningStack
from tests.support.stage import Stage

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.local_stack("the dev authorization server's registration, sign-in and consent pages"),
]

CALLBACK = "http://127.0.0.1:33418/callback"
# Each run's documents name its own projects: the emulator weighs a query's words by how rare they are in
# everything it holds, so documents repeated across runs would make each other harder to find.
BUDGET = "项目 {code} 的预算是 {amount} 万元，由财务部审批。"
DEPLOYMENT = "项目 {code} 的私有化部署需要 {cores} 核 CPU 和 64 GB 内存的服务器。"
CLIENT_NAME = "Research assistant (test)"


def _oauth(mcp_url: str, user_id: str, storage: TokenMemory) -> OAuthClientProvider:
    """The SDK's OAuth provider; the person's browser is ``sign_in_and_consent`` signing in as ``user_id``."""
    authorization: list[str] = []

    async def redirect(url: str) -> None:
        authorization.append(url)

    async def callback() -> AuthorizationCodeResult:
        landed = await anyio.to_thread.run_sync(sign_in_and_consent, authorization.pop(), user_id)
        query = parse_qs(urlparse(landed).query)
        assert "error" not in query, landed
        return AuthorizationCodeResult(
            code=query["code"][0], state=query.get("state", [None])[0], iss=query.get("iss", [None])[0]
        )

    metadata = OAuthClientMetadata(
        client_name=CLIENT_NAME,
        redirect_uris=[CALLBACK],  # type: ignore[list-item]  # pydantic parses the string
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )
    return OAuthClientProvider(
        mcp_url, metadata, storage, redirect_handler=redirect, callback_handler=callback
    )


Session = Callable[[Client], Awaitable[Any]]


def _with_client(mcp_url: str, auth: OAuthClientProvider, mode: str, session: Session) -> Any:
    async def main() -> Any:
        async with (
            httpx2.AsyncClient(auth=auth, timeout=30) as http,
            Client(streamable_http_client(mcp_url, http_client=http), mode=mode) as mcp,
        ):
            return await session(mcp)

    return anyio.run(main)


def _structured(result: Any) -> dict[str, Any]:
    assert not result.is_error, result
    structured: dict[str, Any] = result.structured_content
    assert json.loads(result.content[0].text) == structured
    return structured


def _search(query: str) -> Session:
    async def run(mcp: Client) -> dict[str, Any]:
        return _structured(await mcp.call_tool("search", {"query": query}))

    return run


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_an_sdk_client_signs_in_with_oauth_and_searches_only_what_the_person_may_read(
    local_stack: RunningStack, mode: str
) -> None:
    stage = Stage.on_local(local_stack)
    suffix = uuid.uuid4().hex[:8]
    budget, deployment = f"budget{suffix}", f"deploy{suffix}"
    person = stage.user(f"mcp-reader-{suffix}", name="研究员")
    colleague = stage.user(f"mcp-sharer-{suffix}", name="同事小李", email=f"li-{suffix}@example.com")
    outsider = stage.user(f"mcp-outsider-{suffix}", name="旁人")
    mcp_url = f"{local_stack.api_url}/mcp"
    apis = [client(stage, user.token) for user in (person, colleague, outsider)]
    mine, theirs, others = apis
    try:
        for api in apis:
            assert api.put("/me").status_code == HTTPStatus.OK
        # Given the person's own KB, a colleague's KB shared with them, and an outsider's KB that answers
        # both questions too
        own_kb = kb_with(mine, stage, "我的预算", "预算.md", BUDGET.format(code=budget, amount=120))
        shared_kb = kb_with(
            theirs, stage, "部署手册", "部署.md", DEPLOYMENT.format(code=deployment, cores=16)
        )
        shared = theirs.post(f"/knowledge-bases/{shared_kb}/members", json={"identifier": person.user_id})
        assert shared.status_code == HTTPStatus.CREATED, shared.text
        outsiders = (
            BUDGET.format(code=budget, amount=999) + "\n\n" + DEPLOYMENT.format(code=deployment, cores=2)
        )
        kb_with(others, stage, "旁人的资料", "旁人.md", outsiders)

        # When the SDK client connects: 401, discovery, registration, sign-in and consent, PKCE, token
        storage = TokenMemory()
        auth = _oauth(mcp_url, person.user_id, storage)
        first = _with_client(mcp_url, auth, mode, _search(f"项目 {budget} 的预算是多少"))
        assert storage.client_info is not None
        assert storage.tokens is not None

        # Then search returns the person's own excerpt, attributed to the KB and the file, never the outsider's
        assert [hit["knowledge_base"]["id"] for hit in first["results"]] == [own_kb], first
        assert "120 万元" in first["results"][0]["text"]
        assert first["results"][0]["file"]["name"] == "预算.md"

        # And the shared KB's excerpt names its sharer, with a masked contact; never the outsider's KB
        follow = _with_client(mcp_url, auth, mode, _search(f"项目 {deployment} 的部署需要什么配置"))
        assert [hit["knowledge_base"]["id"] for hit in follow["results"]] == [shared_kb], follow
        assert "16 核 CPU" in follow["results"][0]["text"]
        assert follow["results"][0]["sharer"]["name"] == "同事小李"
        assert f"li-{suffix}@example.com" not in json.dumps(follow, ensure_ascii=False)

        # When the colleague unshares the KB, then the next search lacks it and its hit cannot be fetched
        hit_id = follow["results"][0]["id"]
        revoked = theirs.delete(f"/knowledge-bases/{shared_kb}/members/{person.user_id}")
        assert revoked.status_code == HTTPStatus.NO_CONTENT, revoked.text

        async def after_unshare(mcp: Client) -> tuple[dict[str, Any], Any]:
            again = _structured(
                await mcp.call_tool("search", {"query": f"项目 {deployment} 的部署需要什么配置"})
            )
            return again, await mcp.call_tool("fetch", {"id": hit_id})

        again, fetched = _with_client(mcp_url, auth, mode, after_unshare)
        assert again["results"] == []
        assert fetched.is_error, fetched

        # And an MCP token is refused by every other route, a desktop token by /mcp
        mcp_token = storage.tokens.access_token
        on_kbs = httpx.get(
            f"{local_stack.api_url}/knowledge-bases", headers={"Authorization": f"Bearer {mcp_token}"}
        )
        assert on_kbs.status_code == HTTPStatus.UNAUTHORIZED
        assert raw_tools_list(mcp_url, person.token).status_code == HTTPStatus.UNAUTHORIZED
        assert raw_tools_list(mcp_url, mcp_token).status_code == HTTPStatus.OK

        # When the person disconnects the client on their connections list, then its next call is 401
        listed = mine.get("/me/connections").json()
        [connection] = [c for c in listed["connections"] if c["client_name"] == CLIENT_NAME]
        assert connection["state"] == "active"
        assert mine.delete(f"/me/connections/{connection['id']}").status_code == HTTPStatus.NO_CONTENT
        refused = raw_tools_list(mcp_url, mcp_token)
        assert refused.status_code == HTTPStatus.UNAUTHORIZED
        assert "resource_metadata=" in refused.headers["www-authenticate"]
        kinds = [entry["kind"] for entry in mine.get("/me/connections").json()["activity"]]
        assert kinds[:2] == ["connection_revoked", "connection_added"]
    finally:
        for api in apis:
            api.close()
