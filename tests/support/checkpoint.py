"""A checkpoint of what a test built on the ``service`` fixture: the table's items, the buckets' objects and
the MemOS emulator's store, put back in a later test instead of building it again through the API.

For a module whose every case starts from the same world (the authorization matrix builds one through
some fifty API calls, for each of its hundreds of cases): the first case builds it and takes a
checkpoint, every later one puts it back after ``service`` has emptied the stack. The ids the world was
built with stay valid, since everything that names them comes back as it was. Queued messages are not
kept: a world is taken once its requests have answered, and no case here reads the queues.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import Any

import boto3

from tests.support.aws import Service, physical_names, write_batches


@dataclass
class Checkpoint:
    items: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    objects: dict[str, list[tuple[str, bytes, str, dict[str, str]]]] = field(default_factory=dict)
    memos: sqlite3.Connection | None = None


def take(service: Service) -> Checkpoint:
    dynamodb: Any = boto3.client("dynamodb", region_name="us-east-1")
    s3 = boto3.client("s3", region_name="us-east-1")
    saved = Checkpoint(memos=service.memos.emulator.checkpoint())
    for table in physical_names(service.template, service.refs, "AWS::DynamoDB::Table"):
        pages = dynamodb.get_paginator("scan").paginate(TableName=table, ConsistentRead=True)
        saved.items[table] = [item for page in pages for item in page["Items"]]
    for bucket in physical_names(service.template, service.refs, "AWS::S3::Bucket"):
        saved.objects[bucket] = []
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
            for listed in page.get("Contents", []):
                got = s3.get_object(Bucket=bucket, Key=listed["Key"])
                saved.objects[bucket].append(
                    (listed["Key"], got["Body"].read(), got["ContentType"], got.get("Metadata", {}))
                )
    return saved


def put_back(service: Service, saved: Checkpoint) -> None:
    """Restore ``saved`` into the emptied stack (the ``service`` fixture has just emptied it)."""
    dynamodb: Any = boto3.client("dynamodb", region_name="us-east-1")
    s3 = boto3.client("s3", region_name="us-east-1")
    for table, items in saved.items.items():
        write_batches(dynamodb, table, [{"PutRequest": {"Item": item}} for item in items])
    for bucket, objects in saved.objects.items():
        for key, body, content_type, metadata in objects:
            s3.put_object(Bucket=bucket, Key=key, Body=body, ContentType=content_type, Metadata=metadata)
    if saved.memos is not None:
        service.memos.emulator.restore(saved.memos)
