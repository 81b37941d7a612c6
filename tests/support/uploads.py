"""Uploading through the ``service`` fixture: presigned POST on moto, then the ingest fed from the real queue.

In-process moto intercepts ``requests`` (not httpx), so the presigned POST goes through ``requests``. The
queue is the one provisioned from template.yaml, with the bucket's S3 -> SQS notification; ``drain_ingest``
plays Lambda's SQS event source mapping (the same event shape as the local stack's runner).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import boto3
import requests
from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError

from memmy_kb.adapters.dynamodb.contents import DynamoContentStore
from memmy_kb.adapters.dynamodb.keys import upload_key
from memmy_kb.records import UploadRecord
from memmy_local.lambdas.runners import sqs_event
from tests.support.aws import Reply, Service

REGION = "us-east-1"


@dataclass
class IngestRun:
    """What the ingest function answered for each batch, and which messages it reported failed."""

    results: list[Any] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    processed: int = 0


def create_kb(service: Service, user: str = "alice", name: str = "产品资料") -> str:
    reply = service.call("POST", "/knowledge-bases", user, body={"name": name})
    assert reply.status == 201, reply.body
    kb_id: str = reply.body["id"]
    return kb_id


def request_upload(
    service: Service, kb_id: str, filename: str, size: int, user: str = "alice", **extra: Any
) -> Reply:
    return service.call(
        "POST",
        f"/knowledge-bases/{kb_id}/uploads",
        user,
        body={"filename": filename, "size_bytes": size, **extra},
    )


def post_file(ticket: dict[str, Any], data: bytes, filename: str = "file") -> requests.Response:
    """The browser's multipart POST: the policy's fields first, the file last."""
    return requests.post(ticket["url"], data=ticket["fields"], files={"file": (filename, data)}, timeout=30)


def upload(service: Service, kb_id: str, filename: str, data: bytes, *, declared: int | None = None) -> str:
    """Request an upload for ``filename`` and POST ``data`` to it; the upload id."""
    reply = request_upload(service, kb_id, filename, len(data) if declared is None else declared)
    assert reply.status == 201, reply.body
    response = post_file(reply.body, data, filename)
    assert response.status_code == 204, response.text
    upload_id: str = reply.body["upload_id"]
    return upload_id


def sqs(service: Service) -> Any:
    return boto3.client("sqs", region_name=REGION)


def s3(service: Service) -> Any:
    return boto3.client("s3", region_name=REGION)


def drain_ingest(service: Service, *, max_rounds: int = 20) -> IngestRun:
    """Feed every message now in the upload queue to IngestFunction, settling them as Lambda would:
    delete what succeeded, leave (and make visible again) what the handler reported failed."""
    queue_url, queue_arn = service.refs["UploadQueue"], service.refs["UploadQueue.Arn"]
    client = sqs(service)
    run = IngestRun()
    for _ in range(max_rounds):
        messages = client.receive_message(
            QueueUrl=queue_url, MaxNumberOfMessages=5, MessageSystemAttributeNames=["All"]
        ).get("Messages", [])
        if not messages:
            return run
        try:
            result = service.invoke("IngestFunction", sqs_event(messages, queue_arn, REGION))
        except BatchProcessingError:
            # Powertools raises when every record failed; Lambda then returns the whole batch.
            result = {"batchItemFailures": [{"itemIdentifier": m["MessageId"]} for m in messages]}
        run.results.append(result)
        failed = {f["itemIdentifier"] for f in result.get("batchItemFailures", [])}
        run.failed.extend(sorted(failed))
        run.processed += len(messages)
        for message in messages:
            if message["MessageId"] in failed:
                client.change_message_visibility(
                    QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
                )
                continue
            client.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
        if failed:
            return run  # retrying at once would just fail again; the test decides when
    return run


def repository(service: Service) -> DynamoContentStore:
    """The content store (folders, files, uploads) on the service's table."""
    return service.stores.contents


def get_upload(service: Service, kb_id: str, upload_id: str) -> UploadRecord:
    upload = repository(service).get_upload(kb_id, upload_id)
    assert upload is not None
    return upload


def raw_upload_item(service: Service, kb_id: str, upload_id: str) -> dict[str, Any]:
    table = boto3.resource("dynamodb", region_name=REGION).Table(service.refs["Table"])
    return table.get_item(Key=upload_key(kb_id, upload_id), ConsistentRead=True)["Item"]


def object_exists(service: Service, key: str) -> bool:
    return "Contents" in s3(service).list_objects_v2(Bucket=service.refs["UploadBucket"], Prefix=key)
