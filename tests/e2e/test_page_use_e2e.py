"""The knowledge-base page invites use: what a new user sees first, the layout in both languages, the
share dialog, excerpts, upload progress, failed uploads (worded in the page's language, and dismissed),
each KB's size, keyboard and focus, and an axe-core check of the main views (Debian's chromium through
Playwright, on the stage).

One person, one KB, a few page loads: each test groups the assertions one load allows.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from memmy_local.demo import PRODUCT_INTRO
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
from tests.support.polling import wait_until
from tests.support.stage import Stage, StageUser

pytestmark = pytest.mark.e2e

KB_NAME = "产品资料"
BAD_PDF = {"name": "invoice.pdf", "mimeType": "application/pdf", "buffer": b"MZ\x90\x00" + bytes(1000)}
WIDTHS = (1024, 1280, 1920)
LONG_INTRO = PRODUCT_INTRO * 40  # some KB, so its size reads in KB

# Every visible heading, control and KB list item, and each pair of them whose boxes overlap (one inside
# the other does not count); and each heading row whose button went under its heading.
LAYOUT_PROBLEMS = """() => {
  const shown = (n) => n.offsetParent !== null && !n.closest("dialog:not([open])");
  const nodes = Array.from(document.querySelectorAll(
    "h1, h2, h3, button, a, input, select, progress, .kbs > li")).filter(shown);
  const boxes = nodes.map((n) => [n, n.getBoundingClientRect()]).filter(([, r]) => r.width && r.height);
  const name = (n) => `${n.tagName.toLowerCase()}#${n.id}"${(n.textContent || "").trim().slice(0, 30)}"`;
  const problems = [];
  for (let i = 0; i < boxes.length; i++) {
    for (let j = i + 1; j < boxes.length; j++) {
      const [a, ra] = boxes[i];
      const [b, rb] = boxes[j];
      if (a.contains(b) || b.contains(a)) continue;
      if (ra.left < rb.right - 1 && rb.left < ra.right - 1 && ra.top < rb.bottom - 1 && rb.top < ra.bottom - 1) {
        problems.push(`${name(a)} overlaps ${name(b)}`);
      }
    }
  }
  for (const row of document.querySelectorAll(".row.between")) {
    const heading = row.querySelector(":scope > h2");
    const button = row.querySelector(":scope > button");
    if (!heading || !button || !shown(button) || !shown(heading)) continue;
    if (button.getBoundingClientRect().top >= heading.getBoundingClientRect().bottom - 1) {
      problems.push(`${name(button)} wrapped under ${name(heading)}`);
    }
  }
  const overflow = document.documentElement.scrollWidth - window.innerWidth;
  if (overflow > 0) problems.push(`${overflow} px wider than the window`);
  return problems;
}"""

# The controls of a row that each stand on one line, beside each other: none wrapped under another, none
# broken over two lines.
ONE_LINE = """(selector) => {
  const controls = Array.from(document.querySelector(selector).querySelectorAll("input, button"));
  const boxes = controls.map((n) => [n, n.getBoundingClientRect()]);
  const problems = [];
  const [, first] = boxes[0];
  for (const [node, box] of boxes) {
    if (Math.abs(box.top - first.top) > 1) problems.push(`${node.textContent || node.id} wrapped`);
    const line = parseFloat(getComputedStyle(node).lineHeight) || 20;
    if (node.tagName === "BUTTON" && box.height > line * 1.5 + 16) problems.push(`${node.textContent} over two lines`);
  }
  return problems;
}"""

RECALLED = {
    "scope_size": 1,
    "discarded": False,
    "items": [
        {
            "title": "报销流程",
            "content": '报销步骤：\n1. 打开设置\n2. <img src=x onerror="window.__injected = 1"> 填写金额\n3. 提交',
            "knowledge_base": {"id": "kb_x", "name": KB_NAME},
        }
    ],
    "context": "<memmy-knowledge>…</memmy-knowledge>",
}


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as running:
        yield running


@pytest.fixture(scope="module")
def newcomer_login(stage: Stage) -> StageUser:
    return stage.user(f"new-{uuid.uuid4().hex[:8]}", name="新同事")


@pytest.fixture(scope="module")
def newcomer(
    stage: Stage, newcomer_login: StageUser, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[PageUser]:
    user = start_user(stage, tmp_path_factory.mktemp("newcomer"), newcomer_login)
    yield user
    user.stop()


@pytest.fixture(scope="module")
def kb_name(stage: Stage) -> str:
    """The newcomer's KB's name on this stage."""
    return stage.kb_name(KB_NAME)


@pytest.fixture(scope="module")
def newcomers_kb(stage: Stage, newcomer_login: StageUser, kb_name: str) -> str:
    """The newcomer's "产品资料", which the first test starts on the page. pytest-xdist may run that test in
    another worker, whose newcomer is another person: then it is made here, through the API, so the later
    tests hold whichever worker runs them."""
    with httpx.Client(
        base_url=stage.api_url, headers={"Authorization": f"Bearer {newcomer_login.token}"}, timeout=30
    ) as api:
        mine = [kb for kb in api.get("/knowledge-bases").json()["items"] if kb["name"] == kb_name]
        if not mine:
            created = api.post("/knowledge-bases", json={"name": kb_name})
            assert created.status_code == 201, created.text
            mine = [created.json()]
    return str(mine[0]["id"])


def serious_violations(page: Any, context: str | None = None) -> list[str]:
    """axe-core's serious and critical findings on the page as it is (its script ships in the package)."""
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page, context=context)
    return [
        f"{v['id']} ({v['impact']}): {[n['target'] for n in v['nodes']]}"
        for v in results.response["violations"]
        if v["impact"] in ("serious", "critical")
    ]


