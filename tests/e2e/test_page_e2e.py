"""The knowledge-base page in a real browser (Debian's chromium through Playwright) on the stage.

Two people, each with their own ``memmy-kb desktop serve`` and browser context, walk the seed story
through the page: the owner creates a KB, uploads two documents (file picker, several at once) and
watches them become Available, shares by phone; the reader finds it under "Shared with me" with the
owner's name and asks the comparison question; the owner drops a third file on the page and the reader
finds it; the owner removes the reader, whose page and recall lose the KB. Also: a failed upload shows
its reason, and requests without the session, without the CSRF token or from a foreign Origin are refused.
"""

from __future__ import annotations

import json
import secrets
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from http import HTTPStatus
from typing import Any

import httpx
import pytest

from memmy_local.demo import COMPARISON, DEPLOYMENT_FAQ, PRODUCT_INTRO
from tests.support.e2e_story import COMPARISON_FACT, DEPLOYMENT_FACT, FOLLOW_UP, QUESTION
from tests.support.page_browser import (
    PROCESSING_MS,
    PageUser,
    chromium,
    file_row,
    kb_item,
    md,
    new_page,
    start_user,
)
from tests.support.stage import Stage

# A share goes page -> desktop -> cloud -> identity lookup. Once, in a full run on a loaded 2-core machine,
# its member did not show within the 5 s default (the desktop logged no POST in that window; cause not
# found), so the wait is what a slow machine needs.
SHARE_MS = 20_000

pytestmark = pytest.mark.e2e

@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as running:
        yield running


@pytest.fixture(scope="module")
def people(stage: Stage, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[PageUser, PageUser, str]]:
    suffix = uuid.uuid4().hex[:8]
    phone = f"139{secrets.randbelow(10**8):08d}"
    with ExitStack() as started:
        owner = start_user(
            stage,
            tmp_path_factory.mktemp("owner"),
            stage.user(f"pm-{suffix}", name="产品经理", email=f"pm-{suffix}@example.com"),
        )
        started.callback(owner.stop)
        reader = start_user(
            stage,
            tmp_path_factory.mktemp("reader"),
            stage.user(f"sales-{suffix}", name="销售小王", phone=f"+86{phone}"),
        )
        started.callback(reader.stop)
        yield owner, reader, phone


def drop_files(page: Any, files: list[dict[str, Any]]) -> None:
    """Drag files from the desktop onto the page: a ``drop`` carrying them in its DataTransfer."""
    transfer = page.evaluate_handle(
        """(files) => {
            const transfer = new DataTransfer();
            for (const f of files) transfer.items.add(new File([f.text], f.name, {type: f.type}));
            return transfer;
        }""",
        [{"name": f["name"], "type": f["mimeType"], "text": f["buffer"].decode("utf-8")} for f in files],
    )
    page.dispatch_event("#drop", "dragover", {"dataTransfer": transfer})
    page.dispatch_event("#drop", "drop", {"dataTransfer": transfer})


