"""``memmy_kb.api.mcp``'s answers hold to the pinned MCP SDK's wire models (``mcp_types``), for each
protocol version we speak: a result validated and dumped by the SDK's model for its method and version is
the result we sent, so no field of ours is missing, misnamed, of the wrong type or unknown to that
version's schema. The SDK is imported by these tests only; the Lambda never loads it."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp.shared.inbound import encode_header_value
from mcp_types import JSONRPCError, JSONRPCResponse, UnsupportedProtocolVersionErrorData
from mcp_types.methods import serialize_server_result
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from memmy_kb.api.mcp.versions import LEGACY_VERSIONS, MODERN_VERSIONS
from tests.support.mcp_protocol import MODERN, legacy, modern, modern_headers, modern_meta, send

CALLS = [
    {"name": "search", "arguments": {"query": "差旅"}},
    {"name": "rate_limited", "arguments": {}},
]


def _holds(method: str, version: str, result: dict[str, Any]) -> None:
    assert serialize_server_result(method, version, result) == result


def test_the_versions_we_speak_are_versions_the_sdk_knows_in_the_same_era():
    assert set(MODERN_VERSIONS) <= set(MODERN_PROTOCOL_VERSIONS)
    assert set(LEGACY_VERSIONS) <= set(HANDSHAKE_PROTOCOL_VERSIONS)


def test_server_discover_holds_to_the_sdks_discover_result():
    _holds("server/discover", MODERN, modern("server/discover").result)


def test_modern_tools_list_and_calls_hold_to_the_sdks_results():
    _holds("tools/list", MODERN, modern("tools/list").result)
    for params in CALLS:
        _holds("tools/call", MODERN, modern("tools/call", params).result)


@pytest.mark.parametrize("version", LEGACY_VERSIONS)
def test_legacy_answers_hold_to_the_sdks_results_of_their_version(version):
    _holds("initialize", version, legacy("initialize", {"protocolVersion": version}, version=None).result)
    _holds("ping", version, legacy("ping", version=version).result)
    _holds("tools/list", version, legacy("tools/list", version=version).result)
    for params in CALLS:
        _holds("tools/call", version, legacy("tools/call", params, version=version).result)


@pytest.mark.parametrize(
    "answer",
    [
        lambda: modern("tools/list"),
        lambda: modern("server/discover", request_id="abc"),
        lambda: legacy("tools/call", {"name": "search"}),
    ],
)
def test_a_response_envelope_holds_to_the_sdks(answer):
    body = answer().body
    assert (
        JSONRPCResponse.model_validate(body).model_dump(by_alias=True, mode="json", exclude_none=True) == body
    )


@pytest.mark.parametrize(
    "answer",
    [
        lambda: modern("nope"),
        lambda: modern("tools/call", {"name": "search"}, mcp_name="fetch"),
        lambda: modern("tools/call", {"name": "missing"}),
        lambda: legacy("tools/call", {"name": "crash"}),
        lambda: send(b"[]", {"accept": "application/json", "content-type": "application/json"}),
    ],
)
def test_an_error_envelope_holds_to_the_sdks(answer):
    body = answer().body
    dumped = JSONRPCError.model_validate(body).model_dump(by_alias=True, mode="json", exclude_none=True)
    assert dumped == {key: value for key, value in body.items() if value is not None}


def test_the_unsupported_version_data_holds_to_the_sdks():
    params = {"_meta": modern_meta("2099-01-01")}
    headers = {**modern_headers("tools/list", params), "mcp-protocol-version": "2099-01-01"}
    error = send(
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params}).encode(), headers
    ).error
    assert (
        UnsupportedProtocolVersionErrorData.model_validate(error["data"]).model_dump(mode="json")
        == error["data"]
    )


@pytest.mark.parametrize("name", ["search", "名前 tool", " padded ", "=?base64?literal?=", "tab\there"])
def test_the_sdks_header_encoding_of_a_name_is_what_we_decode(name):
    answer = modern("tools/call", {"name": name}, mcp_name=encode_header_value(name))
    # An unknown tool is -32602: the headers passed (a mismatch would be -32020).
    assert (answer.error["code"] if "error" in (answer.body or {}) else None) in (None, -32602)


def test_importing_the_protocol_layer_loads_no_sdk_no_pydantic_and_no_boto3():
    probe = (
        "import sys, memmy_kb.api.mcp\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in {'pydantic', 'boto3', 'mcp', 'mcp_types', 'starlette', 'httpx'}))"
    )
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout  # noqa: S603
    assert loaded.strip() == "[]"


def test_the_module_map_lists_exactly_the_modules_of_the_package():
    root = Path(__file__).resolve().parents[4]
    text = (root / "docs" / "architecture.md").read_text(encoding="utf-8").splitlines()
    start = text.index("### MCP protocol: `memmy_kb.api.mcp`") + 1
    end = next(i for i in range(start, len(text)) if text[i].startswith("#"))
    listed = {match.group(1) for line in text[start:end] if (match := re.match(r"^- `([^`]+)`", line))}
    package = root / "layers" / "core" / "python" / "memmy_kb" / "api" / "mcp"
    assert listed == {path.stem for path in package.glob("*.py") if path.stem != "__init__"}
