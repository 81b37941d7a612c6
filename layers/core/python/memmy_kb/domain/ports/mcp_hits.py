"""The port of the remote MCP endpoint's stored search hits: what ``fetch`` may return for one hour
after a ``search`` (docs/architecture.md, "The remote MCP endpoint")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class StoredHit:
    """One result of a search as ``fetch`` returns it, and the KBs the caller must still read for it to be
    returned (its KB, or every KB it may come from)."""

    title: str
    text: str
    metadata: dict[str, Any]
    kb_ids: tuple[str, ...]


class HitStore(Protocol):
    """One item per search (implemented in ``memmy_kb.adapters.dynamodb.mcp_hits``)."""

    def put_hits(self, user_id: str, search_id: str, hits: list[StoredHit], *, expires_at: int) -> None: ...

    def get_hits(self, user_id: str, search_id: str, *, now: int) -> list[StoredHit] | None:
        """The search's hits (a consistent read); None when it is unknown or expired at ``now``."""
        ...
