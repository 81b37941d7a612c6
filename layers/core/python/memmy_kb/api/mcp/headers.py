"""The request-metadata headers of MCP 2026-07-28 (Streamable HTTP, "Request Metadata"): every POST mirrors
its protocol version, method and (for the name-bearing methods) the name it acts on into headers, so that a
gateway can route on them; the server checks each against the body, so that the gateway and the server
cannot act on two different requests. A mismatch, a missing header or a malformed one is ``HeaderMismatch``
(-32020, HTTP 400).

``Mcp-Name`` may carry its value as ``=?base64?<UTF-8 in base64>?=`` (names outside printable ASCII, or
with edge spaces): it is decoded before the comparison, and a malformed sentinel never matches.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from typing import Any, Final

from memmy_kb.api.mcp.wire import HEADER_MISMATCH, RpcFailure, RpcRequest

PROTOCOL_VERSION_HEADER: Final = "mcp-protocol-version"
METHOD_HEADER: Final = "mcp-method"
NAME_HEADER: Final = "mcp-name"

# The methods whose params field is mirrored as ``Mcp-Name`` (we serve only tools/call of them).
NAME_BEARING_METHODS: Final = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}

_SENTINEL: Final = re.compile(r"^=\?base64\?(?P<payload>.*)\?=$", re.S)
# RFC 9110 field values: visible ASCII, space and tab.
_FIELD_VALUE: Final = re.compile(r"^[\t\x20-\x7e]*$")


def decode_header_value(value: str) -> str | None:
    """A header's value, its ``=?base64?…?=`` form decoded; None for a malformed sentinel or bad characters.

    Only canonical base64 of UTF-8 decodes (what a client's encoder emits), so two spellings of one value
    cannot both pass.
    """
    if not _FIELD_VALUE.match(value):
        return None
    match = _SENTINEL.match(value)
    if match is None:
        return value
    payload = match.group("payload")
    try:
        decoded = base64.b64decode(payload, validate=True)
        text = decoded.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    if base64.b64encode(decoded).decode("ascii") != payload:
        return None
    return text


def _mismatch(message: str) -> RpcFailure:
    return RpcFailure(HEADER_MISMATCH, message)


def _field(headers: Mapping[str, str], name: str) -> str | None:
    """A header's value without the optional whitespace around it (RFC 9110, 5.5: not part of the value)."""
    value = headers.get(name)
    return None if value is None else value.strip(" \t")


def check_request_headers(headers: Mapping[str, str], request: RpcRequest, body_version: Any) -> None:
    """Refuse (RpcFailure -32020) a modern request whose headers are missing or disagree with its body."""
    version = _field(headers, PROTOCOL_VERSION_HEADER)
    if version is None:
        raise _mismatch("The MCP-Protocol-Version header is missing.")
    if version != body_version:
        raise _mismatch(
            "The MCP-Protocol-Version header does not match the protocol version in the request's _meta."
        )
    method = _field(headers, METHOD_HEADER)
    if method is None:
        raise _mismatch("The Mcp-Method header is missing.")
    if method != request.method:
        raise _mismatch("The Mcp-Method header does not match the request's method.")
    name_field = NAME_BEARING_METHODS.get(request.method)
    if name_field is None or name_field not in request.params:
        return
    raw = _field(headers, NAME_HEADER)
    if raw is None:
        raise _mismatch(f"The Mcp-Name header is missing (it mirrors params.{name_field}).")
    if decode_header_value(raw) != request.params[name_field]:
        raise _mismatch(f"The Mcp-Name header does not match params.{name_field}.")
