"""Log hygiene: the whole seed story at DEBUG, and not one secret or personal datum in any log line.

On Lambda, the template's ``LoggingConfig.ApplicationLogLevel`` (advanced logging controls) sets
``AWS_LAMBDA_LOG_LEVEL`` and the runtime sets the *root* logger to it, so at DEBUG every library logger
that has no level of its own logs too: botocore (request and response bodies: the MemOS key in
GetSecretValue's answer, DynamoDB items with emails and phones, SigV4 canonical requests with the
session token), urllib3, httpx and httpcore (URLs, headers), the X-Ray SDK (segment documents). The
Powertools Logger follows the same variable.

So the story runs in-process through the real handlers (moto and the MemOS emulator, as the rest of the
integration tier does) with ``POWERTOOLS_LOG_LEVEL`` and ``AWS_LAMBDA_LOG_LEVEL`` at DEBUG, the Powertools
Logger at DEBUG and the root logger at DEBUG, and captures everything a function would print: the
Powertools Logger's JSON lines (its own stream), what the function prints (Metrics' EMF lines) and every
stdlib record (a handler on the root logger), each attributed to the function that was running. Then
every line is searched for every secret in every form a log could carry it (raw, JSON-escaped once or
twice, URL-encoded, base64, Python's repr).

Secrets: the MemOS key, the AWS secret key and session token, the login tokens (real signed JWTs in the
events' ``Authorization`` header, as API Gateway passes it on), presigned POST fields and presigned GET
signatures, recall queries, excerpts and the context block, file contents, emails and phones. Hook
tokens never reach the cloud (the desktop's local service calls it with the login), so they cannot be
in these logs.

The scanner is checked against planted secrets in each form, and the capture against a leak put back
(library loggers unpinned): this test fails when a leak returns. The capture and the scanner are
tests/support/log_scan.py; their own checks, and the logging settings' (the event never logged, library
loggers pinned), are test_log_scan.py.
"""

from __future__ import annotations

import importlib
import logging
import uuid
from dataclasses import dataclass, field
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import boto3
import pytest

from memmy_kb import observability
from memmy_kb.adapters.memos.client import MemosClient
from memmy_local import tokens
from tests.support.events import claims_for
from tests.support.log_scan import LogCapture, capture_logs, content_secrets, report, scan
from tests.support.polling import wait_until
from tests.support.uploads import drain_ingest, post_file, request_upload

__all__ = ["capture_logs"]  # the fixture: every log line a function writes, captured

FUNCTIONS = (
    "create_kb",
    "manage_kb",
    "share",
    "upload",
    "ingest",
    "recall",
    "delete",
    "cleanup",
    "reconcile",
)
# Lines each function must have produced, so that the scan has something to scan.
MIN_LINES_PER_FUNCTION = 1
MIN_LINES = 30
SEARCH, ADD = "/search/memory", "/add/knowledgebase-file"

# The AWS credentials the functions run with (moto takes any): the SigV4 secret and the session token
# (which also travels in every presigned POST) must not be logged either.
AWS_SECRET_ACCESS_KEY = "LogHygieneSecretAccessKey0123456789abcdEF"
AWS_SESSION_TOKEN = "LogHygieneSessionToken/FwoGZXIvYXdzEJr//////////wEaDM0123456789"

OWNER, READER = "pm-hygiene", "sales-hygiene"
OWNER_EMAIL, READER_EMAIL = "pm.hygiene@example.com", "xiaowang.sales@example.com"
OWNER_PHONE, READER_PHONE = "+8613800571234", "+8613912345678"
READER_PHONE_TYPED = "139 1234 5678"
UNKNOWN_EMAIL = "nobody.registered@example.org"

