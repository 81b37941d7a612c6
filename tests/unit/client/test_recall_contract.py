"""The client's copy of the recall request's caps (``memmy_kb_client.recall_contract``) is the cloud's:
the client may not import the core, so this test reads both."""

from __future__ import annotations

from memmy_kb.api.models import recall as cloud
from memmy_kb_client import recall_contract as client


def test_the_clients_recall_caps_are_the_clouds():
    assert (client.MAX_QUERY_CHARS, client.MAX_RECALL_LIMIT, client.MAX_RECALL_KBS) == (
        cloud.MAX_QUERY_LENGTH,
        cloud.MAX_RECALL_LIMIT,
        cloud.MAX_RECALL_KBS,
    )


def test_each_agents_context_limit_is_one_the_cloud_takes():
    for limit in client.CONTEXT_LIMITS.values():
        assert cloud.ContextLimit.model_validate(limit).model_dump() == limit
    assert client.recall_body(" q ", "codex") == {"query": "q", "context_limit": {"unit": "utf8_bytes", "max": 9000}}
    assert client.recall_body("q", "gemini") == client.recall_body("q") == {"query": "q"}