def test_the_seed_story_through_the_page(browser, people, stage):
    from playwright.sync_api import expect

    # Given the owner's page, and the reader's: opened once (which registers their profile), nothing shared yet
    owner, reader, phone = people
    kb_name = stage.kb_name(f"MemOS 产品资料 {uuid.uuid4().hex[:4]}")
    manager = new_page(browser, owner)
    expect(manager.get_by_role("heading", name="My knowledge bases")).to_be_visible()
    expect(manager.get_by_role("heading", name="Shared with me")).to_be_visible()
    sales = new_page(browser, reader)
    expect(sales.locator("#shared")).to_contain_text("Nobody has shared a knowledge base with you yet.")

    # When the owner creates a KB and uploads two documents at once by the file picker
    manager.get_by_role("button", name="New knowledge base").click()
    manager.get_by_role("textbox", name="Name").fill(kb_name)
    manager.keyboard.press("Enter")
    expect(manager.get_by_role("heading", name=kb_name)).to_be_visible()
    expect(kb_item(manager, "mine", kb_name).get_by_role("switch", name="Recall")).to_have_attribute(
        "aria-checked", "true"
    )
    expect(manager.get_by_role("button", name="Upload")).to_be_visible()
    manager.set_input_files(
        "#file-input", [md("MemOS产品介绍.md", PRODUCT_INTRO), md("MemOS 开源VS商业化.md", COMPARISON)]
    )
    # Then both become Available
    expect(manager.locator("#uploads progress")).to_have_count(2)
    for name in ("MemOS产品介绍.md", "MemOS 开源VS商业化.md"):
        expect(file_row(manager, name)).to_contain_text("Available", timeout=PROCESSING_MS)

    # When the owner shares it by phone, typed the way people type it
    manager.get_by_role("button", name="Share").click()
    manager.get_by_role("textbox", name="User ID, phone or email").fill(
        f"{phone[:3]} {phone[3:7]} {phone[7:]}"
    )
    manager.get_by_role("button", name="Add").click()
    members = manager.get_by_role("list", name="Members")
    expect(members).to_contain_text("销售小王", timeout=SHARE_MS)
    # Then the reader is a member, and sharing again is refused with a message a person understands
    manager.get_by_role("textbox", name="User ID, phone or email").fill(phone)
    manager.get_by_role("button", name="Add").click()
    expect(manager.locator("#dialog-error")).to_have_text("They already have access.")
    manager.keyboard.press("Escape")

    # Then the reader sees it under "Shared with me" with the owner's name, read-only
    sales.reload()
    shared = kb_item(sales, "shared", kb_name)
    expect(shared).to_contain_text("产品经理")
    listed = sales.evaluate("fetch('/api/knowledge-bases').then(r => r.json())")["items"]
    contact = next(kb["owner"].get("contact") for kb in listed if kb["name"] == kb_name)
    if contact:  # the owner's masked contact, where the cloud sends one
        expect(shared).to_contain_text(contact)
    expect(shared.get_by_role("button", name="Leave")).to_be_visible()
    expect(shared.get_by_role("switch", name="Recall")).to_be_visible()
    shared.get_by_role("button", name=kb_name, exact=True).click()
    expect(file_row(sales, "MemOS 开源VS商业化.md")).to_contain_text("Available")
    # The open KB names who shared it, as the list does (not "someone")
    expect(sales.locator("#kb-readonly")).to_have_text("Read only: 产品经理 shared this knowledge base with you.")
    for owner_only in ("Upload", "Share", "New folder", "Delete", "Rename", "Move"):
        expect(sales.get_by_role("button", name=owner_only, exact=True)).to_have_count(0)

    # When the reader asks, then the comparison document's excerpt comes back, cited by its file
    sales.get_by_role("textbox", name="Try a question").fill(QUESTION)
    sales.get_by_role("button", name="Ask").click()
    answer = sales.locator("#answer")
    expect(answer.locator(".excerpt").filter(has_text="MemOS 开源VS商业化.md")).to_contain_text(
        COMPARISON_FACT
    )
    # ...and which KB it came from, and whose share it is
    source = answer.locator(".excerpt").filter(has_text="MemOS 开源VS商业化.md").locator(".source")
    expect(source).to_contain_text(f"From {kb_name}")
    expect(source).to_contain_text("Shared by 产品经理")
    expect(answer.locator("pre")).to_contain_text("《MemOS 开源VS商业化.md》", use_inner_text=False)

    # When the owner drops a third file on the page, then the reader finds it, and recall does too
    drop_files(manager, [md("MemOS 私有化部署FAQ.md", DEPLOYMENT_FAQ)])
    expect(file_row(manager, "MemOS 私有化部署FAQ.md")).to_contain_text("Available", timeout=PROCESSING_MS)
    sales.reload()
    kb_item(sales, "shared", kb_name).get_by_role("button", name=kb_name, exact=True).click()
    expect(file_row(sales, "MemOS 私有化部署FAQ.md")).to_contain_text("Available")
    sales.get_by_role("textbox", name="Try a question").fill(FOLLOW_UP)
    sales.get_by_role("button", name="Ask").click()
    expect(answer).to_contain_text(DEPLOYMENT_FACT)

    # When the owner removes the reader, then the reader's page and recall lose the KB
    manager.get_by_role("button", name="Share").click()
    manager.get_by_role("button", name="Remove 销售小王").click()
    expect(members).to_contain_text("Not shared with anyone yet.")
    manager.keyboard.press("Escape")
    sales.reload()
    expect(sales.locator("#shared")).to_contain_text("Nobody has shared a knowledge base with you yet.")
    expect(sales.get_by_role("button", name=kb_name, exact=True)).to_have_count(0)
    sales.get_by_role("textbox", name="Try a question").fill(QUESTION)
    sales.get_by_role("button", name="Ask").click()
    # No KB left to search: said so, and how to get one, not "nothing matched"
    expect(answer).to_contain_text("You have no knowledge bases in recall yet: create one")
    expect(answer).not_to_contain_text("Nothing found")

    # When it is shared again and the reader leaves it, then it is gone from the reader's page
    manager.get_by_role("button", name="Share").click()
    manager.get_by_role("textbox", name="User ID, phone or email").fill(reader.user_id)
    manager.get_by_role("button", name="Add").click()
    expect(members).to_contain_text("销售小王", timeout=SHARE_MS)
    manager.keyboard.press("Escape")
    sales.reload()
    kb_item(sales, "shared", kb_name).get_by_role("button", name="Leave").click()
    sales.get_by_role("dialog").get_by_role("button", name="Leave").click()
    expect(sales.get_by_role("button", name=kb_name, exact=True)).to_have_count(0)
    sales.context.close()
    manager.context.close()