PRODUCT_INTRO = """# MemOS产品介绍

MemOS 是面向大模型应用的记忆操作系统，把对话记忆、用户偏好和知识库统一管理，让智能体记得住、找得到。
它提供知识库能力：上传 PDF、Word、Markdown 等文档后，MemOS 会自动解析、切分并建立索引。
典型场景包括客服问答、销售助手和企业内部知识检索。接入方式为 REST API，每个项目使用独立的 API Key。
"""
COMPARISON = """# MemOS 开源VS商业化

MemOS 开源版和商业版的主要区别在于部署方式、服务保障和企业功能。
开源版采用 Apache 2.0 协议，可以免费下载并私有化自部署，需要自己维护服务器、升级和数据备份。
商业版是托管的云服务，按调用量计费，提供 99.9% 可用性 SLA、专属客户成功经理、单点登录和审计日志。
"""
COMPARISON_V2 = (
    COMPARISON + "2026 年起商业版新增私有网络接入，年付客户享受八五折优惠 Confidential-Pricing-7731。\n"
)
# The rejected upload: text that claims to be a PDF.
NOT_A_PDF = "这不是PDF文件，而是伪装的文本：季度销售目标为一千二百万元 Quarterly-Target-Secret-4417。\n"
QUESTION = "MemOS 开源版和商业版有什么区别"
FOLLOW_UP = "商业版的年付折扣是多少 discount-question-5523"
FAILING_QUESTION = "私有化部署需要什么配置的服务器 failing-question-8861"


@pytest.fixture
def debug_logs(service, capture_logs: LogCapture, monkeypatch: pytest.MonkeyPatch) -> LogCapture:
    """The functions on moto and the emulator at DEBUG, each one's lines attributed to it."""
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", AWS_SECRET_ACCESS_KEY)
    monkeypatch.setenv("AWS_SESSION_TOKEN", AWS_SESSION_TOKEN)
    # boto3's default session has cached the credentials it first read: a fresh one reads these.
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)
    for name in FUNCTIONS:
        module = importlib.import_module(f"functions.{name}.app")
        original = module.lambda_handler

        def instrumented(event: Any, context: Any, _original: Any = original, _name: str = name) -> Any:
            with capture_logs.running(_name):
                return _original(event, context)

        monkeypatch.setattr(module, "lambda_handler", instrumented)
    return capture_logs


# -- the story ----------------------------------------------------------------------------------------


@dataclass
class Story:
    """The seed story's actors and every secret it handed the service."""

    service: Any
    tokens: dict[str, str]
    secrets: dict[str, str] = field(default_factory=dict)

    def call(self, method: str, path: str, user: str, **kwargs: Any) -> Any:
        headers = {"Authorization": f"Bearer {self.tokens[user]}", **kwargs.pop("headers", {})}
        return self.service.call(method, path, claims=CLAIMS[user], headers=headers, **kwargs)

    def upload(self, kb_id: str, filename: str, text: str, folder_id: str | None = None) -> str:
        data = text.encode()
        extra = {"folder_id": folder_id} if folder_id else {}
        ticket = self.call(
            "POST",
            f"/knowledge-bases/{kb_id}/uploads",
            OWNER,
            body={"filename": filename, "size_bytes": len(data), **extra},
            headers={"Idempotency-Key": str(uuid.uuid4())},
        )
        assert ticket.status == HTTPStatus.CREATED, ticket.body
        for name, value in ticket.body["fields"].items():
            if name.lower() in {"policy", "x-amz-signature", "x-amz-security-token", "signature"}:
                self.secrets[f"presigned POST {name} of {filename}"] = value
        assert post_file(ticket.body, data, filename).status_code == HTTPStatus.NO_CONTENT
        return str(ticket.body["upload_id"])


CLAIMS = {
    OWNER: claims_for(OWNER, name="产品经理", email=OWNER_EMAIL, phone=OWNER_PHONE),
    READER: claims_for(READER, name="销售小王", email=READER_EMAIL, phone=READER_PHONE),
}


def wait_until_available(story: Story, kb_id: str, names: set[str], timeout: float = 15) -> None:
    def available() -> bool:
        listed = story.call("GET", f"/knowledge-bases/{kb_id}/files", OWNER)
        assert listed.status == HTTPStatus.OK, listed.body
        status = {f["name"]: f["status"] for f in listed.body["files"]}
        return all(status.get(name) == "available" for name in names)

    wait_until(available, timeout=timeout, message=f"{names} to be available")


