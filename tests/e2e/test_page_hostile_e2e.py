"""Other people's text on the knowledge-base page (a shared KB's name, its sharer's name and contact, a
document's title and excerpt, folder and file names, an excerpt's file and folder path) stays text, shows
whose share an excerpt comes from (also within a group of KBs searched together), in both languages, and
long unbroken names wrap instead of widening the page (Debian's chromium through Playwright).

The page's own files (the package's, with the service's headers) and the service's answers are served
to the browser by Playwright's routing under an address that never reaches the network.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from memmy_kb_client.desktop import page as desktop_page
from memmy_kb_client.desktop.routes import PAGE_HEADERS
from tests.support.page_browser import chromium

pytestmark = pytest.mark.e2e

ORIGIN = "http://memmy.test"
XSS = '<img src=x onerror="window.__injected=1"><script>window.__injected=2</script>'
LONG = "长" * 3 + "A" * 300  # no break opportunity but between the characters
SHARED_KB = {
    "id": "kb_s",
    "name": f"共享资料{XSS}",
    "role": "reader",
    "recall": True,
    "file_count": 1,
    "bytes_used": 10,
    "owner": {"user_id": "u_owner", "display_name": f"老张{XSS}\u202e", "contact": "138****8000"},
}
MINE_KB = {"id": "kb_m", "name": f"我的$&$'资料{LONG}", "role": "owner", "recall": True, "file_count": 0}
RECALLED = {
    "scope_size": 3,
    "discarded": False,
    "partial": False,
    "context": "…",
    "items": [
        {
            "title": f"{LONG}{XSS}",
            "content": f"正文 {XSS} {LONG}",
            "knowledge_base": {"id": "kb_s", "name": f"共享资料{LONG}"},
            "owner": {"name": f"老张{LONG}", "contact": "138****8000"},
        },
        {
            "title": "差旅制度",
            "content": "一组知识库里的摘录",
            "knowledge_bases": [
                {"id": "kb_m", "name": "我的资料", "owner": None},
                {"id": "kb_g", "name": "销售资料", "owner": {"name": "李四", "contact": "l***@example.com"}},
            ],
        },
        {
            "title": "反转",
            "content": "x",
            "knowledge_base": {"id": "kb_r", "name": "资料\u202e"},
            "owner": {"name": "王五", "contact": "139****0000"},
        },
        {
            "title": f"节{XSS}",
            "content": "y",
            "knowledge_base": {"id": "kb_m", "name": "我的资料"},
            "file": {"id": "fl_x", "name": f"{LONG}{XSS}.md", "folder_path": f"文件夹{LONG}/{XSS}"},
        },
        {
            "title": "许可",
            "content": "z",
            "knowledge_base": {"id": "kb_m", "name": "我的资料"},
            "files": [
                {"id": "fl_a", "name": f"许可\u202e{XSS}", "folder_path": ""},
                {"id": "fl_b", "name": "LICENSE", "folder_path": f"{LONG}\u202e"},
            ],
        },
    ],
}


def _answer(route: Any) -> None:
    request = route.request
    path = request.url[len(ORIGIN) :].split("?")[0]
    if not path.startswith("/api/"):
        name, content_type = desktop_page.ASSETS.get(path, ("index.html", "text/html; charset=utf-8"))
        headers = dict(PAGE_HEADERS)
        route.fulfill(status=200, body=desktop_page.asset(name), content_type=content_type, headers=headers)
        return
    bodies: dict[tuple[str, str], Any] = {
        ("GET", "/api/session"): {
            "csrf": "c",
            "login": "logged_in",
            "user": {"user_id": "u_me", "name": "我"},
        },
        ("PUT", "/api/me"): {"user_id": "u_me"},
        ("GET", "/api/knowledge-bases"): {"items": [MINE_KB, SHARED_KB]},
        ("POST", "/api/recall"): RECALLED,
    }
    if path.endswith("/members"):
        bodies[("GET", path)] = {
            "items": [{"user_id": "u_reader", "display_name": "读者\u202e", "role": "reader", "recall": True}]
        }
    body = bodies.get((request.method, path))
    if body is None and path.endswith("/files"):
        body = {"folders": [{"id": "f1", "name": f"文件夹{LONG}"}], "files": []}
    route.fulfill(
        status=200 if body is not None else 404, body=json.dumps(body or {}), content_type="application/json"
    )


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as running:
        yield running


def open_page(browser: Any, lang: str, width: int = 1024) -> Any:
    context = browser.new_context(viewport={"width": width, "height": 900})
    context.route(f"{ORIGIN}/**", _answer)
    page = context.new_page()
    page.goto(f"{ORIGIN}/?lang={lang}")
    page.locator("#mine li[data-kb]").wait_for()
    return page


def overflow(page: Any) -> int:
    return int(page.evaluate("document.documentElement.scrollWidth - window.innerWidth"))


def ask(page: Any, button: str) -> None:
    page.locator("#question").fill("差旅")
    page.get_by_role("button", name=button, exact=True).click()
    page.locator("#answer .excerpt").first.wait_for()


@pytest.mark.parametrize(
    ("lang", "ask_label", "shared", "group"),
    [
        (
            "en",
            "Ask",
            "From 共享资料长长长",
            "From one of 我的资料; 销售资料 · Shared by 李四 (l***@example.com)",
        ),
        (
            "zh",
            "提问",
            "来自知识库 共享资料长长长",
            "来自以下知识库之一 我的资料；销售资料 · 共享者 李四 (l***@example.com)",
        ),
    ],
)
def test_excerpts_name_their_kb_and_every_sharer_and_hostile_text_stays_text(
    browser, lang, ask_label, shared, group
):
    page = open_page(browser, lang)
    ask(page, ask_label)
    sources = page.locator("#answer .excerpt .source").all_inner_texts()
    assert sources[0].startswith(shared)
    assert sources[0].endswith("138****8000)")
    assert "老张长长长" in sources[0]
    # A group's excerpt names each KB of the group and, for one shared with the caller, who shared it
    assert sources[1] == group
    titles = page.locator("#answer .excerpt h3").all_inner_texts()
    assert titles[0] == f"《{LONG}{XSS}》"
    # File and folder names are text too: a file's name, its folder, the candidates' paths
    assert titles[3] == f"《{LONG}{XSS}.md》 § 节{XSS}"
    files = page.locator("#answer .excerpt .file").all_inner_texts()
    assert files[0].endswith(f"文件夹{LONG}/{XSS}")
    assert f"许可\u202e{XSS}" in files[1]
    shared_item = page.locator("#shared li[data-kb]")
    assert shared_item.locator("button.link").inner_text() == SHARED_KB["name"]
    assert f"老张{XSS}" in shared_item.inner_text()
    assert page.locator("#answer img, #shared img, #answer script").count() == 0
    assert page.evaluate("window.__injected") is None
    page.context.close()


@pytest.mark.parametrize("width", [360, 1024, 1920])
def test_long_unbroken_names_wrap_instead_of_widening_the_page(browser, width):
    page = open_page(browser, "en", width)
    ask(page, "Ask")
    assert overflow(page) <= 0, "excerpts"
    page.locator("#mine li[data-kb] button.link").click()
    page.locator("#entries tr").first.wait_for()
    assert overflow(page) <= 0, "the open knowledge base"
    for node in (
        "#kb-heading",
        "#entries td",
        "#answer .excerpt h3",
        "#answer .excerpt .source",
        "#answer article:nth-of-type(4) h3",
        "#answer .excerpt .file",
        "#answer article:last-of-type .file",
    ):
        box = page.evaluate(
            "(s) => { const n = document.querySelector(s); return [n.scrollWidth, n.clientWidth]; }", node
        )
        assert box[0] <= box[1], f"{node} at {width} px: {box}"
    page.locator("#entries button.link").click()
    page.locator("#crumbs [aria-current=page]").wait_for()
    assert overflow(page) <= 0, "a long folder name in the breadcrumbs"
    page.locator("#mine li[data-kb] .actions button.danger").click()
    dialog = page.locator("#dialog")
    dialog.wait_for()
    for node in ("#dialog-title", "#dialog-body p"):
        box = page.evaluate(
            "(s) => { const n = document.querySelector(s); return [n.scrollWidth, n.clientWidth]; }", node
        )
        assert box[0] <= box[1], f"{node} at {width} px: {box}"
    page.context.close()


def test_a_name_with_dollar_signs_reads_as_it_is_in_a_sentence(browser):
    """The page fills a name into its sentences as plain text: "$&" or "$'" in a name are no patterns."""
    page = open_page(browser, "en")
    page.locator("#mine li[data-kb] .actions button.danger").click()
    message = page.locator("#dialog-body p").inner_text()
    assert message.startswith(f"Delete “{MINE_KB['name']}”? ")
    page.context.close()


# The left edges of the first two characters of ``text`` where it stands in the element ``selector``
# (the nth such element): read left to right, the first is left of the second.
EDGES = """([selector, n, text]) => {
  const root = document.querySelectorAll(selector)[n];
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const at = node.data.indexOf(text);
    if (at < 0) continue;
    const left = (i) => { const r = document.createRange(); r.setStart(node, i); r.setEnd(node, i + 1); return r.getBoundingClientRect().left; };
    return [left(at), left(at + 1)];
  }
  return null;
}"""


def test_a_bidi_override_in_a_name_cannot_reverse_the_words_after_it(browser):
    """A right-to-left override left open in a KB or sharer's name (the cloud removes them; the page does
    not rely on that) stays inside the name: "Shared by" and the contact after it read left to right."""
    page = open_page(browser, "en")
    ask(page, "Ask")
    first, second = page.evaluate(EDGES, ["#answer .excerpt .source", 2, "Shared by"])
    assert first < second, "the excerpt's source line"
    first, second = page.evaluate(EDGES, ["#answer .excerpt .file", 1, "; "])
    assert first < second, "the separator after a candidate file's name"
    first, second = page.evaluate(EDGES, ["#shared li[data-kb] .meta", 0, "138****8000"])
    assert first < second, "the shared KB's sharer"
    page.locator("#mine li[data-kb] button.link").click()
    page.get_by_role("button", name="Share").click()
    page.locator("#dialog li[data-member]").wait_for()
    first, second = page.evaluate(EDGES, ["#dialog li[data-member] span", 0, "u_reader"])
    assert first < second, "a member's user id after their name"
    page.context.close()
