"""What the MCP protocol layer's tests (tests/unit/api/mcp/) share: a server, tools whose behaviour each
test can name, and ``modern``/``legacy``, which build and send a request the way a client of either
protocol generation does."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memmy_kb.api.mcp import (
    HttpRequest,
    HttpResponse,
    InvalidToolArguments,
    ServerInfo,
    Tool,
    ToolOutcome,
    serve,
)

MODERN = "2026-07-28"
SERVER = ServerInfo(
    name="memmy-kb", version="1.2.3", title="Memmy knowledge bases", instructions="Search first."
)
OBJECT_SCHEMA: dict[str, Any] = {"type": "object", "properties": {"query": {"type": "string"}}}


def _echo(arguments: dict[str, Any]) -> ToolOutcome:
    return ToolOutcome(structured={"echo": arguments}, text=json.dumps({"echo": arguments}))


def _refuse(arguments: dict[str, Any]) -> ToolOutcome:
    raise InvalidToolArguments("query must be 1-4000 characters.")


def _rate_limited(arguments: dict[str, Any]) -> ToolOutcome:
    return ToolOutcome(structured=None, text="Too many searches; try again in a minute.", is_error=True)


def _crash(arguments: dict[str, Any]) -> ToolOutcome:
    raise RuntimeError("secret table name memmy-prod-table")


def _tool(name: str, call: Any, output_schema: dict[str, Any] | None = None) -> Tool:
    return Tool(name, name.title(), f"The {name} tool.", OBJECT_SCHEMA, output_schema, call)


# Out of name order on purpose: tools/list sorts them.
TOOLS = (
    _tool("search", _echo, {"type": "object", "properties": {"echo": {"type": "object"}}}),
    _tool("crash", _crash),
    _tool("refuse", _refuse),
    _tool("rate_limited", _rate_limited),
    _tool("名前 tool", _echo),
)

JSON_ACCEPT = "application/json, text/event-stream"


def b64(value: str) -> str:
    return "=?base64?" + base64.b64encode(value.encode()).decode() + "?="


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: dict[str, Any] | None

    @classmethod
    def of(cls, response: HttpResponse) -> Answer:
        return cls(response.status, response.headers, json.loads(response.body) if response.body else None)

    @property
    def result(self) -> dict[str, Any]:
        assert self.body is not None
        assert "result" in self.body, self.body
        found: dict[str, Any] = self.body["result"]
        return found

    @property
    def error(self) -> dict[str, Any]:
        assert self.body is not None
        assert "error" in self.body, self.body
        found: dict[str, Any] = self.body["error"]
        return found


def send(body: bytes, headers: Mapping[str, str], method: str = "POST") -> Answer:
    return Answer.of(serve(HttpRequest(method=method, headers=dict(headers), body=body), TOOLS, SERVER))


def modern_meta(version: str = MODERN) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "test-client", "version": "0"},
    }


def modern_headers(method: str, params: Mapping[str, Any], version: str = MODERN) -> dict[str, str]:
    """The headers a 2026-07-28 client sends: the version, the method and (tools/call) the tool's name."""
    headers = {
        "accept": JSON_ACCEPT,
        "content-type": "application/json",
        "mcp-protocol-version": version,
        "mcp-method": method,
    }
    name = params.get("name")
    if method == "tools/call" and isinstance(name, str):
        headers["mcp-name"] = name if name.isascii() and name == name.strip() else b64(name)
    return headers


def modern(
    method: str, params: Mapping[str, Any] | None = None, *, request_id: Any = 1, **header_changes: str | None
) -> Answer:
    """A 2026-07-28 request; ``header_changes`` (``mcp_name="x"``) replace or, with None, drop a header."""
    params = {**(params or {}), "_meta": modern_meta()}
    headers: dict[str, str] = modern_headers(method, params)
    for name, value in header_changes.items():
        headers.pop(name.replace("_", "-"), None)
        if value is not None:
            headers[name.replace("_", "-")] = value
    body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    return send(json.dumps(body).encode(), headers)


def legacy(
    method: str, params: Mapping[str, Any] | None = None, *, version: str | None = "2025-06-18", **extra: str
) -> Answer:
    """A request of an ``initialize`` revision: no _meta envelope, maybe a version header (2025-06-18 on)."""
    headers = {
        "accept": JSON_ACCEPT,
        "content-type": "application/json",
        **{k.replace("_", "-"): v for k, v in extra.items()},
    }
    if version is not None:
        headers["mcp-protocol-version"] = version
    body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": dict(params or {})}
    return send(json.dumps(body).encode(), headers)
