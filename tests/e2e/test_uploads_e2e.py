"""The seed's first step over HTTP on the stage: create a KB, upload `MemOS产品介绍.md` and a PDF through
presigned POSTs (straight to the bucket, moto's S3 on the local stack, never through the API), and watch
both go from processing to available as S3 -> SQS -> ingest -> MemOS runs in the background."""

from __future__ import annotations

import uuid
from http import HTTPStatus

import httpx
import pytest

from tests.support.docgen import make_pdf
from tests.support.polling import wait_until
from tests.support.stack import RunningStack
from tests.support.stage import Stage

pytestmark = pytest.mark.e2e

PRODUCT_INTRO = """# MemOS 产品介绍

MemOS 是面向大模型应用的记忆操作系统。它把对话、文档和知识库中的信息组织成可检索的记忆，
让智能体在每一轮对话前找到相关的上下文。

## 知识库

用户可以创建知识库，上传 PDF、Word、Markdown 等文件。文件被解析、切分并建立索引，
之后可以通过语义检索召回相关片段，并标注来源。

## 适用场景

- 团队文档问答
- 产品资料检索
- 智能体长期记忆
"""


def post_to_s3(ticket: dict, filename: str, data: bytes, content_type: str) -> httpx.Response:
    """A browser-style multipart POST: the policy's fields first, the file last."""
    return httpx.post(
        ticket["url"], data=ticket["fields"], files={"file": (filename, data, content_type)}, timeout=30
    )


def test_two_files_uploaded_by_presigned_post_become_available(stage: Stage) -> None:
    # Given a person, a KB, a Markdown file and a PDF
    headers = {"Authorization": f"Bearer {stage.user(f'alice-{uuid.uuid4().hex[:8]}', name='Alice').token}"}
    md = PRODUCT_INTRO.encode()
    pdf = make_pdf(["Memmy 知识库产品手册", "上传的文件会被解析、切分并建立索引。"])
    with httpx.Client(base_url=stage.api_url, headers=headers, timeout=30) as api:
        kb = api.post("/knowledge-bases", json={"name": stage.kb_name("产品资料")}).json()
        # When each is sent to storage by its presigned POST
        uploads = {}
        for filename, data, ctype in (
            ("MemOS产品介绍.md", md, "text/markdown"),
            ("产品手册.pdf", pdf, "application/pdf"),
        ):
            reply = api.post(
                f"/knowledge-bases/{kb['id']}/uploads", json={"filename": filename, "size_bytes": len(data)}
            )
            assert reply.status_code == HTTPStatus.CREATED, reply.text
            ticket = reply.json()
            if stage.local is not None:
                assert ticket["url"].startswith(stage.local.moto_url)
            assert post_to_s3(ticket, filename, data, ctype).status_code == HTTPStatus.NO_CONTENT
            uploads[ticket["upload_id"]] = filename

        # Then both become available, each as its upload, having gone through the service's states only
        seen: dict[str, set[str]] = {name: set() for name in uploads.values()}

        def both_available() -> list[dict] | None:
            listing = api.get(f"/knowledge-bases/{kb['id']}/files")
            assert listing.status_code == HTTPStatus.OK, listing.text
            files: list[dict] = listing.json()["files"]
            for f in files:
                seen[f["name"]].add(f["status"])
            return files if len(files) == 2 and all(f["status"] == "available" for f in files) else None

        files = wait_until(both_available, timeout=30, interval=0.1, message=lambda: f"both files available ({seen})")

    assert sorted((f["name"], f["status"]) for f in files) == [
        ("MemOS产品介绍.md", "available"),
        ("产品手册.pdf", "available"),
    ], files
    assert {f["upload_id"] for f in files} == set(uploads)
    assert {f["size_bytes"] for f in files} == {len(md), len(pdf)}
    # Nothing reached "available" without the service having recorded it first
    assert all(statuses <= {"uploading", "processing", "available"} for statuses in seen.values()), seen
    if stage.local is not None:
        memos_names_carry_the_upload_ids(stage.local, kb["id"], uploads)


def memos_names_carry_the_upload_ids(local_stack: RunningStack, kb_id: str, uploads: dict[str, str]) -> None:
    """The emulator's MemOS holds each file of ``uploads`` (upload id: name) under its name with the id."""
    state = httpx.get(f"{local_stack.memos_url}/_emulator/state", timeout=10).json()
    (memos_kb,) = [k for k in state["knowledge_bases"] if k["name"] == f"memmy:{kb_id}"]
    # MemOS knows each file under its name with the upload's id in it (how the reconciler finds it)
    by_upload = {upload_id: name.rsplit(".", 1) for upload_id, name in uploads.items()}
    assert sorted(f["name"] for f in memos_kb["files"]) == sorted(
        f"{stem} [{upload_id}].{ext}" for upload_id, (stem, ext) in by_upload.items()
    )


def test_a_renamed_executable_shows_as_failed_with_its_reason(stage: Stage) -> None:
    headers = {"Authorization": f"Bearer {stage.user(f'mallory-{uuid.uuid4().hex[:8]}').token}"}
    payload = b"MZ\x90\x00" + bytes(1000)
    with httpx.Client(base_url=stage.api_url, headers=headers, timeout=30) as api:
        kb = api.post("/knowledge-bases", json={"name": stage.kb_name("可疑")}).json()
        ticket = api.post(
            f"/knowledge-bases/{kb['id']}/uploads",
            json={"filename": "invoice.pdf", "size_bytes": len(payload)},
        ).json()
        assert (
            post_to_s3(ticket, "invoice.pdf", payload, "application/pdf").status_code == HTTPStatus.NO_CONTENT
        )

        def failed() -> list[dict] | None:
            files: list[dict] = api.get(f"/knowledge-bases/{kb['id']}/files").json()["files"]
            return files if files and files[0]["status"] == "failed" else None

        files = wait_until(failed, timeout=20, interval=0.1, message="the upload to fail")

    assert [(f["name"], f["status"], f["reason"]) for f in files] == [
        ("invoice.pdf", "failed", "The file is not a valid PDF.")
    ]
    # The bytes are gone from the bucket (moto answers anyone; S3 refuses an anonymous HEAD alike whether
    # the object is there or not, so a deployed stage cannot be asked this way)
    if stage.local is not None:
        key = ticket["fields"]["key"]
        assert httpx.head(f"{ticket['url']}/{key}", timeout=10).status_code == HTTPStatus.NOT_FOUND
