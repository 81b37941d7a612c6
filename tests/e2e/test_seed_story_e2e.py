"""The seed story, over HTTP on the stage: upload, share by phone, recall, revoke.

A product manager creates a KB and uploads two documents through presigned POSTs (S3 → SQS → ingest →
MemOS), shares the KB by phone with a salesperson, who asks how the open-source and commercial editions
of MemOS differ and gets the comparison document's excerpt with its title. A third upload is found by
the salesperson's next recall with no action of theirs; after a revoke, nothing from that KB comes back.
The documents are `memmy-local up --demo`'s (memmy_local.demo).
"""

from __future__ import annotations

import random
import uuid
from http import HTTPStatus
from typing import Any

import httpx
import pytest

from memmy_local.demo import COMPARISON, DEPLOYMENT_FAQ, PRODUCT_INTRO
from tests.support.polling import wait_until
from tests.support.stage import ApiTarget, Stage

pytestmark = pytest.mark.e2e

QUESTION = "MemOS 开源版和商业版有什么区别"
FOLLOW_UP = "私有化部署需要什么配置的服务器"
# Sentences that appear in exactly one document each.
COMPARISON_FACT = "99.9% 可用性 SLA"
DEPLOYMENT_FACT = "16 核 CPU"
PROCESSING_TIMEOUT_SECONDS = 60


def client(stack: ApiTarget, token: str) -> httpx.Client:
    return httpx.Client(base_url=stack.api_url, headers={"Authorization": f"Bearer {token}"}, timeout=30)


def upload(api: httpx.Client, kb_id: str, filename: str, text: str) -> str:
    """Ask for a presigned POST and send the bytes straight to storage, as the desktop app does."""
    data = text.encode("utf-8")
    ticket = api.post(
        f"/knowledge-bases/{kb_id}/uploads",
        json={"filename": filename, "size_bytes": len(data), "content_type": "text/markdown"},
        headers={"Idempotency-Key": str(uuid.uuid4())},
    )
    assert ticket.status_code == HTTPStatus.CREATED, ticket.text
    body = ticket.json()
    content_type = body["fields"].get("Content-Type", "text/markdown")
    stored = httpx.post(
        body["url"], data=body["fields"], files={"file": (filename, data, content_type)}, timeout=30
    )
    assert stored.is_success, stored.text
    return body["upload_id"]


def wait_until_available(api: httpx.Client, kb_id: str, names: set[str]) -> None:
    files: list[dict[str, Any]] = []

    def available() -> bool:
        nonlocal files
        listed = api.get(f"/knowledge-bases/{kb_id}/files")
        assert listed.status_code == HTTPStatus.OK, listed.text
        files = listed.json()["files"]
        status = {f["name"]: f["status"] for f in files}
        assert not [n for n in names if status.get(n) == "failed"], files
        return all(status.get(name) == "available" for name in names)

    wait_until(
        available, timeout=PROCESSING_TIMEOUT_SECONDS, interval=0.2, message=lambda: f"{names} available: {files}"
    )


def recall(api: httpx.Client, query: str) -> dict[str, Any]:
    reply = api.post("/recall", json={"query": query})
    assert reply.status_code == HTTPStatus.OK, reply.text
    return reply.json()


def test_the_seed_story(stage: Stage) -> None:
    suffix = uuid.uuid4().hex[:8]
    phone_digits = f"139{random.randrange(10**8):08d}"
    product_manager = stage.user(f"pm-{suffix}", name="产品经理")
    salesperson = stage.user(f"sales-{suffix}", name="销售小王", phone=f"+86{phone_digits}")
    sales_id = salesperson.user_id
    with client(stage, product_manager.token) as manager, client(stage, salesperson.token) as sales:
        assert manager.put("/me").status_code == HTTPStatus.OK
        assert sales.put("/me").status_code == HTTPStatus.OK

        # The product manager creates a KB and uploads the two documents
        created = manager.post("/knowledge-bases", json={"name": stage.kb_name("MemOS 产品资料")})
        assert created.status_code == HTTPStatus.CREATED, created.text
        kb_id = created.json()["id"]
        upload(manager, kb_id, "MemOS产品介绍.md", PRODUCT_INTRO)
        upload(manager, kb_id, "MemOS 开源VS商业化.md", COMPARISON)
        wait_until_available(manager, kb_id, {"MemOS产品介绍.md", "MemOS 开源VS商业化.md"})

        # Before sharing, the salesperson's recall has nothing
        assert recall(sales, QUESTION)["scope_size"] == 0

        # ...and shares it by phone, typed the way people type it
        shared = manager.post(
            f"/knowledge-bases/{kb_id}/members",
            json={"identifier": f"{phone_digits[:3]} {phone_digits[3:7]} {phone_digits[7:]}"},
        )
        assert shared.status_code == HTTPStatus.CREATED, shared.text
        assert shared.json()["user_id"] == sales_id

        # The salesperson asks; the comparison document answers, with its title
        answer = recall(sales, QUESTION)
        assert (answer["scope_size"], answer["discarded"]) == (1, False)
        by_title = {item["title"]: item["content"] for item in answer["items"]}
        assert "MemOS 开源VS商业化" in by_title, answer["items"]
        assert COMPARISON_FACT in by_title["MemOS 开源VS商业化"]
        assert "《MemOS 开源VS商业化》" in answer["context"]
        assert COMPARISON_FACT in answer["context"]
        assert DEPLOYMENT_FACT not in answer["context"]

        # A third upload is found by the salesperson's next recall, with no action of theirs
        upload(manager, kb_id, "MemOS 私有化部署FAQ.md", DEPLOYMENT_FAQ)
        wait_until_available(manager, kb_id, {"MemOS 私有化部署FAQ.md"})
        follow_up = recall(sales, FOLLOW_UP)
        assert any(DEPLOYMENT_FACT in item["content"] for item in follow_up["items"]), follow_up["items"]
        assert "《MemOS 私有化部署FAQ》" in follow_up["context"]

        # The manager revokes; the next recall has nothing from that KB
        revoked = manager.delete(f"/knowledge-bases/{kb_id}/members/{sales_id}")
        assert revoked.status_code == HTTPStatus.NO_CONTENT
        for query in (QUESTION, FOLLOW_UP):
            after = recall(sales, query)
            assert after == {"items": [], "context": "", "scope_size": 0, "discarded": False, "partial": False}
        # The manager's own recall still works
        assert COMPARISON_FACT in recall(manager, QUESTION)["context"]
