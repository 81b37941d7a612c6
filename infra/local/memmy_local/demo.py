"""``memmy-local up --demo``: the product story seeded through the API into the running stack (the users,
KBs, documents and share of tests/e2e/test_seed_story_e2e.py), the desktop service signed in as its
salesperson; with ``--data-dir`` a second start finds the story and does not seed it again. The demo's
desktop service has a home of its own (``desktop_side.desktop_home``): its login stays out of a plain
``make run``."""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

PRODUCT_INTRO: Final = """# MemOS产品介绍

MemOS 是面向大模型应用的记忆操作系统，把对话记忆、用户偏好和知识库统一管理，让智能体记得住、找得到。
它提供知识库能力：上传 PDF、Word、Markdown 等文档后，MemOS 会自动解析、切分并建立索引，智能体提问时按语义检索相关片段。
典型场景包括客服问答、销售助手和企业内部知识检索。接入方式为 REST API，每个项目使用独立的 API Key。
"""

COMPARISON: Final = """# MemOS 开源VS商业化

MemOS 开源版和商业版的主要区别在于部署方式、服务保障和企业功能。
开源版采用 Apache 2.0 协议，可以免费下载并私有化自部署，需要自己维护服务器、升级和数据备份，社区提供技术支持。
商业版是托管的云服务，按调用量计费，提供 99.9% 可用性 SLA、专属客户成功经理、单点登录和审计日志等企业功能。
选择建议：技术团队强、对数据有完全自控要求的选开源版；希望快速上线、需要服务保障的企业选商业版。
"""

DEPLOYMENT_FAQ: Final = """# MemOS 私有化部署FAQ

私有化部署需要一台至少 16 核 CPU、64GB 内存的服务器，推荐使用 Docker Compose 一键部署。
部署完成后在管理后台创建项目并生成 API Key，数据全部保存在客户自己的机房内。
"""

SHARED_KB: Final = "MemOS 产品资料"
THIRD_KB: Final = "部署手册"
STORY_FILES: Final = {"MemOS产品介绍.md": PRODUCT_INTRO, "MemOS 开源VS商业化.md": COMPARISON}
THIRD_FILES: Final = {"MemOS 私有化部署FAQ.md": DEPLOYMENT_FAQ}
PROCESSING_TIMEOUT_SECONDS: Final = 60
TOKEN_TTL_SECONDS: Final = 12 * 3600


@dataclass(frozen=True)
class DemoUser:
    user_id: str
    name: str
    phone: str
    email: str


SALESPERSON: Final = DemoUser("sales", "销售小王", "+8613700000001", "sales@example.com")
COLLEAGUE: Final = DemoUser("pm", "产品经理老张", "+8613700000002", "pm@example.com")
THIRD_USER: Final = DemoUser("support", "技术支持小李", "+8613700000003", "support@example.com")


@dataclass(frozen=True)
class Demo:
    """What ``seed`` left: the KBs' ids and whether it found them from an earlier start."""

    shared_kb_id: str
    third_kb_id: str
    seeded_before: bool


def token_for(user: DemoUser, *, key_path: Path, issuer: str) -> str:
    """A login token for ``user``, signed as ``memmy-local token`` signs (the stack's key and issuer)."""
    from memmy_local import tokens

    return tokens.issue_token(
        user.user_id,
        name=user.name,
        phone=user.phone,
        email=user.email,
        ttl_seconds=TOKEN_TTL_SECONDS,
        key_path=key_path,
        issuer=issuer,
    )


def seed(api_url: str, *, key_path: Path, issuer: str) -> Demo:
    """The story in the stack at ``api_url``, once: profiles, both KBs with their files (waited for until
    available), the share. A KB of that name the user already owns is taken as seeded before."""
    from memmy_kb_client.sdk import ClientConfig, MemmyClient

    def client(user: DemoUser) -> MemmyClient:
        return MemmyClient(
            ClientConfig(endpoint=api_url, token=token_for(user, key_path=key_path, issuer=issuer))
        )

    with client(SALESPERSON) as sales, client(COLLEAGUE) as colleague, client(THIRD_USER) as third:
        for each in (sales, colleague, third):
            each.me()  # registers the profile: the share finds the salesperson by phone
        earlier = {
            kb["name"]: kb["id"] for kb in colleague.list_knowledge_bases() if kb.get("role") == "owner"
        }
        earlier_third = {
            kb["name"]: kb["id"] for kb in third.list_knowledge_bases() if kb.get("role") == "owner"
        }
        if SHARED_KB in earlier and THIRD_KB in earlier_third:
            return Demo(earlier[SHARED_KB], earlier_third[THIRD_KB], seeded_before=True)
        shared_kb = _kb_with_files(colleague, SHARED_KB, STORY_FILES)
        colleague.share(shared_kb, SALESPERSON.phone)
        third_kb = _kb_with_files(third, THIRD_KB, THIRD_FILES)
        for owner, kb_id, files in ((colleague, shared_kb, STORY_FILES), (third, third_kb, THIRD_FILES)):
            _wait_until_available(owner, kb_id, set(files))
    return Demo(shared_kb, third_kb, seeded_before=False)


