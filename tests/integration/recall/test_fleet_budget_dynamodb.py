"""The fleet's MemOS budget on moto: the shared item's conditional writes (``DynamoFleetItems``), several
environments taking from it at once without spending a token twice, and a recall whose budget is spent
answering 503 with ``Retry-After`` without sending MemOS a search (429 ``recall_rate_limited`` when the
caller's own use spent it)."""

from __future__ import annotations

import threading
import time
from decimal import Decimal
from http import HTTPStatus

from memmy_kb.adapters.dynamodb.fleet_budget import DynamoFleetItems, bucket_key
from memmy_kb.domain.recall import fleet_budget
from memmy_kb.domain.recall.fleet_budget import Bucket, FleetBudget
from memmy_kb.domain.recall.turn import reader_id
from tests.support.events import claims_for
from tests.support.seed import put_item

QPS = 40.0


def bucket(version: int, tokens: float) -> dict:
    return Bucket(version, tokens, 1_800_000_000.0, users={"a": 1}).item()


def test_a_swap_writes_only_over_the_version_it_read_and_a_loser_gets_the_newer_item(service):
    items = DynamoFleetItems(service.stores.table)

    assert items.load("p1") is None
    assert items.swap("p1", None, bucket(1, 7.5)) is None
    lost_create = items.swap("p1", None, bucket(1, 3.0))
    assert items.swap("p1", 1, bucket(2, 6.25)) is None
    lost_update = items.swap("p1", 1, bucket(2, 1.0))

    assert Bucket.parse(lost_create).tokens == 7.5  # the stored item, returned by the failed write
    assert (Bucket.parse(lost_update).version, Bucket.parse(lost_update).tokens) == (2, 6.25)
    stored = Bucket.parse(items.load("p1"))
    assert (stored.version, stored.tokens, dict(stored.users)) == (2, 6.25, {"a": 1})
    assert items.swap("p1", 5, bucket(6, 0.0)) is not None  # a version never stored writes nothing
    gone = items.swap("p2", 3, bucket(4, 0.0))  # an item that is not there: the failure says so
    assert gone == {}


def test_environments_taking_at_once_never_spend_a_token_twice(service):
    # A frozen clock: the bucket never fills, so everything granted comes out of its first capacity.
    frozen = time.time()
    envs = [FleetBudget(DynamoFleetItems(service.stores.table), lambda: frozen) for _ in range(6)]
    granted: list[int] = []
    lock = threading.Lock()

    def take(env: FleetBudget) -> None:
        for n in range(6):
            got = env.take("p1", 1, f"user{n % 3}", QPS).count
            with lock:
                granted.append(got)

    threads = [threading.Thread(target=take, args=(env,)) for env in envs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    stored = Bucket.parse(DynamoFleetItems(service.stores.table).load("p1"))
    taken = sum(stored.users.values())
    # Each write took its block from the item it read: what the item records was taken once.
    # (the stored times are rounded to the microsecond: a few microseconds of fill at most)
    assert abs(taken + stored.tokens - fleet_budget.capacity(QPS)) < 0.01
    assert sum(granted) <= taken


def test_a_recall_whose_budget_is_spent_is_a_503_with_retry_after_and_no_search(service):
    assert service.call("PUT", "/me", claims=claims_for("alice", name="Alice")).status == HTTPStatus.OK
    assert service.call("POST", "/knowledge-bases", "alice", body={"name": "notes"}).status == HTTPStatus.CREATED
    # The backend's bucket empty, and filled up to a minute from now: nothing to take for a minute.
    spent = {"version": 9, "tokens": 0, "at": Decimal(int(time.time()) + 60), "share": 1, "share_at": 0}
    put_item(service, {**bucket_key("default"), "type": "fleet_bucket", **spent, "window": 0, "users": {}, "before": {}})
    before = service.memos.calls("/search/memory")

    reply = service.call("POST", "/recall", "alice", body={"query": "expenses"})

    assert reply.status == HTTPStatus.SERVICE_UNAVAILABLE
    assert reply.body["error"]["code"] == "recall_unavailable"
    assert int(reply.headers["Retry-After"]) >= 1
    assert service.memos.calls("/search/memory") == before


def test_a_recall_refused_for_the_callers_own_use_is_a_429_recall_rate_limited_and_no_search(service):
    assert service.call("PUT", "/me", claims=claims_for("alice", name="Alice")).status == HTTPStatus.OK
    assert service.call("POST", "/knowledge-bases", "alice", body={"name": "notes"}).status == HTTPStatus.CREATED
    # The bucket spent for a minute, and most of what it gave in the current window was alice's.
    now = time.time()
    counts = {fleet_budget.user_key(reader_id("alice")): 30, fleet_budget.user_key(reader_id("bob")): 2}
    spent = {"version": 9, "tokens": 0, "at": Decimal(int(now) + 60), "share": 1, "share_at": 0}
    window = int(now // fleet_budget.WINDOW_SECONDS)
    put_item(service, {**bucket_key("default"), "type": "fleet_bucket", **spent, "window": window, "users": counts, "before": {}})
    before = service.memos.calls("/search/memory")

    reply = service.call("POST", "/recall", "alice", body={"query": "expenses"})

    assert reply.status == HTTPStatus.TOO_MANY_REQUESTS
    assert reply.body["error"]["code"] == "recall_rate_limited"
    assert int(reply.headers["Retry-After"]) >= 1
    assert service.memos.calls("/search/memory") == before
