"""A stand-in for three model APIs on 127.0.0.1 that logs every request, for running the real agents offline.

* Anthropic Messages (``POST /v1/messages``, Claude Code): streaming SSE or one JSON message;
* OpenAI Responses (``POST .../responses``, Codex CLI): streaming SSE;
* Gemini (``POST /v1beta/models/MODEL:generateContent`` and ``:streamGenerateContent?alt=sse``, Gemini CLI).

Its one script, the same in each API's format: when a request offers the MCP tool ``FakeModels.tool``
(``search_knowledge`` unless told otherwise; whatever prefix or namespace the agent gives it, see
``is_tool``) and carries no result of it yet, the answer asks for that tool with
``{"query": FakeModels.query}`` (Claude Code, which defers MCP tools, is first asked to call its
``ToolSearch``); any other request gets a short text answer (a request
that wants JSON gets a JSON object). Every request is kept, its body parsed, in ``requests``; the
helpers below find the user's turn and the tool results in each API's shape, for the tests to assert on.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from memmy_local.serving import serve_in_background, stop_serving

TOOL_SUFFIX = "search_knowledge"  # the desktop MCP server's tool (``memmy-kb mcp``)
# Claude Code's tool that loads the schemas of deferred tools (MCP tools among them).
DEFERRED_TOOLS = "ToolSearch"
ANSWER = "Here is what I found."
# What a request asking for a JSON answer gets (Gemini CLI's routing and next-speaker checks).
JSON_ANSWER = {"reasoning": "The answer is complete.", "next_speaker": "user", "model_choice": "flash"}


@dataclass(frozen=True)
class Logged:
    api: str  # "anthropic", "openai" or "gemini"; "other" for a path none of them has
    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class FakeModels:
    """The server's log and its script; ``url`` once started."""

    query: str
    tool: str = TOOL_SUFFIX
    url: str = ""
    requests: list[Logged] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _calls: int = 0
    _issued: dict[str, str] = field(default_factory=dict)

    def log(self, entry: Logged) -> None:
        with self._lock:
            self.requests.append(entry)

    def call_id(self, tool: str) -> str:
        """A new call id for a call of ``tool`` the fake asks for."""
        with self._lock:
            self._calls += 1
            call = f"call_memmy_{self._calls}"
            self._issued[call] = tool
            return call

    def asked(self, answered: set[str], tool: str) -> bool:
        """Whether one of the ``answered`` call ids (bare, or behind an API's prefix) is a call of the tool
        ``tool`` (see ``is_tool``) the fake asked for."""
        with self._lock:
            return any(
                is_tool(
                    self._issued.get(call.split("_", 1)[-1] if call.startswith("toolu_") else call, ""), tool
                )
                for call in answered
            )

    def of(self, api: str) -> list[Logged]:
        with self._lock:
            return [entry for entry in self.requests if entry.api == api]


def is_tool(name: str, tool: str) -> bool:
    """Whether ``name``, as an agent offers it to its model, is our MCP tool ``tool``: bare, or behind the
    agent's prefix or namespace (``mcp__memmy-kb__search``, ``memmy-kb/search``, ``mcp_memmy-kb_search``),
    and never another tool that merely ends the same way (Gemini CLI's ``google_web_search``)."""
    if name == tool or name.endswith(("__" + tool, "/" + tool)):
        return True
    return name.endswith("_" + tool) and "memmy" in name


def _tool_name(names: list[str], tool: str) -> str | None:
    return next((name for name in names if is_tool(name, tool)), None)


# -- Anthropic Messages -----------------------------------------------------------------------------------


def anthropic_tools(body: dict[str, Any]) -> list[str]:
    return [str(tool.get("name")) for tool in body.get("tools") or [] if isinstance(tool, dict)]


def anthropic_blocks(body: dict[str, Any], role: str) -> Iterator[dict[str, Any]]:
    for message in body.get("messages") or []:
        if message.get("role") != role:
            continue
        content = message.get("content")
        if isinstance(content, str):
            yield {"type": "text", "text": content}
        else:
            yield from (block for block in content or [] if isinstance(block, dict))


def anthropic_tool_results(body: dict[str, Any]) -> list[str]:
    return [
        json.dumps(block.get("content"), ensure_ascii=False)
        for block in anthropic_blocks(body, "user")
        if block.get("type") == "tool_result"
    ]


