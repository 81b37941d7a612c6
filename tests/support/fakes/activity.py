"""``ActivityLog`` and ``RateCounters`` in memory, on the shared ``FakeTable``."""

from __future__ import annotations

from memmy_kb.records import ActivityRecord
from tests.support.fakes.table import FakeTable


class FakeActivityLog:
    """``ActivityLog`` as ``memmy_kb.adapters.dynamodb.activity.DynamoActivityLog`` (cursor: the last sort key)."""

    def __init__(self, table: FakeTable | None = None) -> None:
        self.table = table if table is not None else FakeTable()

    def put_activity(self, record: ActivityRecord) -> None:
        self.table.log(record)()

    def query_activity(
        self, kb_id: str, *, limit: int, cursor: str | None, now: int
    ) -> tuple[list[ActivityRecord], str | None]:
        entries = sorted(
            ((sk, r) for (kid, sk), r in self.table.activity.items() if kid == kb_id and r.expires_at > now),
            key=lambda pair: pair[0],
            reverse=True,
        )
        start = _fake_cursor_sk(cursor, kb_id)
        if start is not None:
            entries = [(sk, r) for sk, r in entries if sk < start]
        page = entries[:limit]
        more = len(entries) > limit
        next_cursor = _fake_cursor(kb_id, page[-1][0]) if more and page else None
        return [r.model_copy(deep=True) for _, r in page], next_cursor


def _fake_cursor(kb_id: str, sk: str) -> str:
    import base64
    import json

    return base64.urlsafe_b64encode(json.dumps({"kb": kb_id, "sk": sk}, sort_keys=True).encode()).decode()


def _fake_cursor_sk(cursor: str | None, kb_id: str) -> str | None:
    import base64
    import json

    if not cursor:
        return None
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor.encode()))
    except (ValueError, UnicodeError):
        return None
    if isinstance(data, dict) and data.get("kb") == kb_id and isinstance(data.get("sk"), str):
        return str(data["sk"])
    return None


class FakeRateCounters:
    """``RateCounters`` as ``memmy_kb.adapters.dynamodb.activity.DynamoRateCounters``."""

    def __init__(self, table: FakeTable | None = None) -> None:
        self.table = table if table is not None else FakeTable()

    def count_in_window(self, name: str, window: int, *, cap: int, expires_at: int) -> tuple[int, int] | None:
        counts = self.table.counters.setdefault(name, {})
        current = counts.get(f"w{window}", 0)
        if current >= cap:
            return None
        counts[f"w{window}"] = current + 1
        counts.pop(f"w{window - 2}", None)
        return current + 1, counts.get(f"w{window - 1}", 0)
