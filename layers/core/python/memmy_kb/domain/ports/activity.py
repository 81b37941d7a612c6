"""The ports of each KB's activity log and of the windowed counts the rate limits keep."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    # Only signatures name these: a function taking a port imports no model for it.
    from memmy_kb.records import (
        ActivityRecord,
    )


class ActivityLog(Protocol):
    """Each KB's activity log, newest first (implemented in ``memmy_kb.adapters.dynamodb.activity``)."""

    def put_activity(self, record: ActivityRecord) -> None: ...

    def query_activity(
        self, kb_id: str, *, limit: int, cursor: str | None, now: int
    ) -> tuple[list[ActivityRecord], str | None]: ...


class RateCounters(Protocol):
    """Windowed counts for the rate limits (one conditional update per event)."""

    def count_in_window(
        self, name: str, window: int, *, cap: int, expires_at: int
    ) -> tuple[int, int] | None: ...