def test_a_new_user_learns_what_a_knowledge_base_is_and_starts_one(browser, newcomer, kb_name):
    from playwright.sync_api import expect

    failures: list[str] = []
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
    context.on("response", lambda r: failures.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    page = context.new_page()
    held: list[Any] = []

    def hold_the_lists(route: Any) -> None:
        held.append(route) if route.request.method == "GET" else route.continue_()

    page.route("**/api/knowledge-bases", hold_the_lists)
    page.goto(newcomer.open_url("en"))

    # Until the lists are known, no button offers to start a KB: for a newcomer it is the welcome's, and
    # one shown before would vanish under the pointer
    expect(page.get_by_role("heading", name="My knowledge bases")).to_be_visible()
    wait_until(lambda: held, timeout=10, sleep=lambda s: page.wait_for_timeout(s * 1000), message="no lists asked")
    expect(page.get_by_role("button", name="New knowledge base")).to_have_count(0)
    held[0].continue_()
    page.unroute("**/api/knowledge-bases")

    # The first screen says what a knowledge base is and offers to start one (the only such button)
    welcome = page.get_by_role("region", name="What is a knowledge base?")
    expect(welcome).to_contain_text("A knowledge base is a set of your documents")
    expect(page.get_by_role("button", name="New knowledge base")).to_have_count(1)
    assert serious_violations(page) == []

    # The icon is served, as the page links it and where browsers look for it anyway
    icon = page.locator("link[rel=icon]").get_attribute("href")
    for path in (icon, "/favicon.ico"):
        answer = httpx.get(f"{newcomer.desktop.url}{path}", timeout=10)
        assert (answer.status_code, answer.headers["content-type"]) == (200, "image/svg+xml")
        assert answer.text.startswith("<svg")
    assert failures == []

    # Asking with no knowledge base at all: told so, and how to get one (not "nothing matched")
    page.get_by_role("textbox", name="Try a question").fill("What is our refund policy?")
    page.get_by_role("button", name="Ask").click()
    expect(page.locator("#answer")).to_contain_text(
        "You have no knowledge bases in recall yet: create one and upload files into it, or ask a colleague"
    )
    expect(page.locator("#answer")).not_to_contain_text("Searched 0")

    # Started by keyboard from the welcome; Escape leaves the name field, Enter creates
    welcome.get_by_role("button", name="New knowledge base").focus()
    page.keyboard.press("Enter")
    expect(page.get_by_role("textbox", name="Name")).to_be_focused()
    page.keyboard.press("Escape")
    expect(page.get_by_role("textbox", name="Name")).to_be_hidden()
    expect(welcome.get_by_role("button", name="New knowledge base")).to_be_focused()
    page.keyboard.press("Enter")
    page.keyboard.type(kb_name)
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name=kb_name, exact=True)).to_be_visible()
    expect(welcome).to_be_hidden()
    expect(kb_item(page, "mine", kb_name)).to_contain_text("0 files · 0 B")
    context.close()


