"""The ids ``search`` gives its results and ``fetch`` resolves: ``<search_id>.<n>``, the n-th hit of a
search whose hits are stored for an hour under the caller (``memmy_kb.domain.ports.mcp_hits``)."""

from __future__ import annotations

import os
import re

HITS_TTL_SECONDS = 3600
_SEARCH_ID = re.compile(r"^s[0-9a-f]{24}$")


def new_search_id() -> str:
    """A search's id: 96 random bits (from ``os.urandom``, as the service's other ids)."""
    return "s" + os.urandom(12).hex()


def hit_id(search_id: str, n: int) -> str:
    return f"{search_id}.{n}"


def parse_hit_id(value: str) -> tuple[str, int] | None:
    """The search id and the hit's position of a hit id; None for anything else."""
    search_id, dot, n = value.partition(".")
    if not dot or not _SEARCH_ID.match(search_id) or not n.isascii() or not n.isdigit() or len(n) > 3:
        return None
    return search_id, int(n)
