"""How the repository reads a cancelled transaction: only a failed condition is an answer."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from botocore.exceptions import ClientError

from memmy_kb.models import GrantRecord
from memmy_kb.repository import AlreadyMember, Repository, TransactionRefused


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


@pytest.fixture(autouse=True)
def _no_sleep(monkeypatch):
    monkeypatch.setattr("memmy_kb.repository.time.sleep", lambda _: None)


def test_conflicts_and_throttling_are_retried_under_one_token():
    client = ScriptedClient(
        cancelled("None", "TransactionConflict"), cancelled("ThrottlingError", "None"), None
    )
    Repository("t", client)._transact([{}, {}])
    assert len(client.tokens) == 3
    assert len(set(client.tokens)) == 1


def test_contention_that_lasts_is_raised_not_mistaken_for_an_answer():
    client = ScriptedClient(*[cancelled("None", "TransactionConflict")] * 4)
    with pytest.raises(ClientError):
        Repository("t", client)._transact([{}, {}])


def test_a_failed_condition_names_the_items():
    client = ScriptedClient(cancelled("None", "ConditionalCheckFailed", "TransactionConflict"))
    with pytest.raises(TransactionRefused) as refused:
        Repository("t", client)._transact([{}, {}, {}])
    assert refused.value.failed == [1]


def test_revoke_during_a_concurrent_write_still_removes_the_grant():
    client = ScriptedClient(cancelled("None", "TransactionConflict"), None)
    assert Repository("t", client).remove_reader("kb_1", "bob") is True


def test_revoke_after_the_kb_record_is_gone_deletes_the_grant_alone():
    client = ScriptedClient(cancelled("None", "ConditionalCheckFailed"))
    assert Repository("t", client).remove_reader("kb_1", "bob") is True
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
    Repository("t", client).add_reader(grant, max_readers=50)
    with pytest.raises(AlreadyMember):
        Repository("t", ScriptedClient(cancelled("ConditionalCheckFailed", "None"))).add_reader(
            grant, max_readers=50
        )