def test_uploads_show_progress_failures_read_in_both_languages_and_can_be_dismissed(
    browser, newcomer, newcomers_kb, kb_name
):
    from playwright.sync_api import expect

    page = new_page(browser, newcomer, lang="en")
    kb_item(page, "mine", kb_name).get_by_role("button", name=kb_name, exact=True).click()
    page.set_input_files("#file-input", [BAD_PDF, md("MemOS产品介绍.md", LONG_INTRO)])
    size = len(LONG_INTRO.encode("utf-8")) / 1024
    finished = page.locator("#uploads li").filter(has_text="MemOS产品介绍.md")
    expect(finished).to_contain_text(f"100% of {size:.1f} KB")
    expect(finished).to_contain_text("Uploaded")
    # A finished upload's row goes after a moment: the file is in the list below by then
    expect(page.locator("#uploads li")).to_have_count(0, timeout=10_000)
    failed = file_row(page, "invoice.pdf")
    expect(failed).to_contain_text("The file is not a valid PDF.", timeout=PROCESSING_MS)
    expect(failed.locator(".reason")).to_have_attribute("data-code", "invalid_pdf")
    expect(file_row(page, "MemOS产品介绍.md")).to_contain_text("Available", timeout=PROCESSING_MS)
    # The KB's file count and storage follow the files it holds
    expect(kb_item(page, "mine", kb_name)).to_contain_text(f"1 file · {size:.1f} KB")
    assert serious_violations(page) == []

    # The Chinese page words the failure in Chinese, from its code
    chinese = new_page(browser, newcomer, lang="zh")
    kb_item(chinese, "mine", kb_name).get_by_role("button", name=kb_name, exact=True).click()
    expect(file_row(chinese, "invoice.pdf")).to_contain_text("文件不是有效的 PDF。")
    expect(kb_item(chinese, "mine", kb_name)).to_contain_text(f"1 个文件 · {size:.1f} KB")
    chinese.context.close()

    # Dismissed, it is gone for good; the file that worked is kept
    failed.get_by_role("button", name="Dismiss invoice.pdf").click()
    expect(failed).to_have_count(0)
    page.reload()
    kb_item(page, "mine", kb_name).get_by_role("button", name=kb_name, exact=True).click()
    expect(file_row(page, "MemOS产品介绍.md")).to_contain_text("Available")
    expect(file_row(page, "invoice.pdf")).to_have_count(0)
    page.context.close()


