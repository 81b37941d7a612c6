"""What one recall is asked (``RecallQuestion``) and how this deployment recalls (``RecallConfig``, built
once from the settings): the two values the recall call chain passes down (docs/architecture.md, "Recall").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memmy_kb.domain.recall.context_block import DEFAULT_MAX_CHARS, SizeLimit

if TYPE_CHECKING:
    from memmy_kb.settings import Settings

DEFAULT_RECALL_LIMIT = 9
# Attribution: "by_file" searches each MemOS backend once for the whole scope and names every excerpt's file
# (and so its KB) from its text; "per_kb" searches each KB alone (up to ``max_searches`` searches), naming
# files too; "combined" searches the scope at once and names nothing.
BY_FILE = "by_file"
PER_KB = "per_kb"
COMBINED = "combined"
ATTRIBUTIONS = (BY_FILE, PER_KB, COMBINED)
DEFAULT_MAX_SEARCHES = 4
DEFAULT_MAX_PER_KB = 5
DEFAULT_SEARCH_SECONDS = 2.5


@dataclass(frozen=True)
class RecallConfig:
    """``attribution`` (``by_file``, ``per_kb`` or ``combined``), at most ``max_searches`` MemOS searches and
    ``max_per_kb`` excerpts from one KB, ``search_seconds`` for the searches together, and the block's cap
    in characters."""

    attribution: str = BY_FILE
    max_searches: int = DEFAULT_MAX_SEARCHES
    max_per_kb: int = DEFAULT_MAX_PER_KB
    search_seconds: float = DEFAULT_SEARCH_SECONDS
    max_context_chars: int = DEFAULT_MAX_CHARS

    def __post_init__(self) -> None:
        if self.attribution not in ATTRIBUTIONS:
            raise ValueError(f"attribution must be one of {ATTRIBUTIONS}, not {self.attribution!r}")

    @classmethod
    def from_settings(cls, settings: Settings) -> RecallConfig:
        return cls(
            attribution=settings.recall_attribution,
            max_searches=settings.recall_max_searches,
            max_per_kb=settings.recall_max_per_kb,
            search_seconds=settings.recall_memos_timeout_seconds,
            max_context_chars=settings.recall_context_max_chars,
        )


@dataclass(frozen=True)
class RecallQuestion:
    """The caller's ``query``, at most ``limit`` excerpts, the KBs it narrows the scope to (None: the
    whole scope) and the asking agent's own limit on the block (None: the service's cap only)."""

    user_id: str
    query: str
    limit: int = DEFAULT_RECALL_LIMIT
    knowledge_base_ids: Sequence[str] | None = None
    context_limit: SizeLimit | None = None
