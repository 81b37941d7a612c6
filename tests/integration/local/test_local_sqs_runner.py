"""memmy_local.lambdas.runners.SqsRunner on moto's SQS: as many batches in flight at once as the event source allows.

With one batch at a time, the local stack's ingest fell behind 60 users' uploads for good (the upload
queue held more messages every minute of ``make soak``); Lambda runs the template's
``ScalingConfig.MaximumConcurrency`` batches at once.
"""

from __future__ import annotations

import threading
from typing import Any

import boto3
from moto import mock_aws

from memmy_local.lambdas.functions import LocalFunction
from memmy_local.lambdas.runners import SqsRunner, SqsSource
from tests.support.polling import wait_until

REGION = "us-east-1"
CONCURRENCY = 5


def test_the_runner_has_as_many_batches_in_flight_as_the_event_allows():
    # Given a function each of whose invocations waits until CONCURRENCY of them run at once (one batch at a
    # time never gets there), and a queue of twice as many messages
    together = threading.Barrier(CONCURRENCY, timeout=10)

    def handler(event: Any, context: Any) -> Any:
        together.wait()
        return {"batchItemFailures": []}

    with mock_aws():
        sqs = boto3.client("sqs", region_name=REGION)
        url = sqs.create_queue(QueueName="uploads")["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        for n in range(2 * CONCURRENCY):
            sqs.send_message(QueueUrl=url, MessageBody=f"object {n}")
        function = LocalFunction(
            logical_id="IngestFunction",
            function_name="ingest",
            code_uri="functions/ingest",
            handler_spec="app.handler",
            memory_mb=128,
            timeout_s=5,
            handler=handler,
            spawn=lambda: handler,
            max_containers=CONCURRENCY,
        )
        # When the runner works the queue off with the event's concurrency
        source = SqsSource("IngestFunction", url, arn, 1, True, concurrency=CONCURRENCY)
        runner = SqsRunner(source, function, endpoint_url=None, region=REGION).start()
        try:
            wait_until(
                lambda: (
                    sqs.get_queue_attributes(
                        QueueUrl=url,
                        AttributeNames=[
                            "ApproximateNumberOfMessages",
                            "ApproximateNumberOfMessagesNotVisible",
                        ],
                    )["Attributes"]
                    == {"ApproximateNumberOfMessages": "0", "ApproximateNumberOfMessagesNotVisible": "0"}
                ),
                timeout=30,
                message="the queue to be worked off",
            )
        finally:
            runner.stop()
    # Then it did, through as many containers as batches in flight
    assert len(function.containers) == CONCURRENCY
