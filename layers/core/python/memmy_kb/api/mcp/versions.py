"""The protocol versions the endpoint speaks: 2026-07-28 statelessly (per-request ``_meta``), and the three
``initialize`` revisions before it for clients that have not moved on (docs/architecture.md, "Module map").
"""

from __future__ import annotations

from typing import Final

from memmy_kb.api.mcp.wire import UNSUPPORTED_PROTOCOL_VERSION, RpcFailure

MODERN_VERSIONS: Final = ("2026-07-28",)
# Newest first: an ``initialize`` asking for a version we do not speak is offered the first.
LEGACY_VERSIONS: Final = ("2025-11-25", "2025-06-18", "2025-03-26")
# What server/discover and an UnsupportedProtocolVersionError list: a client that sees a legacy version
# here knows it may fall back to ``initialize``.
SUPPORTED_VERSIONS: Final = (*MODERN_VERSIONS, *LEGACY_VERSIONS)


def unsupported_version(requested: str) -> RpcFailure:
    """UnsupportedProtocolVersionError (-32022), naming what we support and what was asked."""
    return RpcFailure(
        UNSUPPORTED_PROTOCOL_VERSION,
        f"Unsupported protocol version {requested!r}: this server speaks {', '.join(SUPPORTED_VERSIONS)}.",
        data={"supported": list(SUPPORTED_VERSIONS), "requested": requested},
    )
