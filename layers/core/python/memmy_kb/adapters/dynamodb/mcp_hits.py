"""The remote MCP endpoint's stored search hits in DynamoDB: ``MCPHITS#<user>/<search_id>``, one item per
search, its hits as one JSON attribute, gone after an hour (``expires_at``: the table's TTL; reads skip an
expired item, since TTL deletes late).

Implements ``memmy_kb.domain.ports.mcp_hits.HitStore``. The partition is the user's own but not
``USER#<user>``: the recall Query reads that one on every turn, and these items are many and large (and
IAM scopes the function's writes by partition key).
"""

from __future__ import annotations

import json

from memmy_kb.adapters.dynamodb.keys import mcp_hits_key
from memmy_kb.adapters.dynamodb.table import DynamoTable, dump
from memmy_kb.domain.ports.mcp_hits import StoredHit


class DynamoHitStore:
    def __init__(self, table: DynamoTable) -> None:
        self._table = table

    def put_hits(self, user_id: str, search_id: str, hits: list[StoredHit], *, expires_at: int) -> None:
        body = [{"title": h.title, "text": h.text, "metadata": h.metadata, "kb_ids": list(h.kb_ids)} for h in hits]
        item = {
            **mcp_hits_key(user_id, search_id),
            "type": "mcp_hits",
            "hits": json.dumps(body, ensure_ascii=False, separators=(",", ":")),
            "expires_at": expires_at,
        }
        self._table.client.put_item(TableName=self._table.name, Item=dump(item))

    def get_hits(self, user_id: str, search_id: str, *, now: int) -> list[StoredHit] | None:
        item = self._table.get(mcp_hits_key(user_id, search_id))
        if item is None or int(item.get("expires_at", 0)) <= now:
            return None
        return [
            StoredHit(title=h["title"], text=h["text"], metadata=h["metadata"], kb_ids=tuple(h["kb_ids"]))
            for h in json.loads(item["hits"])
        ]