def make_story(service: Any, key_dir: Path) -> Story:
    """The two users with real signed login tokens, and the secrets known before anything runs."""
    login = {
        user: tokens.issue_token(
            user,
            name=claims["name"],
            email=claims["email"],
            phone=claims["phone_number"],
            key_path=key_dir / "signing-key.pem",
            issuer="memmy-test",
            audience="memmy-kb",
        )
        for user, claims in CLAIMS.items()
    }
    story = Story(service, login)
    story.secrets.update(
        {
            "MemOS key": service.memos.api_key,
            "AWS secret access key": AWS_SECRET_ACCESS_KEY,
            "AWS session token": AWS_SESSION_TOKEN,
            "owner email": OWNER_EMAIL,
            "reader email": READER_EMAIL,
            "unknown email": UNKNOWN_EMAIL,
            "owner phone": OWNER_PHONE,
            "owner phone (national)": OWNER_PHONE.removeprefix("+86"),
            "reader phone": READER_PHONE,
            "reader phone (national)": READER_PHONE.removeprefix("+86"),
            "reader phone (as typed)": READER_PHONE_TYPED,
            "recall question": QUESTION,
            "follow-up question": FOLLOW_UP,
            "failing question": FAILING_QUESTION,
        }
    )
    for user, token in login.items():
        story.secrets[f"login token of {user}"] = token
        story.secrets[f"login token signature of {user}"] = token.rsplit(".", 1)[1]
    for name, text in (
        ("intro", PRODUCT_INTRO),
        ("comparison", COMPARISON),
        ("comparison v2", COMPARISON_V2),
    ):
        story.secrets.update(content_secrets(name, text))
    story.secrets.update(content_secrets("rejected upload", NOT_A_PDF))
    return story