def _kb_with_files(owner: Any, name: str, files: dict[str, str]) -> str:
    kb_id: str = owner.create_knowledge_base(name)["id"]
    with tempfile.TemporaryDirectory(prefix="memmy-demo-") as folder:
        for filename, text in files.items():
            path = Path(folder) / filename
            path.write_text(text, encoding="utf-8")
            owner.upload_file(kb_id, path)
    return kb_id


def _wait_until_available(owner: Any, kb_id: str, names: set[str]) -> None:
    deadline = time.monotonic() + PROCESSING_TIMEOUT_SECONDS
    while True:
        status = {f["name"]: f["status"] for f in owner.list_files(kb_id)["files"]}
        failed = sorted(name for name in names if status.get(name) == "failed")
        if failed:
            raise RuntimeError(f"the demo's files failed to process: {', '.join(failed)}")
        if all(status.get(name) == "available" for name in names):
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"the demo's files were not available after {PROCESSING_TIMEOUT_SECONDS} s")
        time.sleep(0.2)


def page_link_for_salesperson(desktop_state_dir: str, *, key_path: Path, issuer: str) -> str:
    """Sign the desktop service in as the salesperson (as ``memmy-kb desktop login --token`` does) and
    return its one-time page link (as ``memmy-kb desktop open --no-browser`` prints it)."""
    from memmy_kb_client.home.control import call

    call(
        desktop_state_dir,
        "POST",
        "/control/login",
        {"token": token_for(SALESPERSON, key_path=key_path, issuer=issuer)},
    )
    url: str = call(desktop_state_dir, "POST", "/control/page-code")["url"]
    return url


def describe(demo: Demo, page_url: str | None) -> str:
    """What ``up --demo`` prints once the story is there."""
    again = " (found from an earlier start)" if demo.seeded_before else ""
    lines = [
        f"Demo{again}: {SALESPERSON.name} ({SALESPERSON.user_id}), a salesperson, reads the KB "
        f"'{SHARED_KB}' ({len(STORY_FILES)} documents) that {COLLEAGUE.name} ({COLLEAGUE.user_id}) shared "
        f"with them; {THIRD_USER.name} ({THIRD_USER.user_id}) has a KB of their own, '{THIRD_KB}', shared "
        "with nobody.",
    ]
    if page_url is not None:
        from memmy_kb_client.desktop.page import CODE_TTL_SECONDS

        lines.append(
            f"  page, as {SALESPERSON.name}: {page_url}  (one use, within {int(CODE_TTL_SECONDS // 60)} "
            "minutes; press Enter here for a new one)"
        )
    else:
        from memmy_kb_client.home.advice import program

        lines.append(
            f"  as {SALESPERSON.name}: {program('memmy-local')} token {SALESPERSON.user_id} "
            f"--name {SALESPERSON.name} --phone {SALESPERSON.phone}"
        )
    return "\n".join(lines)


def seed_and_describe(api_url: str, issuer: str, data_dir: Path | None, desktop_state_dir: str | None) -> str:
    """``up --demo``: seed (``seed``), sign the desktop service in as the salesperson, and say so; a
    failure is one line saying why (the stack keeps running)."""
    from memmy_kb_client.home.control import ControlError, ServiceUnavailable
    from memmy_kb_client.sdk import MemmyApiError
    from memmy_local import tokens

    key_path = tokens.signing_key_path(data_dir)
    try:
        demo = seed(api_url, key_path=key_path, issuer=issuer)
        page_url = (
            None
            if desktop_state_dir is None
            else page_link_for_salesperson(desktop_state_dir, key_path=key_path, issuer=issuer)
        )
    except (MemmyApiError, ControlError, ServiceUnavailable, RuntimeError, OSError) as err:
        return f"memmy-local up: the demo could not be seeded: {err}"
    return describe(demo, page_url)