def anthropic_user_text(body: dict[str, Any]) -> str:
    """The text of the turn's messages: the user's, and the system messages among them (where Claude Code
    puts what a ``UserPromptSubmit`` hook printed)."""
    blocks = [*anthropic_blocks(body, "user"), *anthropic_blocks(body, "system")]
    return "\n".join(str(block.get("text", "")) for block in blocks if block.get("type") == "text")


def _anthropic_reply(models: FakeModels, body: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
    offered = anthropic_tools(body)
    tool = _tool_name(offered, models.tool)
    answered = {
        str(block.get("tool_use_id"))
        for block in anthropic_blocks(body, "user")
        if block.get("type") == "tool_result"
    }
    wanted: tuple[str, dict[str, Any]] | None = None
    if models.asked(answered, models.tool):
        wanted = None
    elif tool is not None:
        wanted = tool, {"query": models.query}
    elif DEFERRED_TOOLS in offered and not models.asked(answered, DEFERRED_TOOLS):
        # Claude Code defers MCP tools: their schemas come from its ToolSearch tool first.
        wanted = DEFERRED_TOOLS, {"query": models.tool}
    if wanted is None:
        return [{"type": "text", "text": ANSWER}], "end_turn"
    call = models.call_id(wanted[0])
    return [{"type": "tool_use", "id": f"toolu_{call}", "name": wanted[0], "input": wanted[1]}], "tool_use"


def _anthropic_events(
    content: list[dict[str, Any]], stop: str, model: str
) -> Iterator[tuple[str, dict[str, Any]]]:
    usage = {"input_tokens": 10, "output_tokens": 5}
    message: dict[str, Any] = {
        "id": "msg_memmy",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    yield "message_start", {"type": "message_start", "message": message}
    for index, block in enumerate(content):
        if block["type"] == "tool_use":
            start = {**block, "input": {}}
            delta = {
                "type": "input_json_delta",
                "partial_json": json.dumps(block["input"], ensure_ascii=False),
            }
        else:
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": start}
        yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": 5},
        },
    )
    yield "message_stop", {"type": "message_stop"}


# -- OpenAI Responses -------------------------------------------------------------------------------------


def openai_tools(body: dict[str, Any]) -> list[str]:
    """Function names offered; one inside a namespace (``{"type": "namespace", "name": NS, "tools": [...]}``,
    as Codex CLI offers MCP tools) as ``NS/NAME``."""
    names: list[str] = []
    for tool in body.get("tools") or []:
        if not isinstance(tool, dict):
            continue
        if isinstance(tool.get("tools"), list):
            names += [
                f"{tool.get('name')}/{inner.get('name')}"
                for inner in tool["tools"]
                if isinstance(inner, dict)
            ]
        elif "name" in tool:
            names.append(str(tool["name"]))
    return names


