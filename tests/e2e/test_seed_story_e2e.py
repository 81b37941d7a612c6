"""The seed story, over HTTP on the stage: upload, share by phone, recall, revoke.

A product manager creates a KB and uploads two documents through presigned POSTs (S3 → SQS → ingest →
MemOS), shares the KB by phone with a salesperson, who asks how the open-source and commercial editions
of MemOS differ and gets the comparison document's excerpt with its title. A third upload is found by
the salesperson's next recall with no action of theirs; after a revoke, nothing from that KB comes back.
The documents are `memmy-local up --demo`'s (memmy_local.demo).
"""

from __future__ import annotations

import secrets
import uuid
from http import HTTPStatus

import pytest

from memmy_local.demo import COMPARISON, DEPLOYMENT_FAQ, PRODUCT_INTRO
from tests.support.e2e_story import (
    COMPARISON_FACT,
    DEPLOYMENT_FACT,
    FOLLOW_UP,
    QUESTION,
    client,
    recall,
    upload,
    wait_until_available,
)
from tests.support.stage import Stage

pytestmark = pytest.mark.e2e

def test_the_seed_story(stage: Stage) -> None:
    # Given a product manager and a salesperson with a phone number, both signed in
    suffix = uuid.uuid4().hex[:8]
    phone_digits = f"139{secrets.randbelow(10**8):08d}"
    product_manager = stage.user(f"pm-{suffix}", name="产品经理")
    salesperson = stage.user(f"sales-{suffix}", name="销售小王", phone=f"+86{phone_digits}")
    sales_id = salesperson.user_id
    with client(stage, product_manager.token) as manager, client(stage, salesperson.token) as sales:
        assert manager.put("/me").status_code == HTTPStatus.OK
        assert sales.put("/me").status_code == HTTPStatus.OK

        # When the product manager creates a KB and uploads the two documents
        created = manager.post("/knowledge-bases", json={"name": stage.kb_name("MemOS 产品资料")})
        assert created.status_code == HTTPStatus.CREATED, created.text
        kb_id = created.json()["id"]
        upload(manager, kb_id, "MemOS产品介绍.md", PRODUCT_INTRO)
        upload(manager, kb_id, "MemOS 开源VS商业化.md", COMPARISON)
        wait_until_available(manager, kb_id, {"MemOS产品介绍.md", "MemOS 开源VS商业化.md"})

        # Then, before sharing, the salesperson's recall has nothing
        assert recall(sales, QUESTION)["scope_size"] == 0

        # When the manager shares it by phone, typed the way people type it
        shared = manager.post(
            f"/knowledge-bases/{kb_id}/members",
            json={"identifier": f"{phone_digits[:3]} {phone_digits[3:7]} {phone_digits[7:]}"},
        )
        assert shared.status_code == HTTPStatus.CREATED, shared.text
        assert shared.json()["user_id"] == sales_id

        # Then the salesperson asks, and the comparison document answers, with its title
        answer = recall(sales, QUESTION)
        assert (answer["scope_size"], answer["discarded"]) == (1, False)
        by_title = {item["title"]: item["content"] for item in answer["items"]}
        assert "MemOS 开源VS商业化" in by_title, answer["items"]
        assert COMPARISON_FACT in by_title["MemOS 开源VS商业化"]
        # ...and cited by its file's name (its first heading only repeats it)
        assert "来源 Source: 《MemOS 开源VS商业化.md》\n" in answer["context"]
        assert COMPARISON_FACT in answer["context"]
        assert DEPLOYMENT_FACT not in answer["context"]

        # When a third file is uploaded, then the salesperson's next recall finds it, with no action of theirs
        upload(manager, kb_id, "MemOS 私有化部署FAQ.md", DEPLOYMENT_FAQ)
        wait_until_available(manager, kb_id, {"MemOS 私有化部署FAQ.md"})
        follow_up = recall(sales, FOLLOW_UP)
        assert any(DEPLOYMENT_FACT in item["content"] for item in follow_up["items"]), follow_up["items"]
        assert "《MemOS 私有化部署FAQ.md》" in follow_up["context"]

        # When the manager revokes, then the next recall has nothing from that KB
        revoked = manager.delete(f"/knowledge-bases/{kb_id}/members/{sales_id}")
        assert revoked.status_code == HTTPStatus.NO_CONTENT
        for query in (QUESTION, FOLLOW_UP):
            after = recall(sales, query)
            assert after == {"items": [], "context": "", "scope_size": 0, "discarded": False, "partial": False}
        # ...and the manager's own recall still works
        assert COMPARISON_FACT in recall(manager, QUESTION)["context"]
