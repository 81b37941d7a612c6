"""memmy_local.aws.dynamodb: moto's DynamoDB without a table copy per transaction, with partition-only queries.

Each behaviour is checked twice where it can be: against what DynamoDB answers (written out here), and
against plain moto 5.2.5 answering the same requests (the patches must not change moto's answers).
"""

from __future__ import annotations

import contextlib
import copy
import gc
import tracemalloc
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from memmy_local.aws import dynamodb as local

TABLE = "t"


def _key_schema(hash_name: str, range_name: str) -> list[dict[str, str]]:
    return [
        {"AttributeName": hash_name, "KeyType": "HASH"},
        {"AttributeName": range_name, "KeyType": "RANGE"},
    ]


def _create_table(client: Any) -> None:
    """The service's table shape: PK/SK and GSI1 (GSI1PK/GSI1SK)."""
    client.create_table(
        TableName=TABLE,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": name, "AttributeType": "S"} for name in ("PK", "SK", "GSI1PK", "GSI1SK")
        ],
        KeySchema=_key_schema("PK", "SK"),
        GlobalSecondaryIndexes=[
            {
                "IndexName": "GSI1",
                "KeySchema": _key_schema("GSI1PK", "GSI1SK"),
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
    )


@contextlib.contextmanager
def _moto(patched: bool) -> Iterator[Any]:
    """A DynamoDB client on a fresh in-process moto with the table, patched or plain."""
    if not patched:
        # Holders are context managers (the local stack, the module-scoped fixture of other modules), so
        # nothing may still hold the patches here; if something did, the comparison would be vacuous.
        assert not any(local._depth.values()), "memmy_local.aws.dynamodb is installed: no plain moto to compare"
    with local.local_dynamodb() if patched else contextlib.nullcontext(), mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        _create_table(client)
        yield client


def _meta(kb: str, **extra: Any) -> dict[str, Any]:
    return {
        "PK": {"S": f"KB#{kb}"},
        "SK": {"S": "META"},
        "name": {"S": kb},
        "member_count": {"N": "0"},
        **extra,
    }


def _grant(user: str, kb: str) -> dict[str, Any]:
    return {
        "PK": {"S": f"USER#{user}"},
        "SK": {"S": f"KB#{kb}"},
        "GSI1PK": {"S": f"KB#{kb}"},
        "GSI1SK": {"S": f"USER#{user}"},
        "role": {"S": "reader"},
    }


def _key(item: dict[str, Any]) -> dict[str, Any]:
    return {"PK": item["PK"], "SK": item["SK"]}


def _scan(client: Any) -> list[dict[str, Any]]:
    items = client.scan(TableName=TABLE, ConsistentRead=True)["Items"]
    return sorted(items, key=lambda item: (item["PK"]["S"], item["SK"]["S"]))


def _seed(client: Any) -> None:
    for item in (
        _meta("a"),
        _meta("b", readers={"SS": ["x"]}),
        _meta("gone"),
        _grant("x", "b"),
        _meta("locked", locked={"BOOL": True}),
    ):
        client.put_item(TableName=TABLE, Item=item)


def _cancelled(client: Any, actions: list[dict[str, Any]]) -> ClientError:
    with pytest.raises(ClientError) as caught:
        client.transact_write_items(TransactItems=actions)
    return caught.value


# Creates one item, updates one, deletes one, then fails a condition (ALL_OLD) and passes another.
_MIXED = [
    {
        "Put": {
            "TableName": TABLE,
            "Item": _grant("y", "a"),
            "ConditionExpression": "attribute_not_exists(PK)",
        }
    },
    {
        "Update": {
            "TableName": TABLE,
            "Key": _key(_meta("b")),
            "UpdateExpression": "SET member_count = member_count + :one ADD readers :y",
            "ExpressionAttributeValues": {":one": {"N": "1"}, ":y": {"SS": ["y"]}},
        }
    },
    {"Delete": {"TableName": TABLE, "Key": _key(_meta("gone"))}},
    {
        "ConditionCheck": {
            "TableName": TABLE,
            "Key": _key(_meta("locked")),
            "ConditionExpression": "attribute_not_exists(locked)",
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
    },
    {"Put": {"TableName": TABLE, "Item": _meta("new"), "ConditionExpression": "attribute_not_exists(PK)"}},
]


def _mixed_outcome(patched: bool) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    with _moto(patched) as client:
        _seed(client)
        before = _scan(client)
        error = _cancelled(client, copy.deepcopy(_MIXED))
        after = _scan(client)
        assert after == before
        return error.response, before, after


@pytest.mark.parametrize("patched", [True, False], ids=["patched", "plain-moto"])
def test_a_cancelled_transaction_leaves_every_item_as_it_was(patched: bool) -> None:
    response, before, after = _mixed_outcome(patched)

    assert response["Error"]["Code"] == "TransactionCanceledException"
    assert response["CancellationReasons"] == [
        {"Code": "None"},
        {"Code": "None"},
        {"Code": "None"},
        {
            "Code": "ConditionalCheckFailed",
            "Message": "The conditional request failed",
            "Item": _meta("locked", locked={"BOOL": True}),
        },
        {"Code": "None"},
    ]
    # The put item, the updated counter and set, the deleted item: all as before, nothing new.
    assert after == before
    assert {item["PK"]["S"] for item in after} == {"KB#a", "KB#b", "KB#gone", "KB#locked", "USER#x"}


def test_the_patch_answers_a_cancellation_exactly_as_moto_does() -> None:
    assert _mixed_outcome(True)[0]["CancellationReasons"] == _mixed_outcome(False)[0]["CancellationReasons"]


def test_a_condition_failure_without_all_old_names_no_item_and_later_actions_still_run() -> None:
    with _moto(True) as client:
        _seed(client)
        before = _scan(client)
        error = _cancelled(
            client,
            [
                {"Delete": {"TableName": TABLE, "Key": _key(_meta("a")), "ConditionExpression": "attribute_not_exists(PK)"}},
                {"Put": {"TableName": TABLE, "Item": _grant("z", "b")}},
                {"Update": {"TableName": TABLE, "Key": _key(_meta("nope")), "UpdateExpression": "SET n = :n",
                            "ConditionExpression": "attribute_exists(PK)",
                            "ExpressionAttributeValues": {":n": {"N": "1"}}}},
            ],
        )  # fmt: skip
        assert error.response["CancellationReasons"] == [
            {"Code": "ConditionalCheckFailed", "Message": "The conditional request failed"},
            {"Code": "None"},
            {"Code": "ConditionalCheckFailed", "Message": "The conditional request failed"},
        ]
        assert _scan(client) == before


@pytest.mark.parametrize("patched", [True, False], ids=["patched", "plain-moto"])
def test_two_actions_on_one_item_are_refused_and_nothing_is_written(patched: bool) -> None:
    with _moto(patched) as client:
        _seed(client)
        before = _scan(client)
        error = _cancelled(
            client,
            [
                {"Put": {"TableName": TABLE, "Item": _grant("w", "a")}},
                {"Put": {"TableName": TABLE, "Item": _meta("a", name={"S": "changed"})}},
                {"Delete": {"TableName": TABLE, "Key": _key(_meta("a"))}},
            ],
        )
        assert error.response["Error"]["Code"] == "ValidationException"
        assert "multiple operations on one item" in error.response["Error"]["Message"]
        assert _scan(client) == before


def test_a_committed_transaction_writes_every_action() -> None:
    with _moto(True) as client:
        _seed(client)
        client.transact_write_items(
            TransactItems=[action for action in _MIXED if "ConditionCheck" not in action]
        )
        items = {(item["PK"]["S"], item["SK"]["S"]): item for item in _scan(client)}
        assert ("USER#y", "KB#a") in items
        assert ("KB#new", "META") in items
        assert ("KB#gone", "META") not in items
        assert items[("KB#b", "META")]["member_count"] == {"N": "1"}
        assert sorted(items[("KB#b", "META")]["readers"]["SS"]) == ["x", "y"]


# --------------------------------------------------------------------------------------- memory bound

_SEEDED_ITEMS = 2_000
_TRANSACTIONS = 200


def _share_and_revoke(client: Any, n: int) -> None:
    """One share or revoke of the kind the service makes: the grant and META's count, in one transaction."""
    kb = f"kb{n // 2 % 50}"
    count = {"TableName": TABLE, "Key": _key(_meta(kb)), "ExpressionAttributeValues": {":one": {"N": "1"}}}
    if n % 2 == 0:
        grant = {
            "Put": {
                "TableName": TABLE,
                "Item": _grant("reader", kb),
                "ConditionExpression": "attribute_not_exists(PK)",
            }
        }
        update = {"Update": {**count, "UpdateExpression": "SET member_count = member_count + :one"}}
    else:
        grant = {"Delete": {"TableName": TABLE, "Key": _key(_grant("reader", kb))}}
        update = {"Update": {**count, "UpdateExpression": "SET member_count = member_count - :one"}}
    client.transact_write_items(TransactItems=[grant, update])


def test_transactions_neither_copy_the_table_nor_keep_anything() -> None:
    """200 transactions on a 2,000-item table: a few item copies each, and the memory comes back.

    Plain moto deep-copied all 2,000 items per transaction and kept every copy (about 4.8 MB each here).
    """
    from moto.dynamodb.models.dynamo_type import Item

    copies = 0
    original_deepcopy: Callable[..., Any] = Item.__deepcopy__

    def counting_deepcopy(self: Any, memo: dict[int, Any]) -> Any:
        nonlocal copies
        copies += 1
        return original_deepcopy(self, memo)

    with _moto(True) as client, pytest.MonkeyPatch.context() as mp:
        for start in range(0, _SEEDED_ITEMS, 25):
            requests = [{"PutRequest": {"Item": _meta(f"kb{n}")}} for n in range(start, start + 25)]
            client.batch_write_item(RequestItems={TABLE: requests})
        _share_and_revoke(client, 0)  # warm: botocore's models, moto's parsers
        _share_and_revoke(client, 1)
        mp.setattr(Item, "__deepcopy__", counting_deepcopy)
        gc.collect()
        tracemalloc.start()
        try:
            baseline = tracemalloc.get_traced_memory()[0]
            for n in range(2, _TRANSACTIONS + 2):
                _share_and_revoke(client, n)
            gc.collect()
            growth = tracemalloc.get_traced_memory()[0] - baseline
        finally:
            tracemalloc.stop()
        assert Item.instances_tracked == []  # moto kept every Item it ever made here

    # Per transaction: the two items it writes (rollback snapshots) + update_item's copy of the old item
    # (measured: 500 for 200 transactions, half of them deletes).
    assert copies <= 4 * _TRANSACTIONS, copies
    # One transaction's table copy alone would be about 4.8 MB.
    assert growth < 1024 * 1024, f"{growth / 1024:.0f} KiB kept after {_TRANSACTIONS} transactions"


# ------------------------------------------------------------------------------------------- queries


def _fill_for_queries(client: Any) -> None:
    items = [_meta(f"k{n:03d}") for n in range(60)]
    items += [_grant(f"u{n % 7}", f"k{n:03d}") for n in range(60)]
    items += [
        {**_grant(f"u{n % 5}", f"k{n % 3:03d}"), "SK": {"S": f"KB#k{n % 3:03d}#{n}"}} for n in range(40)
    ]
    for item in items:
        client.put_item(TableName=TABLE, Item=item)


_QUERIES: list[dict[str, Any]] = [
    {"KeyConditionExpression": "PK = :pk", "ExpressionAttributeValues": {":pk": {"S": "USER#u3"}}},
    {"KeyConditionExpression": "PK = :pk", "ExpressionAttributeValues": {":pk": {"S": "USER#u3"}}, "ScanIndexForward": False, "Limit": 3},
    {"KeyConditionExpression": "PK = :pk AND begins_with(SK, :p)", "ExpressionAttributeValues": {":pk": {"S": "USER#u1"}, ":p": {"S": "KB#k001"}}},
    {"KeyConditionExpression": "PK = :pk", "ExpressionAttributeValues": {":pk": {"S": "USER#nobody"}}},
    {"KeyConditionExpression": "PK = :pk", "FilterExpression": "#r = :r", "ExpressionAttributeNames": {"#r": "role"},
     "ExpressionAttributeValues": {":pk": {"S": "USER#u2"}, ":r": {"S": "reader"}}, "Limit": 4},
    {"IndexName": "GSI1", "KeyConditionExpression": "GSI1PK = :pk", "ExpressionAttributeValues": {":pk": {"S": "KB#k001"}}},
    {"IndexName": "GSI1", "KeyConditionExpression": "GSI1PK = :pk AND begins_with(GSI1SK, :u)",
     "ExpressionAttributeValues": {":pk": {"S": "KB#k002"}, ":u": {"S": "USER#u"}}, "Limit": 2, "ScanIndexForward": False},
]  # fmt: skip


def _all_pages(client: Any, query: dict[str, Any]) -> list[dict[str, Any]]:
    pages, request = [], {"TableName": TABLE, **query}
    while True:
        page = client.query(**request)
        pages.append({key: page.get(key) for key in ("Items", "Count", "ScannedCount", "LastEvaluatedKey")})
        if "LastEvaluatedKey" not in page:
            return pages
        request["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def _query_answers(patched: bool) -> list[list[dict[str, Any]]]:
    with _moto(patched) as client:
        _fill_for_queries(client)
        return [_all_pages(client, query) for query in _QUERIES]


def test_queries_answer_as_plain_moto_does_page_by_page() -> None:
    assert _query_answers(True) == _query_answers(False)


def test_a_base_table_query_reads_only_its_partition() -> None:
    from moto.dynamodb.models.table import Table

    walked = 0
    original_all_items = Table.all_items

    def counting_all_items(self: Any) -> Any:
        nonlocal walked
        walked += 1
        return original_all_items(self)

    with _moto(True) as client, pytest.MonkeyPatch.context() as mp:
        _fill_for_queries(client)
        mp.setattr(Table, "all_items", counting_all_items)
        page = client.query(TableName=TABLE, **_QUERIES[0])
        client.query(TableName=TABLE, **_QUERIES[5])
    assert walked == 0  # neither query sorted the whole table
    assert [item["SK"]["S"] for item in page["Items"]] == sorted(item["SK"]["S"] for item in page["Items"])
    assert page["Count"] == page["ScannedCount"] > 0


def test_the_patches_come_off_when_their_last_holder_leaves() -> None:
    from moto.core.common_models import BaseModel
    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.models.dynamo_type import Item
    from moto.dynamodb.models.table import Table

    query, transact = Table.query, DynamoDBBackend.transact_write_items
    with local.local_dynamodb():
        with local.local_dynamodb():
            assert Table.query is not query
        assert Table.query is not query  # the outer holder still has them
        assert Item.__new__ is not BaseModel.__new__
    assert Table.query is query
    assert DynamoDBBackend.transact_write_items is transact
    assert Item.__new__ is BaseModel.__new__
