"""Deletion over HTTP on the running local stack, with the real state machine (moto's interpreter running
infra/statemachines/cleanup.asl.json, its task dispatched to the cleanup function) and the reconciler.

A reader loses a KB the moment the owner's DELETE returns, before any cleanup could run (MemOS is made to
refuse deletes first); MemOS failing a few times is absorbed by the state machine's retries; failing past
its retry budget marks the outbox item failed, and the next reconcile run finishes the job.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from http import HTTPStatus
from typing import Any

import boto3
import httpx
import pytest

from tests.support.polling import wait_until
from tests.support.stack import LOCAL_CLI, RunningStack

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.local_stack(
        "MemOS failures injected in the emulator, moto's table and bucket, the reconciler's control endpoint"
    ),
]

DELETE_FILES = "/delete/knowledgebase-file"
DOC = "# 季度路线图\n\n第三季度发布知识库共享功能，第四季度上线团队空间。\n"
QUESTION = "第三季度发布什么功能"


def client(stack: RunningStack, user: str, **claims: Any) -> httpx.Client:
    token = stack.token(user, **claims)
    return httpx.Client(base_url=stack.api_url, headers={"Authorization": f"Bearer {token}"}, timeout=30)


def aws(stack: RunningStack, service: str) -> Any:
    return boto3.client(
        service,
        endpoint_url=stack.moto_url,
        region_name="us-east-1",
        aws_access_key_id="memmy-local",
        aws_secret_access_key="memmy-local",
    )


def table_name(stack: RunningStack) -> str:
    (name,) = aws(stack, "dynamodb").list_tables()["TableNames"]
    return str(name)


def bucket_objects(stack: RunningStack, kb_id: str) -> list[str]:
    s3 = aws(stack, "s3")
    (bucket,) = [b["Name"] for b in s3.list_buckets()["Buckets"]]
    return [
        obj["Key"]
        for prefix in (f"uploads/{kb_id}/", f"verified/{kb_id}/")
        for obj in s3.list_objects_v2(Bucket=bucket, Prefix=prefix).get("Contents", [])
    ]


def outbox(stack: RunningStack, cleanup_id: str) -> dict[str, Any] | None:
    item = aws(stack, "dynamodb").get_item(
        TableName=table_name(stack),
        Key={"PK": {"S": f"CLEANUP#{cleanup_id}"}, "SK": {"S": "CLEANUP"}},
        ConsistentRead=True,
    )
    return item.get("Item")


def memos_state(stack: RunningStack) -> dict[str, list[str]]:
    state = httpx.get(f"{stack.memos_url}/_emulator/state", timeout=10).json()
    return {kb["id"]: [f["id"] for f in kb["files"]] for kb in state["knowledge_bases"]}


def fault(stack: RunningStack, **spec: Any) -> None:
    assert httpx.post(f"{stack.memos_url}/_emulator/faults", json=spec, timeout=10).status_code == 201


def clear_faults(stack: RunningStack) -> None:
    httpx.delete(f"{stack.memos_url}/_emulator/faults", timeout=10)


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 90) -> None:
    wait_until(condition, timeout=timeout, interval=0.2, message=what)


def kb_with_a_reader(stack: RunningStack, suffix: str) -> tuple[httpx.Client, httpx.Client, str, str]:
    owner = client(stack, f"del-o-{suffix}", name="Owner")
    reader = client(stack, f"del-r-{suffix}", name="Reader")
    for api in (owner, reader):
        assert api.put("/me").status_code == HTTPStatus.OK
    kb_id = owner.post("/knowledge-bases", json={"name": "路线图"}).json()["id"]
    shared = owner.post(f"/knowledge-bases/{kb_id}/members", json={"identifier": f"del-r-{suffix}"})
    assert shared.status_code == HTTPStatus.CREATED, shared.text
    data = DOC.encode()
    ticket = owner.post(
        f"/knowledge-bases/{kb_id}/uploads",
        json={"filename": "路线图.md", "size_bytes": len(data), "content_type": "text/markdown"},
    ).json()
    stored = httpx.post(ticket["url"], data=ticket["fields"], files={"file": ("路线图.md", data)}, timeout=30)
    assert stored.is_success, stored.text

    def available() -> bool:
        files = owner.get(f"/knowledge-bases/{kb_id}/files").json()["files"]
        return [f["status"] for f in files] == ["available"]

    wait_for(available, "the document processed")
    assert reader.post("/recall", json={"query": QUESTION}).json()["scope_size"] == 1
    state = httpx.get(f"{stack.memos_url}/_emulator/state", timeout=10).json()
    (memos_kb,) = [kb["id"] for kb in state["knowledge_bases"] if kb["name"] == f"memmy:{kb_id}"]
    return owner, reader, kb_id, memos_kb


def test_a_deleted_kb_is_gone_for_its_reader_at_once_and_cleaned_up_later(local_stack: RunningStack) -> None:
    owner, reader, kb_id, memos_kb = kb_with_a_reader(local_stack, uuid.uuid4().hex[:8])
    # MemOS refuses deletes for now, so no cleanup can have finished when the DELETE returns
    fault(local_stack, endpoint=DELETE_FILES, code=50004, times=6)
    deleted = owner.delete(f"/knowledge-bases/{kb_id}")

    assert deleted.status_code == HTTPStatus.ACCEPTED, deleted.text
    assert memos_kb in memos_state(local_stack)  # MemOS still holds it...
    assert reader.get("/knowledge-bases").json()["items"] == []  # ...but the reader's list does not
    assert reader.get(f"/knowledge-bases/{kb_id}").status_code == HTTPStatus.NOT_FOUND
    after = reader.post("/recall", json={"query": QUESTION}).json()
    assert (after["scope_size"], after["items"]) == (0, [])
    assert owner.get("/knowledge-bases").json()["items"] == []
    # Then the state machine's retries get through the failures and clean everything up
    cleanup_id = deleted.json()["cleanup_id"]
    wait_for(lambda: outbox(local_stack, cleanup_id) is None, "the outbox item deleted on success")
    assert memos_kb not in memos_state(local_stack)
    assert bucket_objects(local_stack, kb_id) == []
    owner.close()
    reader.close()


def test_a_cleanup_failing_past_its_retries_is_marked_failed_and_reconcile_finishes_it(
    local_stack: RunningStack,
) -> None:
    # Given a KB with a reader, and MemOS's file deletes down for good
    owner, reader, kb_id, memos_kb = kb_with_a_reader(local_stack, uuid.uuid4().hex[:8])
    fault(local_stack, endpoint=DELETE_FILES, code=50004)  # down for good
    try:
        # When the KB is deleted, then its cleanup fails past its retries and is marked failed
        cleanup_id = owner.delete(f"/knowledge-bases/{kb_id}").json()["cleanup_id"]

        def marked_failed() -> bool:
            item = outbox(local_stack, cleanup_id)
            return item is not None and item["state"]["S"] == "failed"

        wait_for(marked_failed, "the Catch marking the outbox item failed", timeout=180)
        item = outbox(local_stack, cleanup_id)
        assert item is not None
        assert (item["GSI2PK"]["S"], item["last_error"]["S"]) == ("CLEANUP#failed", "CleanupRetryable")
        assert memos_kb in memos_state(local_stack)
    finally:
        clear_faults(local_stack)
    # When time passes (its grace period), MemOS is back, and the scheduled reconcile runs
    due = (datetime.now(UTC) - timedelta(minutes=1)).isoformat()
    aws(local_stack, "dynamodb").update_item(
        TableName=table_name(local_stack),
        Key={"PK": {"S": f"CLEANUP#{cleanup_id}"}, "SK": {"S": "CLEANUP"}},
        UpdateExpression="SET GSI2SK = :due",
        ExpressionAttributeValues={":due": {"S": due}},
    )
    home = local_stack.key_path.parent
    done = subprocess.run(  # noqa: S603 - our own CLI
        [*LOCAL_CLI, "reconcile"],
        capture_output=True,
        text=True,
        env={**os.environ, "MEMMY_KB_HOME": str(home)},
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert done.stdout.startswith("ReconcileFunction"), done.stdout
    # The stack's own timer runs the reconciler every 60 s too, and once ran 0.2 s before this command:
    # the restart is a conditional write, so exactly one of the two runs takes it and only that one
    # reports CleanupRestarted (its count in the command's report: tests/unit/local/lambdas/
    # test_local_schedules.py). What a person relies on is the outcome, whichever run it was.

    # Then the restarted cleanup finishes: nothing of the KB is left in MemOS or the bucket (a failed
    # cleanup no reconcile restarts stays in the outbox for good)
    wait_for(lambda: outbox(local_stack, cleanup_id) is None, "the restarted cleanup finishing")
    assert memos_kb not in memos_state(local_stack)
    assert bucket_objects(local_stack, kb_id) == []
    owner.close()
    reader.close()
