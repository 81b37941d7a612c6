"""memmy_local.aws.dynamodb_responses: moto's DynamoDB item operations answer with their result's JSON, and
clients read exactly what moto's own serializer gave them; everything else still goes through it."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from memmy_local.aws import dynamodb as local

TABLE = "t"
KEY = {"PK": {"S": "KB#1"}, "SK": {"S": "FILE#1"}}
# Every attribute type DynamoDB has, nested too, and text that JSON escapes.
ITEM = {
    **KEY,
    "name": {"S": '资料 "quoted" \\ \u2028 line'},
    "size": {"N": "104857600"},
    "ratio": {"N": "-0.125"},
    "blob": {"B": b"\x00\xffbinary"},
    "flag": {"BOOL": True},
    "nothing": {"NULL": True},
    "tags": {"SS": ["a", "b"]},
    "counts": {"NS": ["1", "2.5"]},
    "blobs": {"BS": [b"\x01", b"\x02"]},
    "nested": {"M": {"list": {"L": [{"S": "x"}, {"N": "3"}, {"M": {"deep": {"B": b"\x7f"}}}]}}},
}


@contextlib.contextmanager
def _client(fast: bool) -> Iterator[Any]:
    assert not any(local._depth.values()), "a DynamoDB patch is installed: no plain moto to compare"
    with local.plain_json_responses() if fast else contextlib.nullcontext(), mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(
            TableName=TABLE,
            BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": n, "AttributeType": "S"} for n in ("PK", "SK")],
            KeySchema=[
                {"AttributeName": "PK", "KeyType": "HASH"},
                {"AttributeName": "SK", "KeyType": "RANGE"},
            ],
        )
        yield client


def _answers(fast: bool) -> list[Any]:
    """The same requests' answers, without their request ids."""
    with _client(fast) as client:
        answers = [
            client.put_item(TableName=TABLE, Item=ITEM),
            client.put_item(TableName=TABLE, Item=ITEM, ReturnValues="ALL_OLD"),
            client.get_item(TableName=TABLE, Key=KEY, ConsistentRead=True),
            client.get_item(TableName=TABLE, Key={**KEY, "SK": {"S": "none"}}),
            client.query(
                TableName=TABLE,
                KeyConditionExpression="PK = :pk",
                ExpressionAttributeValues={":pk": {"S": "KB#1"}},
                ReturnConsumedCapacity="TOTAL",
            ),
            client.query(
                TableName=TABLE,
                KeyConditionExpression="PK = :pk",
                ExpressionAttributeValues={":pk": {"S": "KB#1"}},
                Select="COUNT",
            ),
            client.scan(TableName=TABLE, Limit=1),
            client.update_item(
                TableName=TABLE,
                Key=KEY,
                UpdateExpression="SET #size = #size + :one",
                ExpressionAttributeNames={"#size": "size"},
                ExpressionAttributeValues={":one": {"N": "1"}},
                ReturnValues="ALL_NEW",
            ),
            client.batch_get_item(RequestItems={TABLE: {"Keys": [KEY]}}),
            client.transact_get_items(TransactItems=[{"Get": {"TableName": TABLE, "Key": KEY}}]),
            client.delete_item(TableName=TABLE, Key=KEY, ReturnValues="ALL_OLD"),
        ]
        with pytest.raises(ClientError) as refused:
            client.put_item(TableName=TABLE, Item=ITEM, ConditionExpression="attribute_exists(PK)")
        answers.append(refused.value.response["Error"])
        described = client.describe_table(TableName=TABLE)["Table"]  # a timestamp: moto's serializer
        answers.append((type(described["CreationDateTime"]).__name__, described["TableStatus"]))
    return [{k: v for k, v in a.items() if k != "ResponseMetadata"} if isinstance(a, dict) else a for a in answers]


def test_item_operations_answer_exactly_as_motos_serializer_does() -> None:
    fast, plain = _answers(True), _answers(False)
    assert fast == plain
    assert fast[2]["Item"]["blob"] == {"B": b"\x00\xffbinary"}  # the comparison saw real values