def test_a_failed_upload_shows_its_reason_and_folders_work(browser, people, stage):
    from playwright.sync_api import expect

    # Given a new KB on the owner's page
    owner, _, _ = people
    page = new_page(browser, owner)
    page.get_by_role("button", name="New knowledge base").click()
    page.get_by_role("textbox", name="Name").fill(stage.kb_name("可疑"))
    page.get_by_role("button", name="Create").click()
    expect(page.get_by_role("heading", name=stage.kb_name("可疑"))).to_be_visible()

    # When a folder is made and entered by its name, then the breadcrumbs show it
    page.get_by_role("button", name="New folder").click()
    page.get_by_role("textbox", name="Name").fill("合同")
    page.keyboard.press("Enter")
    page.get_by_role("button", name="合同", exact=True).click()
    expect(page.get_by_role("navigation", name="Breadcrumbs")).to_contain_text("合同")

    # When a fake PDF and a Markdown file are uploaded into it, then the PDF fails with its reason
    payload = b"MZ\x90\x00" + bytes(1000)
    page.set_input_files(
        "#file-input",
        [
            {"name": "invoice.pdf", "mimeType": "application/pdf", "buffer": payload},
            md("MemOS产品介绍.md", PRODUCT_INTRO),
        ],
    )
    row = file_row(page, "invoice.pdf")
    expect(row).to_contain_text("Failed", timeout=PROCESSING_MS)
    expect(row).to_contain_text("The file is not a valid PDF.")

    # Then an upload that failed is no file yet: nothing to move or delete, only to dismiss
    expect(row.get_by_role("button")).to_have_text(["Dismiss"])

    # When the Markdown file is moved to the top level, then it leaves the folder
    moved = file_row(page, "MemOS产品介绍.md")
    expect(moved).to_contain_text("Available", timeout=PROCESSING_MS)
    moved.get_by_role("button", name="Move").click()
    page.get_by_role("combobox", name="Move to").select_option(label="Top level")
    page.get_by_role("dialog").get_by_role("button", name="Move").click()
    expect(moved).to_have_count(0)

    # When, back at the top level by the breadcrumbs, the folder is renamed and deleted with what is in it,
    # then it is gone and the moved file stays
    page.get_by_role("navigation", name="Breadcrumbs").get_by_role("button", name="All files").click()
    folder = file_row(page, "合同")
    folder.get_by_role("button", name="Rename").click()
    page.get_by_role("textbox", name="Name").fill("旧合同")
    page.keyboard.press("Enter")
    folder = file_row(page, "旧合同")
    folder.get_by_role("button", name="Delete").click()
    page.get_by_role("dialog").get_by_role("button", name="Delete").click()
    expect(folder).to_have_count(0)
    expect(file_row(page, "MemOS产品介绍.md")).to_contain_text("Available")
    page.context.close()


