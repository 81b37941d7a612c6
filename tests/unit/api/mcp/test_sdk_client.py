"""The pinned MCP SDK's own ``Client`` talks to ``memmy_kb.api.mcp.serve`` in each of its modes: the
``initialize`` handshake (``legacy``), probing ``server/discover`` first (``auto``), and 2026-07-28 pinned.
Its HTTP goes through an in-process transport that hands each request to ``serve``: no socket is opened."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from memmy_kb.api.mcp import HttpRequest, serve
from tests.support.mcp_protocol import SERVER, TOOLS

TOOL_NAMES = ["crash", "rate_limited", "refuse", "search", "名前 tool"]


class Wire:
    """The HTTP exchanges of one client session, each handed to ``serve``."""

    def __init__(self) -> None:
        self.exchanges: list[tuple[httpx2.Request, httpx2.Response]] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        headers = {name.lower(): value for name, value in request.headers.items()}
        answer = serve(HttpRequest(request.method, headers, request.read()), TOOLS, SERVER)
        response = httpx2.Response(answer.status, headers=answer.headers, content=answer.body)
        self.exchanges.append((request, response))
        return response

    def session(self, mode: str) -> Client:
        http = httpx2.AsyncClient(transport=httpx2.MockTransport(self))
        return Client(streamable_http_client("http://127.0.0.1:1/mcp", http_client=http), mode=mode)  # type: ignore[arg-type]


async def _story(client: Client) -> dict[str, Any]:
    async with client:
        listed = await client.list_tools()
        found = await client.call_tool("名前 tool", {"query": "报销"})
        refused = await client.call_tool("rate_limited", {})
        corrected = await client.call_tool("refuse", {"query": ""})
        errors = {}
        for name, arguments in (("fetch", {}), ("crash", {})):
            with pytest.raises(MCPError) as raised:
                await client.call_tool(name, arguments)
            errors[name] = (raised.value.error.code, raised.value.error.message)
    return {
        "tools": [tool.name for tool in listed.tools],
        "annotations": {tool.annotations.read_only_hint for tool in listed.tools if tool.annotations},
        "found": (found.structured_content, found.is_error),
        "refused": (refused.is_error, [block.text for block in refused.content]),  # type: ignore[union-attr]
        "corrected": (corrected.is_error, [block.text for block in corrected.content]),  # type: ignore[union-attr]
        "errors": errors,
    }


EXPECTED = {
    "tools": TOOL_NAMES,
    "annotations": {True},
    "found": ({"echo": {"query": "报销"}}, False),
    "refused": (True, ["Too many searches; try again in a minute."]),
    "corrected": (True, ["query must be 1-4000 characters."]),
    "errors": {
        "fetch": (-32602, "Unknown tool: fetch."),
        "crash": (-32603, "Internal error: the tool failed; try again later."),
    },
}


@pytest.mark.parametrize("mode", ["legacy", "auto", "2026-07-28"])
def test_the_sdk_client_lists_and_calls_the_tools_in_every_mode(mode):
    assert asyncio.run(_story(Wire().session(mode))) == EXPECTED


def test_a_legacy_client_completes_the_handshake_and_is_never_given_a_session():
    wire = Wire()
    asyncio.run(_story(wire.session("legacy")))
    first, _ = wire.exchanges[0]
    assert b'"method":"initialize"' in first.read().replace(b" ", b"")
    assert all("mcp-session-id" not in response.headers for _, response in wire.exchanges)
    assert {request.headers.get("mcp-protocol-version") for request, _ in wire.exchanges[1:]} == {
        "2025-11-25"
    }


def test_an_auto_client_finds_the_modern_server_by_discover_and_stays_modern():
    wire = Wire()
    asyncio.run(_story(wire.session("auto")))
    assert wire.exchanges[0][0].headers["mcp-method"] == "server/discover"
    assert {request.headers["mcp-protocol-version"] for request, _ in wire.exchanges} == {"2026-07-28"}
    assert not any(b'"initialize"' in request.read() for request, _ in wire.exchanges)
