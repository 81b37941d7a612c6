"""memmy_local.aws.moto_retention: moto, as the local stack runs it, lets go of deleted S3 objects and consumed
SQS messages, and keeps only the most recent finished executions of a state machine.

Each check runs against plain moto 5.2.5 too, which keeps everything: the patches are what makes the
difference.
"""

from __future__ import annotations

import contextlib
import gc
import json
import weakref
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from memmy_local.aws import moto_retention
from memmy_local.aws.moto_config import MOTO_CONFIG
from tests.support.polling import wait_until

REGION = "us-east-1"
BUCKET = "retention-test"
ACCOUNT = "123456789012"
# A state machine that waits as long as its input says, then ends.
WAITING = {"StartAt": "W", "States": {"W": {"Type": "Wait", "SecondsPath": "$.wait", "End": True}}}


@contextlib.contextmanager
def _moto(patched: bool) -> Iterator[None]:
    with (
        moto_retention.bounded_retention() if patched else contextlib.nullcontext(),
        mock_aws(
            config=MOTO_CONFIG  # type: ignore[arg-type]
        ),
    ):
        yield


def _stored_object(bucket: str, key: str) -> Any:
    from moto.s3.models import s3_backends

    return s3_backends[ACCOUNT]["aws"].buckets[bucket].keys[key]


@pytest.mark.filterwarnings("ignore:S3 key was not disposed of in time:ResourceWarning")
@pytest.mark.parametrize("patched", [True, False], ids=["local stack", "plain moto"])
def test_a_deleted_object_and_a_consumed_message_are_freed(patched):
    from moto.s3.models import FakeKey
    from moto.sqs.models import Message

    with _moto(patched):
        s3 = boto3.client("s3", region_name=REGION)
        s3.create_bucket(Bucket=BUCKET)
        s3.put_object(Bucket=BUCKET, Key="k", Body=b"x" * 1000)
        stored = weakref.ref(_stored_object(BUCKET, "k"))
        s3.delete_object(Bucket=BUCKET, Key="k")
        sqs = boto3.client("sqs", region_name=REGION)
        queue = sqs.create_queue(QueueName="q")["QueueUrl"]
        sqs.send_message(QueueUrl=queue, MessageBody="hello")
        (received,) = sqs.receive_message(QueueUrl=queue)["Messages"]
        sqs.delete_message(QueueUrl=queue, ReceiptHandle=received["ReceiptHandle"])
        gc.collect()
        tracked = (len(FakeKey.instances_tracked), len(Message.instances_tracked))  # type: ignore[attr-defined]
        assert (stored() is None) is patched
        assert tracked == (0, 0) if patched else min(tracked) > 0


def _start(sfn: Any, arn: str, name: str, wait: int) -> str:
    execution_arn: str = sfn.start_execution(
        stateMachineArn=arn, name=name, input=json.dumps({"wait": wait})
    )["executionArn"]
    return execution_arn


@pytest.mark.parametrize("patched", [True, False], ids=["local stack", "plain moto"])
def test_a_state_machine_keeps_its_running_and_its_most_recent_finished_executions(patched, monkeypatch):
    from moto.stepfunctions.parser.utils import TMP_THREADS

    monkeypatch.setattr(moto_retention, "KEPT_FINISHED_EXECUTIONS", 3)
    with _moto(patched):
        sfn = boto3.client("stepfunctions", region_name=REGION)
        role = f"arn:aws:iam::{ACCOUNT}:role/r"
        arn = sfn.create_state_machine(name="m", definition=json.dumps(WAITING), roleArn=role)[
            "stateMachineArn"
        ]
        running = [_start(sfn, arn, "long", wait=30)]
        try:
            for n in range(6):
                finished = _start(sfn, arn, f"quick-{n}", wait=0)
                wait_until(
                    lambda arn=finished: sfn.describe_execution(executionArn=arn)["status"] == "SUCCEEDED",
                    timeout=30,
                    message=lambda name=f"quick-{n}": f"execution {name} to finish",
                )
            running.append(_start(sfn, arn, "last", wait=30))  # prunes, now that the six have finished
            names = {e["name"] for e in sfn.list_executions(stateMachineArn=arn)["executions"]}
            threads = len(TMP_THREADS)  # what the interpreter started, kept for nothing
        finally:
            for execution in running:
                sfn.stop_execution(executionArn=execution)
    if patched:
        assert names == {"long", "quick-3", "quick-4", "quick-5", "last"}
        assert threads <= 4  # the last execution's own, started after the list was emptied
    else:
        assert names == {"long", "last", *(f"quick-{n}" for n in range(6))}
        assert threads >= 2 * 8  # two threads of each execution here (plus any earlier test's)
