"""The contract suite's fixtures: each runs a case once on the in-memory fake and once on the real adapter
(DynamoDB, S3, Step Functions and SQS on moto, MemOS on its emulator), so a fake cannot drift from it."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator

import pytest

from memmy_kb.adapters.dynamodb.connections import DynamoConnectionStore
from memmy_kb.adapters.dynamodb.mcp_hits import DynamoHitStore
from memmy_kb.adapters.memos.backends import MemosBackends
from memmy_kb.adapters.memos.client import MemosClient
from memmy_kb.adapters.memos.key import MemosBackendConfig
from memmy_kb.adapters.s3 import UploadStorage
from memmy_kb.adapters.sqs import UploadQueue
from memmy_kb.adapters.stepfunctions import CleanupStateMachine
from memmy_kb.api.events import object_keys
from memmy_kb.domain.ports.engines import KnowledgeEngine, KnowledgeEngines
from memmy_kb.records import KnowledgeBaseRecord
from tests.support.factories import UNCAPPED_COUNT, kb_record, owner_grant_for
from tests.support.fakes import (
    FakeCleanupExecutions,
    FakeConnectionStore,
    FakeEngines,
    FakeHitStore,
    FakeKnowledgeEngine,
    FakeUploadObjects,
    FakeUploadRequeue,
)
from tests.support.store_contract import Backend, Bucket, McpStores, Pipeline, dynamo_backend, fake_backend


@pytest.fixture(params=["fake", "dynamodb"])
def backend(request: pytest.FixtureRequest) -> Backend:
    if request.param == "fake":
        return fake_backend()
    return dynamo_backend(request.getfixturevalue("service").stores)


@pytest.fixture
def kb(backend: Backend) -> KnowledgeBaseRecord:
    """kb_1, alice's, created through the store (META and the owner grant)."""
    record = kb_record("kb_1", owner_id="alice")
    backend.kbs.put_kb_with_owner_grant(record, owner_grant_for(record), max_owned=UNCAPPED_COUNT, request=None)
    return record


@pytest.fixture(params=["fake", "dynamodb"])
def mcp_stores(request: pytest.FixtureRequest) -> McpStores:
    """The remote MCP endpoint's connections and stored hits, on the fakes or on DynamoDB (moto)."""
    if request.param == "fake":
        return McpStores("fake", FakeConnectionStore(), FakeHitStore())
    table = request.getfixturevalue("service").stores.table
    return McpStores("dynamodb", DynamoConnectionStore(table), DynamoHitStore(table))


@pytest.fixture(params=["fake", "s3"])
def bucket(request: pytest.FixtureRequest) -> Bucket:
    if request.param == "fake":
        fake = FakeUploadObjects()
        return Bucket("fake", fake, lambda key, data: fake.put(key, data) and None)
    import boto3
    from botocore.config import Config

    name = request.getfixturevalue("service").refs["UploadBucket"]
    client = boto3.client("s3", region_name="us-east-1", config=Config(signature_version="s3v4"))
    return Bucket(
        "s3", UploadStorage(name, client), lambda key, data: client.put_object(Bucket=name, Key=key, Body=data) and None
    )


@pytest.fixture(params=["fake", "aws"])
def pipeline(request: pytest.FixtureRequest) -> Pipeline:
    if request.param == "fake":
        machine, queue = FakeCleanupExecutions(), FakeUploadRequeue()
        return Pipeline(machine, queue, lambda: dict(machine.executions), lambda: list(queue.requeued))
    import boto3

    refs = request.getfixturevalue("service").refs
    sfn = boto3.client("stepfunctions", region_name="us-east-1")
    sqs = boto3.client("sqs", region_name="us-east-1")
    arn, queue_url = refs["CleanupStateMachine"], refs["UploadQueue"]
    # Executions outlive the per-test reset: each test only sees the names it started (its own prefix).
    prefix = f"t{uuid.uuid4().hex[:8]}"

    def started() -> dict[str, str]:
        listed = sfn.list_executions(stateMachineArn=arn)["executions"]
        return {
            e["name"][len(prefix):]: json.loads(sfn.describe_execution(executionArn=e["executionArn"])["input"])["cleanup_id"]
            for e in listed
            if e["name"].startswith(prefix)
        }

    def requeued() -> list[str]:
        messages = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages", [])
        return [key for m in messages for key in object_keys(m["Body"])]

    machine = CleanupStateMachine(arn, sfn)

    class Prefixed:
        def start(self, cleanup_id: str, execution_name: str) -> None:
            machine.start(cleanup_id, prefix + execution_name)

    return Pipeline(Prefixed(), UploadQueue(queue_url, refs["UploadBucket"], sqs), started, requeued)


@pytest.fixture(params=["fake", "memos"])
def engine(request: pytest.FixtureRequest) -> Iterator[KnowledgeEngine]:
    if request.param == "fake":
        yield FakeKnowledgeEngine()
        return
    emulator = request.getfixturevalue("memos_emulator")
    with MemosClient(emulator.base_url, lambda _refresh: emulator.api_key, sleep=lambda _s: None) as client:
        yield client


@pytest.fixture(params=["fake", "memos"])
def engines(request: pytest.FixtureRequest) -> Iterator[KnowledgeEngines]:
    if request.param == "fake":
        fake = FakeEngines(a=2, b=3)
        fake.draining.add("b")
        yield fake
        return
    emulator = request.getfixturevalue("memos_emulator")
    configs = [
        MemosBackendConfig("a", emulator.base_url, emulator.api_key, max_kbs=2),
        MemosBackendConfig("b", emulator.base_url, emulator.other_project_key, max_kbs=3, draining=True),
    ]
    built: list[MemosClient] = []

    def build(base_url: str, key: Callable[[bool], str]) -> KnowledgeEngine:
        built.append(MemosClient(base_url, key, sleep=lambda _s: None))
        return built[-1]

    yield MemosBackends(lambda _refresh: configs, build)
    for client in built:
        client.close()
