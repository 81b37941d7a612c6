"""How the DynamoDB adapter reads a cancelled transaction: only a failed condition is an answer."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from botocore.exceptions import ClientError

from memmy_kb.adapters.dynamodb.knowledge_bases import DynamoKnowledgeBaseStore
from memmy_kb.adapters.dynamodb.table import DynamoTable, TransactionRefused
from memmy_kb.domain.storage import AlreadyExists
from memmy_kb.records import GrantRecord
from tests.support.factories import activity_for, uncapped_daily


def cancelled(*codes: str) -> ClientError:
    return ClientError(
        {
            "Error": {"Code": "TransactionCanceledException", "Message": "cancelled"},
            "CancellationReasons": [{"Code": code} for code in codes],
        },
        "TransactWriteItems",
    )


class ScriptedClient:
    """Answers each transact_write_items with the next scripted outcome (an exception or None)."""

    def __init__(self, *outcomes: Exception | None) -> None:
        self.outcomes = list(outcomes)
        self.tokens: list[str] = []
        self.deleted: list[Any] = []

    def transact_write_items(self, TransactItems: list, ClientRequestToken: str) -> dict:
        self.tokens.append(ClientRequestToken)
        outcome = self.outcomes.pop(0)
        if outcome is not None:
            raise outcome
        return {}

    def delete_item(self, **kwargs: Any) -> dict:
        self.deleted.append(kwargs["Key"])
        return {}


def kb_store(client: ScriptedClient) -> DynamoKnowledgeBaseStore:
    return DynamoKnowledgeBaseStore(DynamoTable("t", client))


@pytest.fixture(autouse=True)
def _no_sleep(monkeypatch):
    monkeypatch.setattr("memmy_kb.adapters.dynamodb.table.time.sleep", lambda _: None)


def test_conflicts_and_throttling_are_retried_under_one_token():
    client = ScriptedClient(
        cancelled("None", "TransactionConflict"), cancelled("ThrottlingError", "None"), None
    )
    DynamoTable("t", client).transact([{}, {}])
    assert len(client.tokens) == 3
    assert len(set(client.tokens)) == 1


def test_contention_that_lasts_is_raised_not_mistaken_for_an_answer():
    client = ScriptedClient(*[cancelled("None", "TransactionConflict")] * 4)
    with pytest.raises(ClientError):
        DynamoTable("t", client).transact([{}, {}])


def test_a_failed_condition_names_the_items():
    client = ScriptedClient(cancelled("None", "ConditionalCheckFailed", "TransactionConflict"))
    with pytest.raises(TransactionRefused) as refused:
        DynamoTable("t", client).transact([{}, {}, {}])
    assert refused.value.failed == [1]


def test_revoke_during_a_concurrent_write_still_removes_the_grant():
    client = ScriptedClient(cancelled("None", "TransactionConflict"), None)
    assert kb_store(client).delete_reader_grant("kb_1", "bob", activity=activity_for("revoked", "kb_1", "bob")) is None  # removed: no ItemMissing


def test_revoke_after_the_kb_record_is_gone_deletes_the_grant_alone():
    client = ScriptedClient(cancelled("None", "ConditionalCheckFailed"))
    assert kb_store(client).delete_reader_grant("kb_1", "bob", activity=activity_for("revoked", "kb_1", "bob")) is None  # removed: no ItemMissing
    assert client.deleted == [{"PK": {"S": "USER#bob"}, "SK": {"S": "KB#kb_1"}}]


def test_a_share_that_collides_is_retried_rather_than_called_a_full_kb():
    grant = GrantRecord(
        user_id="bob",
        kb_id="kb_1",
        role="reader",
        recall=True,
        memos_kb_id="m",
        owner_id="alice",
        granted_at=datetime.now(UTC),
    )
    client = ScriptedClient(cancelled("None", "TransactionConflict"), None)
    kb_store(client).put_reader_grant(grant, max_readers=50, daily=uncapped_daily(), activity=activity_for("shared", grant.kb_id, grant.user_id))
    with pytest.raises(AlreadyExists):
        kb_store(ScriptedClient(cancelled("ConditionalCheckFailed", "None"))).put_reader_grant(
            grant, max_readers=50, daily=uncapped_daily(), activity=activity_for("shared", grant.kb_id, grant.user_id)
        )
