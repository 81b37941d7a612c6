"""The endpoint's unit tests run on the protocol layer's interface; until ``memmy_kb.api.mcp`` is there,
on the stand-in (``tests.support.mcp_protocol_stand_in``)."""

from __future__ import annotations

from tests.support.mcp_protocol_stand_in import install

install()
