"""The per-user recall limit through the real recall handler, on moto and the MemOS emulator: 429
``recall_rate_limited`` with ``Retry-After`` past the burst, no search made, another user unaffected, and
the shared window in the table holding a user whom a new environment (fresh buckets) serves.

The rules themselves, on a clock the test moves: tests/unit/domain/recall/test_recall_limit.py.
"""

from __future__ import annotations

import time
from http import HTTPStatus

import boto3
import pytest

from memmy_kb.composition import reset_composition
from tests.support.sharing import register
from tests.support.uploads import create_kb

SEARCH = "/search/memory"


@pytest.fixture
def people(service, monkeypatch):
    """alice and bob, each with a KB in recall; a burst of 3 and a refill too slow to matter here, in a
    window of an hour (so the test never straddles two): 3 + floor(0.01 x 3600) = 39 a window."""
    for key, value in {"RECALL_BURST": "3", "RECALL_RATE_PER_SECOND": "0.01", "RECALL_LIMIT_WINDOW_SECONDS": "3600"}.items():
        monkeypatch.setenv(key, value)
    reset_composition()
    for user in ("alice", "bob"):
        register(service, user, user.title())
        create_kb(service, user, f"{user} 的资料")
    return service


def recall(service, user: str):
    return service.call("POST", "/recall", user, body={"query": "差旅报销需要哪些发票"})


def searches(service) -> int:
    return service.memos.calls(SEARCH)


def test_past_the_burst_a_recall_is_429_recall_rate_limited_with_retry_after_and_no_search(people):
    assert [recall(people, "alice").status for _ in range(3)] == [HTTPStatus.OK] * 3
    searched = searches(people)
    assert searched > 0

    reply = recall(people, "alice")

    assert reply.status == HTTPStatus.TOO_MANY_REQUESTS
    error = reply.body["error"]
    assert error["code"] == "recall_rate_limited"
    retry_after = int(reply.headers["Retry-After"])
    # One token at 0.01 a second is 100 s away, at most.
    assert 1 <= retry_after <= 100
    assert error["details"] == {"retry_after_seconds": retry_after}
    assert error["message"] == (
        "Too many recalls for this account just now (at most 3 at once, then one every 100 seconds)."
        f" Try again in {retry_after} s."
    )
    assert searches(people) == searched, "a refused recall searches nothing"
    # bob's recalls are his own
    assert recall(people, "bob").status == HTTPStatus.OK


def test_a_new_environment_still_holds_a_user_whose_window_in_the_table_is_full(people, monkeypatch):
    # A window of 3 a window: the burst, and no refill within it.
    monkeypatch.setenv("RECALL_RATE_PER_SECOND", "0.0001")
    reset_composition()
    assert [recall(people, "alice").status for _ in range(3)] == [HTTPStatus.OK] * 3

    reset_composition()  # another environment: its buckets are full
    reply = recall(people, "alice")

    assert (reply.status, reply.body["error"]["code"]) == (HTTPStatus.TOO_MANY_REQUESTS, "recall_rate_limited")
    # Until the hour's window ends.
    assert 1 <= int(reply.headers["Retry-After"]) <= 3600 - int(time.time()) % 3600 + 1
    assert recall(people, "bob").status == HTTPStatus.OK


def test_the_counter_is_one_item_per_user_that_the_tables_ttl_removes(people):
    recall(people, "alice")
    recall(people, "alice")
    table = people.refs["Table"]
    item = boto3.client("dynamodb", region_name="us-east-1").get_item(
        TableName=table, Key={"PK": {"S": "LIMIT#recall#alice"}, "SK": {"S": "LIMIT"}}
    )["Item"]
    window = int(time.time()) // 3600
    assert item[f"w{window}"] == {"N": "2"}
    assert int(item["expires_at"]["N"]) == (window + 2) * 3600
