"""A stand-in for the desktop service's hook routes, in front of which ``memmy-kb mcp`` is run as an agent
runs it (the SDK's stdio client, only ``MEMMY_KB_HOME`` set).

``StandInService`` serves ``GET /hook/knowledge-bases`` and ``POST /hook/search`` (as ``mcp_service``
describes them) on 127.0.0.1, checks the hook token as the service does (401 for another token, 403
``hook_token_not_allowed`` elsewhere) and refuses ids outside the recall scope (422), so a request that
would widen the scope shows up. ``standing_in`` is a fixture's body: the stand-in serving and the
``MEMMY_KB_HOME`` that names it; ``run_calls`` runs tool calls through the real ``memmy-kb mcp``.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.support.desktop_proof import proof_reply

HOOK_TOKEN = "mkh_standin-token-for-tests"
CLOUD_SECRET = "cloud-login-that-must-never-travel"
MEMMY_KB = str(Path(sys.executable).with_name("memmy-kb"))

SCOPE: list[dict[str, Any]] = [
    {"id": "kb_hand", "name": "Handbook", "owned": True, "owner": None},
    {
        "id": "kb_design",
        "name": "Design notes",
        "owned": False,
        "owner": {"name": "Bob Li", "contact": "b***@example.com"},
    },
    {"id": "kb_notes_1", "name": "Notes", "owned": True, "owner": None},
    {"id": "kb_notes_2", "name": "Notes", "owned": False, "owner": {"name": "Carol", "contact": None}},
]
EXCERPTS = {
    "kb_hand": {"title": "Expenses", "text": "报销需要发票原件。"},
    "kb_design": {"title": "Colours", "text": "The brand blue is #1d4ed8."},
    "kb_notes_1": {"title": "Monday", "text": "Standup at ten."},
    "kb_notes_2": {"title": "Tuesday", "text": "Retro at four."},
}


@dataclass
class StandInService:
    """Stands in for the desktop service's hook routes until they land (see the module's docstring)."""

    token: str = HOOK_TOKEN
    cloud: str = "ok"
    # What the service passes on of a recall refused by the per-user limit (``cloud`` "rate_limited").
    retry_after: int | None = None
    requests: list[dict[str, Any]] = field(default_factory=list)
    port: int = 0

    def answer(self, method: str, path: str, headers: Any, body: bytes) -> tuple[int, dict[str, Any]]:
        # The MCP server asks the service to prove itself first; the stand-in proves it holds the token
        # in the file, so that a bearer it then refuses (``token`` changed) shows the 401's sentence.
        proven = proof_reply(path, {"hook": HOOK_TOKEN}, self.port)
        if proven is not None:
            return 200, proven
        self.requests.append({"method": method, "path": path, "headers": dict(headers), "body": body})
        route = (method, path)
        if headers.get("Authorization") != f"Bearer {self.token}":
            return 401, {"error": {"code": "unauthorized", "message": "unknown token"}}
        if route == ("GET", "/hook/knowledge-bases"):
            return 200, {"knowledge_bases": SCOPE}
        if route != ("POST", "/hook/search"):
            return 403, {"error": {"code": "hook_token_not_allowed", "message": "not with the hook token"}}
        request = json.loads(body)
        if self.cloud != "ok":
            refused: dict[str, Any] = {"excerpts": [], "partial": False, "cloud": self.cloud}
            return 200, refused if self.retry_after is None else {**refused, "retry_after": self.retry_after}
        ids = request.get("knowledge_base_ids")
        in_scope = [kb["id"] for kb in SCOPE]
        if ids is not None and not set(ids) <= set(in_scope):
            return 422, {"error": {"code": "knowledge_base_not_in_scope", "message": "not in scope"}}
        chosen = [kb for kb in SCOPE if ids is None or kb["id"] in ids][: request.get("limit") or 25]
        excerpts = [
            {
                **EXCERPTS[kb["id"]],
                "knowledge_base": {"id": kb["id"], "name": kb["name"]},
                "owner": kb["owner"],
            }
            for kb in chosen
        ]
        return 200, {"excerpts": excerpts, "partial": False, "cloud": "ok"}


def serve(stand_in: StandInService) -> tuple[ThreadingHTTPServer, int]:
    class Handler(BaseHTTPRequestHandler):
        # Kept alive as the service's: the MCP server sends its request on the connection of the proof.
        protocol_version = "HTTP/1.1"

        def _reply(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            status, answer = stand_in.answer(self.command, self.path, self.headers, body)
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = _reply

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    stand_in.port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, server.server_address[1]


def standing_in(tmp_path: Path) -> Iterator[tuple[StandInService, Path]]:
    """A ``StandInService`` serving, and the ``MEMMY_KB_HOME`` whose ``desktop/`` names it."""
    service = StandInService()
    server, port = serve(service)
    state = tmp_path / "home" / "desktop"
    state.mkdir(parents=True)
    (state / "hook-token").write_text(HOOK_TOKEN + "\n")
    (state / "service.json").write_text(
        json.dumps({"port": port, "url": f"http://127.0.0.1:{port}", "pid": 1})
    )
    yield service, state.parent
    server.shutdown()
    server.server_close()


async def _session_calls(
    home: Path, calls: list[tuple[str, dict[str, Any]]], extra_env: dict[str, str]
) -> Any:
    params = StdioServerParameters(
        command=MEMMY_KB, args=["mcp"], env={"MEMMY_KB_HOME": str(home), **extra_env}
    )
    with open(os.devnull, "w") as errlog:  # the server's stderr is not under test here
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            tools = await session.list_tools()
            results = [await session.call_tool(name, arguments) for name, arguments in calls]
    return tools, results


def run_calls(home: Path, *calls: tuple[str, dict[str, Any]], extra_env: dict[str, str] | None = None) -> Any:
    return anyio.run(_session_calls, home, list(calls), extra_env or {})


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content)