def test_requests_without_the_session_csrf_or_own_origin_are_refused(browser, people):
    # Given the owner's page session: its cookie, its CSRF token, its origin
    owner, _, _ = people
    page = new_page(browser, owner)
    page.get_by_role("heading", name="My knowledge bases").wait_for()
    cookies = {c["name"]: c["value"] for c in page.context.cookies()}
    session = page.evaluate("fetch('/api/session').then(r => r.json())")
    page.context.close()
    (cookie_name,) = [name for name in cookies if name.startswith("memmy_kb_session_")]
    base = owner.desktop.url
    own = {"Origin": base, "X-CSRF-Token": session["csrf"], "Cookie": f"{cookie_name}={cookies[cookie_name]}"}
    body = {"name": "x"}
    with httpx.Client(base_url=base, timeout=10) as local:
        # When a request lacks one of them, or comes from another site, a port or the hook, then it is refused
        assert local.get("/api/knowledge-bases").status_code == 401  # no session
        assert (
            local.get("/api/knowledge-bases", headers={"Cookie": f"{cookie_name}=forged"}).status_code == 401
        )
        no_csrf = {k: v for k, v in own.items() if k != "X-CSRF-Token"}
        assert local.post("/api/knowledge-bases", json=body, headers=no_csrf).status_code == 403
        foreign = {**own, "Origin": "http://evil.example"}
        refused = local.post("/api/knowledge-bases", json=body, headers=foreign)
        assert (refused.status_code, refused.json()["error"]["code"]) == (403, "forbidden_origin")
        other_port = {**own, "Origin": "http://127.0.0.1:1"}
        assert local.post("/api/knowledge-bases", json=body, headers=other_port).status_code == 403
        rebound = local.get("/api/knowledge-bases", headers={**own, "Host": "evil.example"})
        assert rebound.status_code == 403
        hook = {"Authorization": f"Bearer {owner.desktop.hook_token}"}
        assert local.get("/api/knowledge-bases", headers=hook).status_code == 403
        # Only cloud routes the page needs are sent on
        assert local.get("/api/anything", headers=own).status_code == 404
        # With all three, the same request goes through
        assert local.get("/api/knowledge-bases", headers=own).status_code == 200
        # When a page of another site (and one on another port of 127.0.0.1) in the same browser, where the
        # session cookie lives, tries to create a KB, then nothing is created
        for origin in ("http://evil.example", "http://127.0.0.1:9"):
            attacker = page.context.browser.new_context()
            attacker.add_cookies([{"name": cookie_name, "value": cookies[cookie_name], "url": base}])
            attacker.route(
                f"{origin}/**", lambda route: route.fulfill(body="<p>hi</p>", content_type="text/html")
            )
            tab = attacker.new_page()
            tab.goto(f"{origin}/")
            tab.evaluate(
                """(url) => Promise.all([
                    fetch(url + '/api/knowledge-bases', {method: 'POST', mode: 'no-cors', credentials: 'include',
                      headers: {'Content-Type': 'text/plain'}, body: JSON.stringify({name: 'evil'})}).catch(() => null),
                    fetch(url + '/api/knowledge-bases', {credentials: 'include'}).catch(() => null),
                ])""",
                base,
            )
            attacker.close()
        names = [kb["name"] for kb in local.get("/api/knowledge-bases", headers=own).json()["items"]]
        assert "evil" not in names
        # Then the one-time link works once: again, in a browser without the session it made, it is refused
        link = owner.open_url()
        assert local.get(link.removeprefix(base)).status_code == 303
        local.cookies.clear()
        assert local.get(link.removeprefix(base)).status_code == 403
    # Then the page is told who is logged in and which commands to name, never the cloud login itself
    assert set(session) == {"csrf", "login", "user", "commands"}
    assert set(session["commands"]) <= {"open", "login", "stack"}


def test_the_session_cookie_is_httponly_and_strict(browser, people):
    owner, _, _ = people
    page = new_page(browser, owner)
    page.get_by_role("heading", name="My knowledge bases").wait_for()
    (cookie,) = [c for c in page.context.cookies() if c["name"].startswith("memmy_kb_session_")]
    assert (cookie["httpOnly"], cookie["sameSite"]) == (True, "Strict")
    assert page.evaluate("document.cookie") == ""
    page.context.close()