def test_layout_share_dialog_focus_and_excerpts_in_both_languages(browser, newcomer, newcomers_kb, kb_name):
    from playwright.sync_api import expect

    # Given a newcomer's KB with a file: then at every width, in both languages, nothing overflows or overlaps
    for lang in ("zh", "en"):
        page = new_page(browser, newcomer, lang=lang, width=1024)
        kb_item(page, "mine", kb_name).get_by_role("button", name=kb_name, exact=True).click()
        expect(file_row(page, "MemOS产品介绍.md")).to_be_visible()
        page.locator("#new-kb").click()  # the new-KB form, open in the lists' column
        for width in WIDTHS:
            page.set_viewport_size({"width": width, "height": 900})
            assert page.evaluate(LAYOUT_PROBLEMS) == [], f"{lang} at {width} px"
            assert page.evaluate(ONE_LINE, "#new-kb-form") == [], f"{lang} at {width} px"
        page.context.close()

    page = new_page(browser, newcomer, lang="en", width=1280)
    kb_item(page, "mine", kb_name).get_by_role("button", name=kb_name, exact=True).click()
    # When the share dialog is opened from the keyboard, then its field has the focus
    share = page.get_by_role("button", name="Share")
    share.focus()
    page.keyboard.press("Enter")
    dialog = page.get_by_role("dialog")
    field = dialog.get_by_role("textbox", name="User ID, phone or email")
    expect(field).to_be_focused()
    expect(dialog.get_by_role("list", name="Members")).to_contain_text("Not shared with anyone yet.")
    # Then "Add" sits right beside its field, on the same line
    box, add = field.bounding_box(), dialog.get_by_role("button", name="Add").bounding_box()
    assert 0 <= add["x"] - (box["x"] + box["width"]) <= 24
    assert abs((add["y"] + add["height"] / 2) - (box["y"] + box["height"] / 2)) <= 12
    assert serious_violations(page) == []
    # Then Tab and Shift+Tab go round the dialog's controls and never leave it; Escape closes it
    for key in ["Tab"] * 5 + ["Shift+Tab"] * 5:
        page.keyboard.press(key)
        assert page.evaluate("document.getElementById('dialog').contains(document.activeElement)"), key
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    expect(share).to_be_focused()

    # When a recall answers an excerpt with lines, a numbered list and markup, then it keeps its lines and
    # list, and its text stays text
    page.route(
        "**/api/recall",
        lambda route: route.fulfill(status=200, body=json.dumps(RECALLED), content_type="application/json"),
    )
    page.get_by_role("textbox", name="Try a question").fill("怎么报销？")
    page.get_by_role("button", name="Ask").click()
    text = page.locator("#answer .excerpt .text")
    expect(text).to_contain_text("1. 打开设置")
    assert text.inner_text().split("\n")[1:] == [
        "1. 打开设置",
        '2. <img src=x onerror="window.__injected = 1"> 填写金额',
        "3. 提交",
    ]
    assert page.locator("#answer img").count() == 0
    assert page.evaluate("window.__injected") is None
    assert serious_violations(page) == []
    page.context.close()


def test_switching_the_language_keeps_the_open_kb_and_the_answer(browser, newcomer, newcomers_kb):
    from playwright.sync_api import expect

    page = new_page(browser, newcomer, lang="en")
    asked: list[str] = []

    def answer(route: Any) -> None:
        asked.append(route.request.post_data or "")
        body = {**RECALLED, "scope_size": 2 if len(asked) > 1 else 1}
        route.fulfill(status=200, body=json.dumps(body), content_type="application/json")

    page.route("**/api/recall", answer)
    english, chinese = page.get_by_role("link", name="English"), page.get_by_role("link", name="中文")
    expect(english).to_have_attribute("aria-current", "true")
    expect(chinese).not_to_have_attribute("aria-current", "true")
    kb_item(page, "mine", KB_NAME).get_by_role("button", name=KB_NAME, exact=True).click()
    page.get_by_role("textbox", name="Try a question").fill("怎么报销？")
    page.get_by_role("button", name="Ask").click()
    expect(page.locator("#answer")).to_contain_text("Searched 1 knowledge base")
    expect(page.locator("#answer")).not_to_contain_text("knowledge bases")

    chinese.click()
    # The page is in Chinese, marked so, with the same KB open and the same answer, not asked again
    expect(page.locator("html")).to_have_attribute("lang", "zh-CN")
    expect(chinese).to_have_attribute("aria-current", "true")
    expect(english).not_to_have_attribute("aria-current", "true")
    expect(page.get_by_role("heading", name=KB_NAME, exact=True)).to_be_visible()
    expect(page.get_by_role("heading", name="试一试提问")).to_be_visible()
    expect(page.locator("#answer")).to_contain_text("检索了 1 个知识库")
    expect(page.locator("#answer .excerpt .text")).to_contain_text("1. 打开设置")
    expect(page.get_by_role("textbox", name="试一个问题")).to_have_value("怎么报销？")
    expect(page.locator("#answer details summary")).to_have_text("智能体收到的内容")
    assert "lang=zh" in page.url
    assert len(asked) == 1

    # Back in English, a second question over two KBs: the plural
    english.click()
    page.get_by_role("button", name="Ask").click()
    expect(page.locator("#answer")).to_contain_text("Searched 2 knowledge bases")
    expect(page.get_by_role("heading", name=KB_NAME, exact=True)).to_be_visible()
    # A reload keeps the language chosen
    page.reload()
    expect(page.get_by_role("link", name="English")).to_have_attribute("aria-current", "true")
    assert serious_violations(page) == []
    page.context.close()
