"""``memmy-kb mcp``: a Model Context Protocol server on stdio, so an agent can search Memmy when it needs
to, with its own query, where the hooks push excerpts before each turn.

Two tools, both answered by the local desktop service with the hook token (``mcp_service``):

* ``search_knowledge(query, knowledge_bases?, limit?)``: excerpts from the knowledge bases in the recall
  scope, each with its title, its knowledge base (and owner, for a share) and its text;
  ``knowledge_bases`` (names or ids) narrows the search and never widens it;
* ``list_knowledge_bases()``: the knowledge bases in the recall scope.

Built on the official SDK (``mcp``, the client's ``mcp`` extra), imported only here and only when the
server starts: the SDK brings pydantic, which no other client command loads. Stdout carries protocol
frames only: the SDK's stdio transport points file descriptor 1 at stderr while it serves, and every log
line (method, path and status of each service call; never a query or an excerpt) goes to stderr.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from memmy_kb_client.mcp_service import (
    LocalService,
    ToolRefused,
    check_query,
    render_knowledge_bases,
    render_search,
    resolve,
)

if TYPE_CHECKING:
    from mcp.server import MCPServer

SERVER_NAME = "memmy-kb"
INSTRUCTIONS = (
    "Search the user's Memmy knowledge bases (their documents, and those shared with them) when a question "
    "may be answered there. list_knowledge_bases names the knowledge bases you can search; "
    "search_knowledge takes a query and, optionally, names or ids to narrow it to."
)
MISSING_SDK = (
    "memmy-kb mcp needs the MCP SDK: install the client with its mcp extra "
    "(pip install 'memmy-kb[mcp]', or ./client[mcp] in a checkout)."
)


def build_server(env: Mapping[str, str]) -> MCPServer[Any]:
    """The MCP server with its two tools, asking the desktop service of ``env``'s ``MEMMY_KB_HOME``."""
    from mcp.server import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import CallToolResult, TextContent, ToolAnnotations

    service = LocalService(env)
    server: MCPServer[Any] = MCPServer(
        SERVER_NAME, instructions=INSTRUCTIONS, version=_version(), log_level="WARNING"
    )
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    def answer(text: str, structured: dict[str, Any]) -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured)

    @server.tool(
        title="Search Memmy knowledge bases",
        annotations=read_only,
        structured_output=False,
    )
    async def search_knowledge(
        query: str, knowledge_bases: list[str] | None = None, limit: int | None = None
    ) -> Any:  # CallToolResult; the SDK evaluates the annotations in this module's globals
        """Search the user's Memmy knowledge bases (their own and those shared with them that take part
        in their recall) and return the best excerpts, each with its document title, its knowledge base
        (and owner, for a shared one) and its text.

        query: what to look for, in the user's words or your own (up to 4,000 characters).
        knowledge_bases: optional names or ids (from list_knowledge_bases) to search only those; it can
        only narrow the search to knowledge bases in the user's recall, never add others.
        limit: optional, at most this many excerpts (1 to 25).
        """
        try:
            cleaned = check_query(query, limit)
            ids = None
            if knowledge_bases is not None:
                ids = resolve(knowledge_bases, await service.knowledge_bases())
            result = await service.search(cleaned, ids, limit)
        except ToolRefused as err:
            raise ToolError(str(err)) from err
        return answer(render_search(cleaned, result), result)

    @server.tool(
        title="List Memmy knowledge bases",
        annotations=read_only,
        structured_output=False,
    )
    async def list_knowledge_bases() -> Any:  # CallToolResult
        """The Memmy knowledge bases search_knowledge searches: each one's name, id, and whether it is
        the user's own or shared with them (and by whom)."""
        try:
            scope = await service.knowledge_bases()
        except ToolRefused as err:
            raise ToolError(str(err)) from err
        return answer(render_knowledge_bases(scope), {"knowledge_bases": [kb.as_json() for kb in scope]})

    return server


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("memmy-kb")
    except PackageNotFoundError:
        return ""


def main(env: Mapping[str, str] | None = None) -> int:
    """Serve MCP on stdin/stdout until the agent closes stdin."""
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="memmy-kb mcp: %(levelname)s %(message)s"
    )
    # One line per call to the service (method, path, status); the SDK's own stay at warnings.
    logging.getLogger("memmy_kb_client.mcp").setLevel(logging.INFO)
    try:
        server = build_server(os.environ if env is None else env)
    except ModuleNotFoundError as err:
        if err.name is None or err.name.split(".")[0] not in ("mcp", "mcp_types"):
            raise
        print(MISSING_SDK, file=sys.stderr)
        return 2
    server.run("stdio")
    return 0
