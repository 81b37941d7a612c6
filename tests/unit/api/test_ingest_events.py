"""Reading S3 notifications out of SQS bodies (moto's shape and AWS's), and the local SQS runner's events."""

from __future__ import annotations

import json

import pytest

from memmy_kb.api.events import object_keys
from memmy_local.lambdas.runners import sqs_event, sqs_sources
from memmy_local.template import load_template

# What moto 5.2 delivers: no userIdentity/requestParameters/responseElements, and "/" URL-encoded.
MOTO_BODY = {
    "Records": [
        {
            "eventVersion": "2.1",
            "eventSource": "aws:s3",
            "awsRegion": "us-east-1",
            "eventTime": "2026-11-29T12:24:57.560Z",
            "eventName": "ObjectCreated:Post",
            "s3": {
                "s3SchemaVersion": "1.0",
                "configurationId": "abc",
                "bucket": {"name": "memmy-uploads", "arn": "arn:aws:s3:::memmy-uploads"},
                "object": {
                    "key": "uploads%2Fkb_01%2Fup_02",
                    "size": 5,
                    "eTag": "5d41402abc4b2a76b9719d911017c592",
                },
            },
        }
    ]
}
# What S3 itself sends: the full record, "/" left as is, spaces as "+".
AWS_BODY = {
    "Records": [
        {
            **MOTO_BODY["Records"][0],
            "eventName": "ObjectCreated:Put",
            "userIdentity": {"principalId": "AWS:AROA"},
            "requestParameters": {"sourceIPAddress": "203.0.113.1"},
            "responseElements": {"x-amz-request-id": "r", "x-amz-id-2": "i"},
            "s3": {
                **MOTO_BODY["Records"][0]["s3"],
                "bucket": {"name": "b", "arn": "arn:aws:s3:::b", "ownerIdentity": {"principalId": "x"}},
                "object": {"key": "uploads/kb_01/a+b%2Bc", "size": 5, "eTag": "e", "sequencer": "00"},
            },
        }
    ]
}


def test_moto_records_are_read_and_their_keys_decoded() -> None:
    assert object_keys(json.dumps(MOTO_BODY)) == ["uploads/kb_01/up_02"]


def test_aws_records_are_read_and_their_keys_decoded() -> None:
    assert object_keys(json.dumps(AWS_BODY)) == ["uploads/kb_01/a b+c"]


def test_the_s3_test_event_and_other_event_types_carry_no_objects() -> None:
    test_event = {
        "Service": "Amazon S3",
        "Event": "s3:TestEvent",
        "Time": "2026-11-29T12:00:00Z",
        "Bucket": "b",
    }
    removed = {"Records": [{**MOTO_BODY["Records"][0], "eventName": "ObjectRemoved:Delete"}]}
    assert object_keys(json.dumps(test_event)) == []
    assert object_keys(json.dumps(removed)) == []


@pytest.mark.parametrize("body", ["not json", "[]", '{"Records": "x"}', '{"Hello": 1}'])
def test_a_body_that_is_no_s3_notification_is_an_error(body: str) -> None:
    with pytest.raises(ValueError, match="not"):
        object_keys(body)


def test_the_template_subscribes_the_ingest_to_the_upload_queue() -> None:
    refs = {
        "UploadQueue": "http://localhost/q",
        "UploadQueue.Arn": "arn:aws:sqs:us-east-1:123456789012:q",
        "UploadDeadLetterQueue": "http://localhost/dlq",
        "UploadDeadLetterQueue.Arn": "arn:aws:sqs:us-east-1:123456789012:dlq",
    }
    (source,) = sqs_sources(load_template(), refs)
    assert (
        source.function,
        source.queue_url,
        source.batch_size,
        source.reports_item_failures,
        source.concurrency,
    ) == ("IngestFunction", "http://localhost/q", 1, True, 5)


def test_the_runner_builds_events_shaped_like_lambdas() -> None:
    message = {
        "MessageId": "m1",
        "ReceiptHandle": "r1",
        "Body": "{}",
        "MD5OfBody": "99914b932bd37a50b983c5e7c90ae93b",
        "Attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": "1"},
    }
    (record,) = sqs_event([message], "arn:aws:sqs:us-east-1:1:q", "us-east-1")["Records"]
    assert record == {
        "messageId": "m1",
        "receiptHandle": "r1",
        "body": "{}",
        "attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": "1"},
        "messageAttributes": {},
        "md5OfBody": "99914b932bd37a50b983c5e7c90ae93b",
        "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:us-east-1:1:q",
        "awsRegion": "us-east-1",
    }


@pytest.mark.parametrize(("scaling", "concurrency"), [({"MaximumConcurrency": 3}, 3), (None, 5)])
def test_the_runner_takes_its_concurrency_from_the_events_scaling_config(scaling, concurrency) -> None:
    event = {"Type": "SQS", "Properties": {"Queue": "arn:aws:sqs:us-east-1:1:q", "BatchSize": 1}}
    if scaling:
        event["Properties"]["ScalingConfig"] = scaling
    template = {"Resources": {"F": {"Type": "AWS::Serverless::Function", "Properties": {"Events": {"E": event}}}}}
    (source,) = sqs_sources(template, {"Q": "http://localhost/q", "Q.Arn": "arn:aws:sqs:us-east-1:1:q"})
    assert source.concurrency == concurrency
