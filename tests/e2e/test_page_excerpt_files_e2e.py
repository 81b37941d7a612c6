""" "Try a question" names each excerpt's document: the file's name (a link), its folder, or the files that
hold the same text; clicking a name opens that knowledge base's files at the file's folder with its row
marked, in view and focused (Debian's chromium through Playwright).

The page's own files and the service's answers are served to the browser by Playwright's routing under an
address that never reaches the network, as in test_page_hostile_e2e.py.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memmy_kb_client.desktop import page as desktop_page
from memmy_kb_client.desktop.routes import PAGE_HEADERS
from tests.support.page_browser import chromium

pytestmark = pytest.mark.e2e

ORIGIN = "http://memmy.test"
HANDBOOK = {
    "id": "kb_h",
    "name": "Handbook",
    "role": "owner",
    "recall": True,
    "file_count": 62,
    "bytes_used": 10,
}
SHARED = {
    "id": "kb_s",
    "name": "Sales",
    "role": "reader",
    "recall": True,
    "file_count": 2,
    "owner": {"user_id": "u_bob", "display_name": "Bob", "contact": "b***@example.com"},
}


def a_file(file_id: str, name: str, folder_path: str, kb_id: str = "kb_h") -> dict[str, Any]:
    return {"id": file_id, "name": name, "folder_path": folder_path, "version": 2, "knowledge_base_id": kb_id}


RECALLED = {
    "scope_size": 2,
    "discarded": False,
    "partial": False,
    "context": "…",
    "items": [
        {
            "title": "Refunds",
            "content": "Refunds take five working days.",
            "knowledge_base": {"id": "kb_h", "name": "Handbook"},
            "owner": None,
            "file": a_file("fl_hb", "handbook.md", "policies/2024"),
            "files": [],
        },
        {
            "title": "Terms",
            "content": "Licensed under the GPL.",
            "knowledge_base": {"id": "kb_s", "name": "Sales"},
            "owner": {"name": "Bob", "contact": "b***@example.com"},
            "file": None,
            "files": [a_file("fl_l1", "LICENSE", "", "kb_s"), a_file("fl_l2", "LICENSE", "vendor", "kb_s")],
        },
        {
            "title": "Travel",
            "content": "Book trains.",
            "knowledge_base": {"id": "kb_h", "name": "Handbook"},
            "owner": None,
            "file": None,
            "files": [],
        },
        {
            "title": "Intro",
            "content": "Where it all started.",
            "knowledge_base": {"id": "kb_h", "name": "Handbook"},
            "owner": None,
            "file": a_file("fl_gone", "old.md", ""),
            "files": [],
        },
    ],
}
# Many files before the handbook: its row is far below the first screen.
FILLER = [
    {"id": f"fl_{n:02d}", "name": f"note {n:02d}.md", "status": "available", "size_bytes": 10}
    for n in range(60)
]
LISTINGS: dict[tuple[str, str], dict[str, Any]] = {
    ("kb_h", ""): {"folders": [{"id": "fo_p", "name": "policies", "parent_id": None}], "files": []},
    ("kb_h", "fo_p"): {"folders": [{"id": "fo_24", "name": "2024", "parent_id": "fo_p"}], "files": []},
    ("kb_h", "fo_24"): {
        "folders": [],
        "files": [*FILLER, {"id": "fl_hb", "name": "handbook.md", "status": "available", "size_bytes": 99}],
    },
    ("kb_s", ""): {
        "folders": [{"id": "fo_v", "name": "vendor", "parent_id": None}],
        "files": [{"id": "fl_l1", "name": "LICENSE", "status": "available", "size_bytes": 5}],
    },
    ("kb_s", "fo_v"): {
        "folders": [],
        "files": [{"id": "fl_l2", "name": "LICENSE", "status": "available", "size_bytes": 5}],
    },
}
WHERE = {"fl_hb": "fo_24", "fl_l1": None, "fl_l2": "fo_v"}  # each file's folder now; fl_gone was deleted


def _answer(route: Any) -> None:
    request = route.request
    path, _, query = request.url[len(ORIGIN) :].partition("?")
    if not path.startswith("/api/"):
        name, content_type = desktop_page.ASSETS.get(path, ("index.html", "text/html; charset=utf-8"))
        route.fulfill(
            status=200, body=desktop_page.asset(name), content_type=content_type, headers=dict(PAGE_HEADERS)
        )
        return
    parts = path.split("/")  # "", "api", "knowledge-bases", kb, "files", file
    body: Any = {
        ("GET", "/api/session"): {
            "csrf": "c",
            "login": "logged_in",
            "user": {"user_id": "u_me", "name": "Me"},
        },
        ("PUT", "/api/me"): {"user_id": "u_me"},
        ("GET", "/api/knowledge-bases"): {"items": [HANDBOOK, SHARED]},
        ("POST", "/api/recall"): RECALLED,
        ("GET", "/api/links"): {"links": []},
    }.get((request.method, path))
    if body is None and len(parts) == 5 and parts[4] == "files":
        body = LISTINGS.get((parts[3], query.removeprefix("folder_id=")))
    if body is None and len(parts) == 6 and parts[4] == "files" and parts[5] in WHERE:
        body = {"id": parts[5], "name": "x", "status": "available", "folder_id": WHERE[parts[5]]}
    status = 200 if body is not None else 404
    error = {"error": {"code": "not_found", "message": "no such file"}}
    route.fulfill(
        status=status, body=json.dumps(body if body is not None else error), content_type="application/json"
    )


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as running:
        yield running


def asked(browser: Any, lang: str = "en", width: int = 1280) -> Any:
    context = browser.new_context(viewport={"width": width, "height": 800})
    context.route(f"{ORIGIN}/**", _answer)
    page = context.new_page()
    page.goto(f"{ORIGIN}/?lang={lang}")
    page.locator("#mine li[data-kb]").wait_for()
    page.locator("#question").fill("refunds")
    page.locator("#ask-form button[type=submit]").click()
    page.locator("#answer .excerpt").first.wait_for()
    return page


def in_view(page: Any, selector: str) -> bool:
    return bool(
        page.evaluate(
            "(s) => { const r = document.querySelector(s).getBoundingClientRect();"
            " return r.top >= 0 && r.bottom <= window.innerHeight; }",
            selector,
        )
    )


@pytest.mark.parametrize(
    ("lang", "heading", "folder", "candidates"),
    [
        (
            "en",
            "《handbook.md》 § Refunds",
            "In folder policies/2024",
            "From one of the files LICENSE; vendor/LICENSE",
        ),
        (
            "zh",
            "《handbook.md》 § Refunds",
            "位于文件夹 policies/2024",
            "来自以下文件之一 LICENSE；vendor/LICENSE",
        ),
    ],
)
def test_each_excerpt_names_its_document_or_the_files_that_hold_its_text(
    browser, lang, heading, folder, candidates
):
    page = asked(browser, lang)
    excerpts = page.locator("#answer .excerpt")
    assert excerpts.nth(0).locator("h3").inner_text() == heading
    assert excerpts.nth(0).locator(".file").inner_text() == folder
    assert excerpts.nth(1).locator("h3").inner_text() == "《Terms》"
    assert excerpts.nth(1).locator(".file").inner_text() == candidates
    # An excerpt the cloud names no file for reads as before: its heading, its knowledge base
    assert excerpts.nth(2).locator("h3").inner_text() == "《Travel》"
    assert excerpts.nth(2).locator(".file").count() == 0
    assert excerpts.nth(2).locator("h3 button").count() == 0
    assert serious_violations(page, "#answer") == []
    page.context.close()


def serious_violations(page: Any, context: str) -> list[str]:
    """axe-core's serious and critical findings in ``context`` (its script ships in the package)."""
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page, context=context)
    return [v["id"] for v in results.response["violations"] if v["impact"] in ("serious", "critical")]


