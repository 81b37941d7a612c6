"""The KB list's one batched read (``batch_get_kbs_and_profiles``) against a scripted DynamoDB client:
at most 100 keys a request, and the keys DynamoDB leaves unprocessed asked again until none are left
(moto never leaves any, so this is where that path is exercised)."""

from __future__ import annotations

from typing import Any

from memmy_kb.adapters.dynamodb.keys import kb_key, profile_key
from memmy_kb.adapters.dynamodb.knowledge_bases import DynamoKnowledgeBaseStore
from memmy_kb.adapters.dynamodb.table import DynamoTable, dump, load
from tests.support.factories import kb_record, profile_record

TABLE = "memmy"


class ThrottledClient:
    """Answers each BatchGetItem with its first two keys and leaves the rest unprocessed."""

    def __init__(self, items: dict[tuple[str, str], dict[str, Any]]) -> None:
        self.items = items
        self.requests: list[int] = []

    def batch_get_item(self, RequestItems: dict[str, Any]) -> dict[str, Any]:
        request = RequestItems[TABLE]
        assert request["ConsistentRead"] is True
        keys = [load(k) for k in request["Keys"]]
        self.requests.append(len(keys))
        assert len(keys) <= 100
        served, rest = keys[:2], keys[2:]
        found = [dump(self.items[(k["PK"], k["SK"])]) for k in served if (k["PK"], k["SK"]) in self.items]
        answer: dict[str, Any] = {"Responses": {TABLE: found}}
        if rest:
            answer["UnprocessedKeys"] = {TABLE: {"Keys": [dump(k) for k in rest], "ConsistentRead": True}}
        return answer


def test_given_unprocessed_keys_and_more_than_100_when_listing_then_every_item_comes_back_once() -> None:
    kbs = [kb_record(f"kb_{i:03d}", owner_id=f"u{i % 3}") for i in range(104)]
    owners = [profile_record(f"u{i}") for i in range(3)]
    items = {(k["PK"], k["SK"]): {**k, **r.model_dump()} for r in kbs for k in [kb_key(r.kb_id)]}
    items.update({(k["PK"], k["SK"]): {**k, **p.model_dump()} for p in owners for k in [profile_key(p.user_id)]})
    client = ThrottledClient(items)
    store = DynamoKnowledgeBaseStore(DynamoTable(TABLE, client))

    found_kbs, found_profiles = store.batch_get_kbs_and_profiles(
        [r.kb_id for r in kbs] + ["kb_missing"], ["u0", "u1", "u2", "u0", "nobody"]
    )

    assert found_kbs == {r.kb_id: r for r in kbs}
    assert found_profiles == {p.user_id: p for p in owners}
    # 109 keys: a batch of 100 and one of 9, each asked again for what was left unprocessed.
    assert client.requests == [*range(100, 0, -2), 9, 7, 5, 3, 1]