def openai_items(body: dict[str, Any]) -> list[dict[str, Any]]:
    items = body.get("input")
    if isinstance(items, str):
        return [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": items}]}]
    return [item for item in items or [] if isinstance(item, dict)]


def openai_tool_results(body: dict[str, Any]) -> list[str]:
    return [
        json.dumps(item.get("output"), ensure_ascii=False)
        for item in openai_items(body)
        if item.get("type") == "function_call_output"
    ]


def openai_text(body: dict[str, Any], roles: tuple[str, ...] = ("user", "developer")) -> str:
    texts = []
    for item in openai_items(body):
        if item.get("type", "message") == "message" and item.get("role") in roles:
            content = item.get("content")
            parts = [{"text": content}] if isinstance(content, str) else content or []
            texts += [str(part.get("text", "")) for part in parts if isinstance(part, dict)]
    return "\n".join(texts)


def _openai_events(models: FakeModels, body: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    tool = _tool_name(openai_tools(body), models.tool)
    if tool is not None and not openai_tool_results(body):
        call = models.call_id(tool)
        namespace, _, name = tool.rpartition("/")
        item: dict[str, Any] = {
            "type": "function_call",
            "id": f"fc_{call}",
            "call_id": call,
            "name": name,
            "arguments": json.dumps({"query": models.query}, ensure_ascii=False),
            "status": "completed",
            **({"namespace": namespace} if namespace else {}),
        }
    else:
        item = {
            "type": "message",
            "id": "msg_memmy",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": ANSWER, "annotations": []}],
        }
    response = {"id": "resp_memmy", "object": "response", "status": "in_progress", "output": []}
    yield "response.created", {"type": "response.created", "sequence_number": 0, "response": response}
    yield (
        "response.output_item.added",
        {"type": "response.output_item.added", "sequence_number": 1, "output_index": 0, "item": item},
    )
    yield (
        "response.output_item.done",
        {"type": "response.output_item.done", "sequence_number": 2, "output_index": 0, "item": item},
    )
    usage = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 15,
    }
    done = {**response, "status": "completed", "output": [item], "usage": usage}
    yield "response.completed", {"type": "response.completed", "sequence_number": 3, "response": done}


# -- Gemini -----------------------------------------------------------------------------------------------


def gemini_tools(body: dict[str, Any]) -> list[str]:
    return [
        str(declaration.get("name"))
        for tool in body.get("tools") or []
        if isinstance(tool, dict)
        for declaration in tool.get("functionDeclarations") or []
        if isinstance(declaration, dict)
    ]


def gemini_parts(body: dict[str, Any], role: str) -> Iterator[dict[str, Any]]:
    for content in body.get("contents") or []:
        if isinstance(content, dict) and content.get("role", "user") == role:
            yield from (part for part in content.get("parts") or [] if isinstance(part, dict))


def gemini_tool_results(body: dict[str, Any]) -> list[str]:
    return [
        json.dumps(part["functionResponse"], ensure_ascii=False)
        for part in gemini_parts(body, "user")
        if "functionResponse" in part
    ]


def gemini_user_text(body: dict[str, Any]) -> str:
    return "\n".join(str(part["text"]) for part in gemini_parts(body, "user") if "text" in part)


def _gemini_reply(models: FakeModels, body: dict[str, Any]) -> dict[str, Any]:
    tool = _tool_name(gemini_tools(body), models.tool)
    config = body.get("generationConfig") or body.get("config") or {}
    part: dict[str, Any]
    if tool is not None and not gemini_tool_results(body):
        part = {"functionCall": {"name": tool, "args": {"query": models.query}}}
    elif config.get("responseMimeType") == "application/json" or config.get("responseJsonSchema"):
        part = {"text": json.dumps(JSON_ANSWER)}
    else:
        part = {"text": ANSWER}
    return {
        "candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
        "modelVersion": "fake",
    }


# -- The server -------------------------------------------------------------------------------------------

_GEMINI_PATH = re.compile(r"^/v1(?:beta|alpha|)/models/([^/:]+):(\w+)")


class _Handler(BaseHTTPRequestHandler):
    server_version = "fake-models/1"
    models: FakeModels

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the test reads the log kept in ``models``

    def do_GET(self) -> None:
        self.models.log(Logged("other", "GET", self.path, dict(self.headers), None))
        self._json({"error": {"message": "not here"}}, 404)

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = raw.decode("utf-8", "replace")
        path = self.path.split("?", 1)[0]
        gemini = _GEMINI_PATH.match(path)
        if path.endswith("/messages"):
            self._log("anthropic", body)
            content, stop = _anthropic_reply(self.models, body)
            model = str(body.get("model", "claude"))
            if body.get("stream"):
                self._sse(_anthropic_events(content, stop, model), named=True)
            else:
                self._json(
                    {
                        "id": "msg_memmy",
                        "type": "message",
                        "role": "assistant",
                        "model": model,
                        "content": content,
                        "stop_reason": stop,
                        "stop_sequence": None,
                        "usage": {"input_tokens": 10, "output_tokens": 5},
                    }
                )
        elif path.endswith("/responses"):
            self._log("openai", body)
            self._sse(_openai_events(self.models, body), named=True)
        elif gemini is not None:
            self._log("gemini", body)
            method = gemini.group(2)
            if method == "streamGenerateContent":
                self._sse(iter([("", _gemini_reply(self.models, body))]), named=False)
            else:
                self._json(_gemini_reply(self.models, body))
        else:
            self._log("other", body)
            self._json({"error": {"message": "not here"}}, 404)

    def _log(self, api: str, body: Any) -> None:
        self.models.log(Logged(api, "POST", self.path, dict(self.headers), body))

    def _json(self, payload: Any, status: int = 200) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _sse(self, events: Iterator[tuple[str, dict[str, Any]]], *, named: bool) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        for name, data in events:
            head = f"event: {name}\n" if named else ""
            self.wfile.write(f"{head}data: {json.dumps(data, ensure_ascii=False)}\n\n".encode())
            self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True


def serve(models: FakeModels) -> Iterator[FakeModels]:
    """Serve ``models`` on 127.0.0.1 (a free port) for the ``with`` block or generator fixture using it."""
    handler = type("Handler", (_Handler,), {"models": models})
    server = _Server(("127.0.0.1", 0), handler)
    thread = serve_in_background(server, "fake-models")
    models.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield models
    finally:
        stop_serving(server, thread)
