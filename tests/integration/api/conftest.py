"""Every route's tests reach ``POST /mcp`` too: the protocol layer's interface (its stand-in until
``memmy_kb.api.mcp`` is there)."""

from __future__ import annotations

from tests.support.mcp_protocol_stand_in import install

install()