@pytest.mark.parametrize(
    ("locale", "heading"), [("zh-CN", "我的知识库"), ("fr-FR", "我的知识库"), ("en-GB", "My knowledge bases")]
)
def test_chinese_by_default_english_for_an_english_browser(browser, people, locale, heading):
    from playwright.sync_api import expect

    owner, _, _ = people
    page = new_page(browser, owner, lang=None, locale=locale)
    expect(page.get_by_role("heading", name=heading, exact=True)).to_be_visible()
    page.context.close()


def test_keyboard_only_and_no_layout_break_from_360_to_1920_px(browser, people, stage):
    from playwright.sync_api import expect

    owner, _, _ = people
    name = stage.kb_name("键盘")
    page = new_page(browser, owner, width=360, height=740)
    # Create a KB and switch its recall off with the keyboard alone
    page.get_by_role("button", name="New knowledge base").focus()
    page.keyboard.press("Enter")
    expect(page.get_by_role("textbox", name="Name")).to_be_focused()
    page.keyboard.type(name)
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name=name, exact=True)).to_be_visible()
    switch = kb_item(page, "mine", name).get_by_role("switch", name="Recall")
    switch.focus()
    page.keyboard.press("Space")
    expect(switch).to_have_attribute("aria-checked", "false")
    # The sharing dialog opens on Enter, takes focus, and closes on Escape
    page.get_by_role("button", name="Share").focus()
    page.keyboard.press("Enter")
    expect(page.get_by_role("textbox", name="User ID, phone or email")).to_be_focused()
    page.keyboard.press("Escape")
    expect(page.get_by_role("dialog")).to_be_hidden()
    for width in (360, 768, 1280, 1920):
        page.set_viewport_size({"width": width, "height": 900})
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"{overflow} px wider than a {width} px window"
    page.context.close()


REFUSALS = [
    (404, "account_not_found", "No account has this user ID, phone or email"),
    (400, "cannot_share_with_self", "That is you"),
    (409, "already_member", "They already have access."),
    (409, "member_limit_reached", "as many members as it can have"),
    (429, "rate_limited", "Too many attempts"),
]


def refusing(status: int, body: str) -> Any:
    def handler(route: Any) -> None:
        if route.request.method == "POST":
            route.fulfill(status=status, body=body, content_type="application/json")
        else:
            route.continue_()

    return handler


def test_each_sharing_refusal_reads_as_a_sentence(browser, people, stage):
    """The cloud's refusals, by the codes it sends, each shown as a sentence (the seed story meets the real
    cloud's ``already_member``; here each one is played back to the page)."""
    from playwright.sync_api import expect

    owner, _, _ = people
    page = new_page(browser, owner)
    page.get_by_role("button", name="New knowledge base").click()
    page.get_by_role("textbox", name="Name").fill(stage.kb_name("拒绝"))
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name=stage.kb_name("拒绝"), exact=True)).to_be_visible()
    page.get_by_role("button", name="Share").click()
    for status, code, sentence in REFUSALS:
        body = json.dumps({"error": {"code": code, "message": code}})
        page.route("**/api/knowledge-bases/*/members", refusing(status, body))
        page.get_by_role("textbox", name="User ID, phone or email").fill("someone")
        page.get_by_role("button", name="Add").click()
        expect(page.locator("#dialog-error")).to_contain_text(sentence)
        page.unroute("**/api/knowledge-bases/*/members")
    page.context.close()


def test_a_question_past_the_accounts_recall_limit_says_why_and_when_to_ask_again(browser, people):
    """The cloud's 429 ``recall_rate_limited`` (docs/limits.md, "Recall per user"), played back to the page
    as the cloud sends it: a sentence with the wait, not the code."""
    from playwright.sync_api import expect

    owner, _, _ = people
    page = new_page(browser, owner)
    error = {"code": "recall_rate_limited", "message": "Too many recalls", "details": {"retry_after_seconds": 7}}
    page.route("**/api/recall", refusing(HTTPStatus.TOO_MANY_REQUESTS, json.dumps({"error": error})))
    page.get_by_role("textbox", name="Try a question").fill(QUESTION)
    page.get_by_role("button", name="Ask").click()
    answer = page.locator("#answer")
    expect(answer).to_contain_text(
        "Your account has asked for more recalls than its limit allows just now (your agents' turns count too),"
        " so nothing was searched: ask again in 7 s."
    )
    expect(answer).not_to_contain_text("recall_rate_limited")
    page.context.close()
