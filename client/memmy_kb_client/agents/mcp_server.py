"""``memmy-kb mcp``: the Model Context Protocol server an agent starts to search Memmy itself, its two
tools (``search_knowledge``, ``list_knowledge_bases``) on the official SDK's low-level server, behind the
frame filter (``mcp_frames``); the SDK is imported only when it starts (docs/desktop.md, "Agents that
search")."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from contextlib import suppress
from functools import partial
from typing import TYPE_CHECKING, Any, Final

from memmy_kb_client.agents.mcp_arguments import list_arguments, search_arguments
from memmy_kb_client.agents.mcp_frames import claimed_stdin, read_frames
from memmy_kb_client.agents.mcp_render import render_search
from memmy_kb_client.agents.mcp_service import LocalService, ToolRefused, render_knowledge_bases, resolve
from memmy_kb_client.recall_contract import MAX_QUERY_CHARS, MAX_RECALL_KBS, MAX_RECALL_LIMIT

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server
    from mcp.types import CallToolRequestParams, CallToolResult

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
SEARCH_DESCRIPTION: Final = """Search the user's Memmy knowledge bases (their own and those shared with them that take part
in their recall) and return the best excerpts, each with its title, the document it comes from (the
file's name, folder and id; or the few files that hold the same text), its knowledge base (and owner,
for a shared one) and its text.

query: what to look for, in the user's words or your own (up to 4,000 characters).
knowledge_bases: optional names or ids (from list_knowledge_bases) to search only those; it can
only narrow the search to knowledge bases in the user's recall, never add others.
limit: optional, at most this many excerpts (1 to 25)."""
SEARCH_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "description": f"What to look for (up to {MAX_QUERY_CHARS:,} characters).",
        },
        "knowledge_bases": {
            "type": "array",
            "items": {"type": "string"},
            "minItems": 1,
            "maxItems": MAX_RECALL_KBS,
            "description": "Names or ids from list_knowledge_bases; leave out to search them all.",
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_RECALL_LIMIT,
            "description": "At most this many excerpts.",
        },
    },
    "required": ["query"],
}  # no additionalProperties: not every agent's schema dialect takes it; mcp_arguments refuses others
LIST_DESCRIPTION: Final = """The Memmy knowledge bases search_knowledge searches: each one's name, id, and whether it is
the user's own or shared with them (and by whom)."""


def build_server(env: Mapping[str, str]) -> Server[Any]:
    """The MCP server with its two tools, asking the desktop service of ``env``'s ``MEMMY_KB_HOME``."""
    from mcp.server.lowlevel import Server
    from mcp.types import CallToolResult, ListToolsResult, TextContent, Tool, ToolAnnotations

    service = LocalService(env)
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    tools = [
        Tool(
            name="search_knowledge",
            title="Search Memmy knowledge bases",
            description=SEARCH_DESCRIPTION,
            input_schema=SEARCH_SCHEMA,
            annotations=read_only,
        ),
        Tool(
            name="list_knowledge_bases",
            title="List Memmy knowledge bases",
            description=LIST_DESCRIPTION,
            input_schema={"type": "object", "properties": {}},
            annotations=read_only,
        ),
    ]

    def answer(text: str, structured: Mapping[str, object] | None = None, *, error: bool = False) -> CallToolResult:
        # The model keeps its own copy of the structured answer (pydantic builds a new dict) either way.
        content = None if structured is None else dict(structured)
        return CallToolResult(
            content=[TextContent(type="text", text=text)], structured_content=content, is_error=error
        )

    async def search_knowledge(arguments: dict[str, Any] | None) -> CallToolResult:
        asked = search_arguments(arguments)
        ids = None
        if asked.knowledge_bases is not None:
            ids = resolve(asked.knowledge_bases, await service.knowledge_bases(), service.page())
        result = await service.search(asked.query, ids, asked.limit)
        return answer(render_search(asked.query, result), result)

    async def list_knowledge_bases(arguments: dict[str, Any] | None) -> CallToolResult:
        list_arguments(arguments)
        scope, not_in_recall = await service.scope()
        text = render_knowledge_bases(scope, service.why_empty(not_in_recall))
        return answer(text, {"knowledge_bases": [kb.as_json() for kb in scope]})

    handlers = {"search_knowledge": search_knowledge, "list_knowledge_bases": list_knowledge_bases}

    async def list_tools(ctx: Any, params: Any) -> ListToolsResult:
        return ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: CallToolRequestParams) -> CallToolResult:
        handler = handlers.get(params.name)
        if handler is None:
            return answer(
                f"No tool {params.name!r} here: this server has {' and '.join(handlers)}.", error=True
            )
        try:
            return await handler(params.arguments)
        except ToolRefused as err:
            return answer(str(err), error=True)

    return Server(
        SERVER_NAME,
        version=_version(),
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def serve_stdio(server: Server[Any]) -> None:
    """Serve ``server`` on stdin and stdout, with the frame filter (``mcp_frames``) in front of the SDK's
    stdio transport: the filter answers the lines it refuses through the transport's own writer, so each
    answer goes out whole, between the SDK's."""
    import anyio
    from mcp.server.stdio import stdio_server
    from mcp.shared.message import SessionMessage
    from mcp.types import JSONRPCError, jsonrpc_message_adapter

    writer: list[Any] = []
    ready = anyio.Event()

    async def answer(response: dict[str, Any]) -> None:
        await ready.wait()
        # A server that is stopping has nobody left to answer.
        with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            await writer[0].send(SessionMessage(JSONRPCError.model_validate(response)))

    def accept(frame: str) -> bool:  # what the transport will parse the frame with
        try:
            jsonrpc_message_adapter.validate_json(frame, by_name=False)
        except ValueError:
            return False
        return True

    with claimed_stdin() as stdin:
        frames = read_frames(partial(anyio.to_thread.run_sync, stdin.readline), answer, accept)
        async with stdio_server(stdin=frames) as (read_stream, write_stream):  # type: ignore[arg-type]
            writer.append(write_stream)
            ready.set()
            await server.run(read_stream, write_stream, server.create_initialization_options())


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
    import anyio

    anyio.run(serve_stdio, server)
    return 0