def test_clicking_a_files_name_opens_its_row_in_its_knowledge_base(browser, tmp_path):
    page = asked(browser)
    page.locator("#answer .excerpt").nth(0).get_by_role("button", name="handbook.md").click()
    row = page.locator('#entries tr[data-file="fl_hb"]')
    row.wait_for()
    assert page.locator("#kb-heading").inner_text() == "Handbook"
    assert page.locator("#crumbs li").all_inner_texts() == ["All files", "policies", "2024"]
    assert row.get_attribute("class") == "found"
    assert row.get_attribute("aria-current") == "true"
    page.wait_for_function("document.activeElement && document.activeElement.dataset.file === 'fl_hb'")
    assert in_view(page, '#entries tr[data-file="fl_hb"]')
    assert page.locator("#entries tr.found").count() == 1
    shot = Path(os.environ.get("MEMMY_KB_SHOTS", tmp_path)) / "excerpt-file-opened.png"
    page.screenshot(path=str(shot))
    # A candidate of a shared KB opens that KB at its folder; going up the trail still works
    page.locator("#answer .excerpt").nth(1).get_by_role("button", name="vendor/LICENSE").click()
    page.locator('#entries tr.found[data-file="fl_l2"]').wait_for()
    assert page.locator("#kb-heading").inner_text() == "Sales"
    assert page.locator("#crumbs li").all_inner_texts() == ["All files", "vendor"]
    page.locator("#crumbs button", has_text="All files").click()
    page.locator('#entries tr[data-file="fl_l1"]').wait_for()
    assert page.locator("#entries tr.found").count() == 0
    page.context.close()


def test_a_file_deleted_since_the_search_is_said_so_and_opens_nothing(browser):
    page = asked(browser)
    page.locator("#answer .excerpt").nth(3).get_by_role("button", name="old.md").click()
    page.locator("#notice").wait_for()
    assert page.locator("#notice").inner_text().startswith("This file is no longer there")
    assert page.locator("#kb").is_hidden()
    page.context.close()


def test_a_moved_file_opens_in_the_folder_it_is_in_now(browser):
    page = asked(browser)
    WHERE["fl_hb"] = "fo_p"  # moved up into policies since the search
    LISTINGS[("kb_h", "fo_p")]["files"] = [{"id": "fl_hb", "name": "handbook.md", "status": "available"}]
    try:
        page.locator("#answer .excerpt").nth(0).get_by_role("button", name="handbook.md").click()
        page.locator('#entries tr.found[data-file="fl_hb"]').wait_for()
        assert page.locator("#crumbs li").all_inner_texts() == ["All files", "…"]
    finally:
        WHERE["fl_hb"] = "fo_24"
        LISTINGS[("kb_h", "fo_p")]["files"] = []
    page.context.close()
