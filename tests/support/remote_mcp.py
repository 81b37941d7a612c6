"""An agent off the desktop reaching the cloud's remote MCP endpoint on the local stack: its token, as
``memmy-local token USER --mcp`` prints it, and one MCP request (``initialize``, as a 2025-06-18 client
opens), which makes the person's connection for its client (docs/desktop.md, "Connected apps")."""

from __future__ import annotations

import subprocess
from pathlib import Path

import httpx

from tests.support.stack import LOCAL_CLI

PROTOCOL_VERSION = "2025-06-18"


def mcp_token(data_dir: Path, user_id: str) -> str:
    """An MCP access token of ``user_id``, signed with the key of the stack whose data dir is ``data_dir``."""
    done = subprocess.run(  # noqa: S603 - our own CLI with fixed arguments
        [*LOCAL_CLI, "token", user_id, "--mcp", "--data-dir", str(data_dir)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def call_mcp(api_url: str, token: str) -> httpx.Response:
    """One MCP request to ``api_url``'s remote endpoint with ``token``: ``initialize``."""
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "memmy-e2e-agent", "version": "1"},
        },
    }
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": PROTOCOL_VERSION,
    }
    return httpx.post(f"{api_url}/mcp", json=message, headers=headers, timeout=30)
