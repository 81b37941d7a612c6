"""The seed story's words and steps over HTTP on the stage, for the e2e tests that tell it: the questions,
sentences that appear in exactly one demo document each (the documents are ``memmy_local.demo``'s), an
upload through a presigned POST, the wait until files are available, a recall."""

from __future__ import annotations

import uuid
from http import HTTPStatus
from typing import Any

import httpx

from tests.support.polling import wait_until
from tests.support.stage import ApiTarget

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
    upload_id: str = body["upload_id"]
    return upload_id


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
    answer: dict[str, Any] = reply.json()
    return answer
