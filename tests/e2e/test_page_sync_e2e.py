"""Knowledge that changes, on the page (Debian's chromium through Playwright, on the stage): the owner
replaces a file in place (its SHA-256 computed in the browser, sent with the version shown): the same bytes
are "unchanged", new bytes become the next version with a progress bar, a stale version and a replace
already under way are told in sentences in both languages, a failed replace is shown and dismissed; the
desktop's linked folders are listed with their state, a paused one confirmed (asked first, with the file
it would delete), and unlinked. Leaves
screenshots of the KB with its versions and linked folder, and of the paused link, in the test's
temporary directory (``replace-and-links.png``, ``paused-link.png``)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

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
from tests.support.stage import ApiTarget, Stage, StageUser

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def owner_login(stage: Stage) -> StageUser:
    return stage.user(f"rep-{uuid.uuid4().hex[:8]}", name="Owner")


@pytest.fixture(scope="module")
def owner(
    stage: Stage, owner_login: StageUser, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[PageUser]:
    user = start_user(stage, tmp_path_factory.mktemp("replacer"), owner_login)
    yield user
    user.stop()


def cloud(stack: ApiTarget, user: StageUser) -> httpx.Client:
    return httpx.Client(base_url=stack.api_url, headers={"Authorization": f"Bearer {user.token}"}, timeout=30)


def replace_by_api(api: httpx.Client, kb: str, file_id: str, data: bytes | None) -> None:
    """Another client replacing the file: the bytes sent (``data``), or only the ticket asked for."""
    ticket = api.post(
        f"/knowledge-bases/{kb}/files/{file_id}/replacements", json={"size_bytes": len(data or b"x")}
    )
    assert ticket.status_code == 201, ticket.text
    if data is not None:
        sent = httpx.post(
            ticket.json()["url"], data=ticket.json()["fields"], files={"file": ("f.md", data)}, timeout=30
        )
        assert sent.status_code == 204, sent.text


def pick(page: Any, row: Any, name: str, file: dict[str, Any]) -> None:
    with page.expect_file_chooser() as chooser:
        row.get_by_role("button", name=f"Replace {name}").click()
    chooser.value.set_files(file)


def test_the_owner_replaces_a_file_and_sees_its_versions_and_linked_folders(
    browser_page: Any, stage: Stage, owner_login: StageUser, owner: PageUser, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    # Given a KB with a file at version 1, on the owner's page
    browser = browser_page
    name = "价目表.md"
    kb_name = stage.kb_name("报价")
    api = cloud(stage, owner_login)
    kb = api.post("/knowledge-bases", json={"name": kb_name}).json()["id"]
    page = new_page(browser, owner, lang="en")
    kb_item(page, "mine", kb_name).get_by_role("button", name=kb_name, exact=True).click()
    page.set_input_files("#file-input", [md(name, "# 价目表\n一万元\n")])
    row = file_row(page, name)
    expect(row).to_contain_text("Available", timeout=PROCESSING_MS)
    expect(row).to_contain_text("version 1")

    # When the same bytes are picked, then nothing is sent
    pick(page, row, name, md(name, "# 价目表\n一万元\n"))
    expect(page.locator("#uploads li").last).to_contain_text("has this content already (version 1)")

    # When new bytes are picked, then the progress bar, and version 2 in the same row
    pick(page, row, name, md(name, "# 价目表\n两万元\n"))
    expect(page.locator("#uploads li").last).to_contain_text("100% of")
    expect(row).to_contain_text("version 2", timeout=PROCESSING_MS)
    expect(row).to_contain_text("Available", timeout=PROCESSING_MS)
    file_id = row.get_attribute("data-file")

    # When bytes that are no Markdown text are picked, then the replace fails, the file keeps version 2, and it
    # is dismissed
    pick(page, row, name, {"name": name, "mimeType": "text/markdown", "buffer": b"\xff\xfe\xfa bad"})
    expect(row).to_contain_text(
        "Replacement failed: The file is not valid UTF-8 text.", timeout=PROCESSING_MS
    )
    expect(row).to_contain_text("version 2")
    row.get_by_role("button", name=f"Dismiss the failed replacement of {name}").click()
    expect(row).not_to_contain_text("Replacement failed")

    # When it was replaced elsewhere meanwhile (version 3), then the page's version 2 is stale, and says so
    replace_by_api(api, kb, str(file_id), "# 价目表\n三万元\n".encode())
    # (once the service has recorded version 3; the page, not reloaded, still shows version 2)
    wait_until(
        lambda: api.get(f"/knowledge-bases/{kb}/files/{file_id}").json().get("version") == 3,
        timeout=PROCESSING_MS / 1000,
        message="the other client's replace recorded as version 3",
    )
    pick(page, row, name, md(name, "# 价目表\n四万元\n"))
    expect(page.locator("#uploads li").last).to_contain_text(
        "The file changed meanwhile (it is now version 3)"
    )

    # When a replace is under way elsewhere, then the row says the previous version answers, and Replace is
    # refused
    expect(row).to_contain_text("version 3", timeout=PROCESSING_MS)
    replace_by_api(api, kb, str(file_id), None)
    page.reload()
    kb_item(page, "mine", kb_name).get_by_role("button", name=kb_name, exact=True).click()
    expect(row).to_contain_text("Being replaced: the previous version answers until the new one is ready.")
    pick(page, row, name, md(name, "# 价目表\n五万元\n"))
    expect(page.locator("#uploads li").last).to_contain_text("This file is already being replaced")

    # When a folder is linked to the KB, then it is listed with its state, and its file arrives
    folder = tmp_path / "报价资料"
    folder.mkdir()
    (folder / "条款.md").write_text("# 条款\n", encoding="utf-8")
    linked = owner.desktop.cli("link", str(folder), kb)
    assert linked.returncode == 0, linked.stderr
    page.reload()
    links = page.get_by_role("region", name="Synced folders")
    expect(links).to_contain_text(str(folder))
    expect(links).to_contain_text("Up to date", timeout=PROCESSING_MS)
    kb_item(page, "mine", kb_name).get_by_role("button", name=kb_name, exact=True).click()
    expect(file_row(page, "条款.md")).to_be_visible(timeout=PROCESSING_MS)
    page.screenshot(path=str(tmp_path / "replace-and-links.png"), full_page=True)

    # Then the Chinese page words the same states in Chinese
    chinese = new_page(browser, owner, lang="zh")
    kb_item(chinese, "mine", kb_name).get_by_role("button", name=kb_name, exact=True).click()
    expect(file_row(chinese, name)).to_contain_text("版本 3")
    expect(file_row(chinese, name)).to_contain_text("替换中：新版本就绪前，仍由上一个版本回答。")
    expect(chinese.get_by_role("region", name="同步的文件夹")).to_contain_text("已同步")
    chinese.context.close()

    # When the folder is emptied, then the link pauses, and nothing is deleted until Confirm deletion
    (folder / "条款.md").unlink()
    expect(links).to_contain_text(
        "Paused: the folder is empty. Nothing is deleted until you confirm.", timeout=PROCESSING_MS
    )
    expect(file_row(page, "条款.md")).to_be_visible()
    page.screenshot(path=str(tmp_path / "paused-link.png"), full_page=True)
    expect(links).to_contain_text("would delete 1 — waiting for your confirmation")
    links.get_by_role("button", name="Confirm deletion").click()
    asked = page.get_by_role("dialog")
    expect(asked).to_contain_text("条款.md")
    asked.get_by_role("button", name="Delete 1 file").click()
    expect(links).to_contain_text("Up to date", timeout=PROCESSING_MS)
    expect(file_row(page, "条款.md")).to_have_count(0, timeout=PROCESSING_MS)

    # When it is unlinked from the page, then the KB keeps what it has
    links.get_by_role("button", name="Stop syncing").click()
    page.get_by_role("dialog").get_by_role("button", name="Stop syncing").click()
    expect(links).to_be_hidden()
    expect(file_row(page, name)).to_be_visible()
    assert owner.desktop.cli("links").stdout.strip() == "no linked folders"
    page.context.close()


@pytest.fixture(scope="module")
def browser_page() -> Iterator[Any]:
    with chromium() as running:
        yield running