def run_seed_story(service: Any, key_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Story:
    """Create, upload, share by phone, recall, update a file, fail at MemOS, reject an upload, revoke."""
    story = make_story(service, key_dir)

    # MemOS gets large files as presigned GET URLs: record them, their signatures are secrets too.
    sent_urls: list[str] = []
    original_add = MemosClient.add_knowledgebase_files

    def recording_add(self: MemosClient, kb_id: str, files: Any) -> Any:
        sent_urls.extend(f.content for f in files if f.content.startswith("http"))
        return original_add(self, kb_id, files)

    monkeypatch.setattr(MemosClient, "add_knowledgebase_files", recording_add)

    for user in (OWNER, READER):
        assert story.call("PUT", "/me", user).status == HTTPStatus.OK
    created = story.call(
        "POST",
        "/knowledge-bases",
        OWNER,
        body={"name": "MemOS 产品资料"},
        headers={"Idempotency-Key": "kb-1"},
    )
    assert created.status == HTTPStatus.CREATED, created.body
    kb_id = created.body["id"]

    story.upload(kb_id, "MemOS产品介绍.md", PRODUCT_INTRO)
    story.upload(kb_id, "MemOS 开源VS商业化.md", COMPARISON)
    assert not drain_ingest(service).failed
    wait_until_available(story, kb_id, {"MemOS产品介绍.md", "MemOS 开源VS商业化.md"})

    # Shared by phone, typed the way people type it; a share to an email nobody registered is refused.
    shared = story.call(
        "POST", f"/knowledge-bases/{kb_id}/members", OWNER, body={"identifier": READER_PHONE_TYPED}
    )
    assert shared.status == HTTPStatus.CREATED, shared.body
    refused = story.call(
        "POST", f"/knowledge-bases/{kb_id}/members", OWNER, body={"identifier": UNKNOWN_EMAIL}
    )
    assert refused.status == HTTPStatus.NOT_FOUND, refused.body
    assert story.call("GET", f"/knowledge-bases/{kb_id}/members", OWNER).status == HTTPStatus.OK

    # The reader sees it with the owner's masked contact, and asks.
    assert story.call("GET", "/knowledge-bases", READER).status == HTTPStatus.OK
    answer = story.call("POST", "/recall", READER, body={"query": QUESTION})
    assert answer.status == HTTPStatus.OK, answer.body
    assert answer.body["items"], answer.body
    for number, item in enumerate(answer.body["items"]):
        story.secrets[f"excerpt {number}"] = item["content"]
    story.secrets["context block"] = answer.body["context"][-200:]

    # The owner updates the comparison: a new version (sent to MemOS as a presigned GET URL) into a
    # folder; MemOS fails its first add (the message comes back); the old version is deleted and cleaned up.
    folder = story.call("POST", f"/knowledge-bases/{kb_id}/folders", OWNER, body={"name": "2026"})
    assert folder.status == HTTPStatus.CREATED, folder.body
    monkeypatch.setenv("INLINE_UPLOAD_MAX_BYTES", "64")
    from memmy_kb.composition import reset_composition

    reset_composition()
    service.memos.add_fault(ADD, code=50004, times=1)
    story.upload(kb_id, "MemOS 开源VS商业化 v2.md", COMPARISON_V2, folder_id=folder.body["id"])
    assert drain_ingest(service).failed  # MemOS was down: retried later
    assert not drain_ingest(service).failed
    assert sent_urls, "the new version should have gone to MemOS as a presigned GET URL"
    for number, url in enumerate(sent_urls):
        (signature,) = parse_qs(urlsplit(url).query)["X-Amz-Signature"]
        story.secrets[f"presigned GET signature {number}"] = signature
    monkeypatch.delenv("INLINE_UPLOAD_MAX_BYTES")
    reset_composition()

    listed = story.call("GET", f"/knowledge-bases/{kb_id}/files", OWNER)
    (old,) = [f for f in listed.body["files"] if f["name"] == "MemOS 开源VS商业化.md"]
    deleted = story.call("DELETE", f"/knowledge-bases/{kb_id}/files/{old['id']}", OWNER)
    assert deleted.status == HTTPStatus.ACCEPTED, deleted.body
    assert service.invoke("CleanupFunction", {"cleanup_id": deleted.body["cleanup_id"]})["done"]

    # A rejected upload: not a PDF.
    story.upload(kb_id, "季度目标.pdf", NOT_A_PDF)
    assert not drain_ingest(service).failed
    refused_type = request_upload(service, kb_id, "setup.exe", 10, user=OWNER)
    assert refused_type.status == HTTPStatus.UNSUPPORTED_MEDIA_TYPE

    # MemOS failing a search: the recall fails closed.
    service.memos.add_fault(SEARCH, code=50004)
    failing = story.call("POST", "/recall", READER, body={"query": FAILING_QUESTION})
    assert failing.status == HTTPStatus.SERVICE_UNAVAILABLE, failing.body
    service.memos.clear_faults()
    follow_up = story.call("POST", "/recall", READER, body={"query": FOLLOW_UP})
    assert follow_up.status == HTTPStatus.OK, follow_up.body

    # The owner revokes; the reader's recall is empty; the reconciler runs.
    revoked = story.call("DELETE", f"/knowledge-bases/{kb_id}/members/{READER}", OWNER)
    assert revoked.status == HTTPStatus.NO_CONTENT, revoked.body
    after = story.call("POST", "/recall", READER, body={"query": QUESTION})
    assert after.body["scope_size"] == 0
    service.invoke("ReconcileFunction", {"source": "aws.scheduler"})
    return story


# -- the tests ----------------------------------------------------------------------------------------


def test_the_seed_story_at_debug_logs_no_secret(
    debug_logs: LogCapture, service, tmp_path, monkeypatch
) -> None:
    story = run_seed_story(service, tmp_path, monkeypatch)

    # The scan has something to scan: every function logged, through every channel.
    per_function = debug_logs.per_function()
    print(f"\nlog lines scanned: {len(debug_logs.lines)}, per function {dict(sorted(per_function.items()))}")
    assert {f: per_function[f] for f in FUNCTIONS if per_function[f] < MIN_LINES_PER_FUNCTION} == {}
    assert len(debug_logs.lines) >= MIN_LINES
    assert {"powertools", "stdout", "httpx"} <= {line.source for line in debug_logs.lines}
    leaks = scan(debug_logs.lines, story.secrets)
    assert not leaks, report(leaks)


def test_a_library_logger_unpinned_again_leaks_and_is_caught(
    debug_logs: LogCapture, service, tmp_path
) -> None:
    # Given the libraries' loggers inheriting the root's DEBUG again, as they would without the pin
    story = make_story(service, tmp_path)
    pinned = {name: logging.getLogger(name).level for name in observability.QUIET_LIBRARY_LOGGERS}
    try:
        for name in pinned:
            logging.getLogger(name).setLevel(logging.NOTSET)
        assert story.call("PUT", "/me", OWNER).status == HTTPStatus.OK
        created = story.call("POST", "/knowledge-bases", OWNER, body={"name": "资料"})
        assert created.status == HTTPStatus.CREATED, created.body
    finally:
        for name, level in pinned.items():
            logging.getLogger(name).setLevel(level)

    # Then the scan finds the MemOS key (GetSecretValue's answer), the profile's email and phone (the
    # DynamoDB request) and the session token (the signed request)
    leaked = {leak.secret for leak in scan(debug_logs.lines, story.secrets)}
    assert {"MemOS key", "owner email", "owner phone", "AWS session token"} <= leaked, leaked
