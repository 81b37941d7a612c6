"""A new user's linked folders on the page (Debian's chromium through Playwright, on the stage): a synced
file is marked and changing it on the page warns that the folder wins; a missing folder is advised to be
reconnected or unlinked first, and "Confirm deletion" asks with how many files go and the first names;
a link whose KB is gone says so and is pointed at another; "Try a question" is in the first screen above
sixty files. ``desktop links`` uses the page's words. Leaves screenshots in the test's temporary directory
(``paused-missing.png``, ``confirm-deletion.png``, ``kb-gone.png``, ``sixty-files.png``)."""

from __future__ import annotations

import shutil
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
    new_page,
    start_user,
)
from tests.support.stage import ApiTarget, Stage, StageUser

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def owner_login(stage: Stage) -> StageUser:
    return stage.user(f"fric-{uuid.uuid4().hex[:8]}", name="Owner")


@pytest.fixture(scope="module")
def owner(
    stage: Stage, owner_login: StageUser, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[PageUser]:
    user = start_user(stage, tmp_path_factory.mktemp("frictions"), owner_login)
    yield user
    user.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as running:
        yield running


def cloud(stack: ApiTarget, user: StageUser) -> httpx.Client:
    return httpx.Client(base_url=stack.api_url, headers={"Authorization": f"Bearer {user.token}"}, timeout=30)


def new_kb(api: httpx.Client, name: str) -> str:
    made = api.post("/knowledge-bases", json={"name": name})
    assert made.status_code == 201, made.text
    return str(made.json()["id"])


def serious_violations(page: Any) -> list[str]:
    """axe-core's serious and critical findings on the page as it is."""
    from axe_playwright_python.sync_playwright import Axe

    violations = Axe().run(page).response["violations"]
    return [
        f"{v['id']}: {[n['target'] for n in v['nodes']]}"
        for v in violations
        if v["impact"] in ("serious", "critical")
    ]


def test_a_synced_file_is_marked_and_a_missing_folders_deletion_is_asked_with_its_count_and_names(
    browser: Any, stage: Stage, owner_login: StageUser, owner: PageUser, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    # Given a folder of seven files linked to a KB, on the owner's page
    api = cloud(stage, owner_login)
    kb_name = stage.kb_name("员工手册")
    new_kb(api, kb_name)
    folder = tmp_path / "handbook"
    folder.mkdir()
    names = [f"chapter-{n}.md" for n in range(1, 8)]
    for name in names:
        (folder / name).write_text(f"# {name}\n", encoding="utf-8")
    assert owner.desktop.cli("link", str(folder), kb_name).returncode == 0
    page = new_page(browser, owner)
    links = page.get_by_role("region", name="Synced folders")
    expect(links).to_contain_text("Up to date", timeout=PROCESSING_MS)
    expect(links).to_contain_text(kb_name)
    kb_item(page, "mine", kb_name).get_by_role("button", name=kb_name, exact=True).click()
    row = file_row(page, "chapter-1.md")

    # Then its files are marked as the folder's
    expect(row).to_contain_text("From the synced folder “handbook”", timeout=PROCESSING_MS)
    assert row.locator(".synced").get_attribute("title") == str(folder)

    # When one is replaced or deleted on the page, then the question says that the folder wins
    dialog = page.get_by_role("dialog")
    row.get_by_role("button", name="Replace chapter-1.md").click()
    expect(dialog).to_contain_text(
        f"“chapter-1.md” comes from the synced folder {folder}: while it is linked, the folder wins"
    )
    dialog.get_by_role("button", name="Cancel").click()
    row.get_by_role("button", name="Delete").click()
    expect(dialog).to_contain_text("Delete “chapter-1.md”?")
    expect(dialog).to_contain_text("its next pass puts the folder's version back")
    assert serious_violations(page) == []
    dialog.get_by_role("button", name="Cancel").click()

    # When the folder goes (an unmounted disk), then the link pauses, and reconnecting or unlinking comes first
    shutil.rmtree(folder)
    expect(links).to_contain_text(
        "Paused: the folder is missing (an unmounted disk?). Nothing is deleted until you confirm.",
        timeout=PROCESSING_MS,
    )
    expect(links).to_contain_text("would delete 7 — waiting for your confirmation")
    expect(links).to_contain_text("Reconnect the disk or put the folder back and its sync resumes")
    assert links.get_by_role("button").all_inner_texts() == ["Stop syncing", "Confirm deletion"]
    page.screenshot(path=str(tmp_path / "paused-missing.png"), full_page=True)
    listed = owner.desktop.cli("links").stdout
    assert (
        f"{folder} -> “{kb_name}”: Paused: the folder is missing (an unmounted disk?). Nothing is" in listed
    )
    assert "would delete 7 — waiting for your confirmation (first: chapter-1.md, chapter-2.md, " in listed
    assert (
        listed.index("reconnect the disk") < listed.index("desktop unlink") < listed.index("desktop confirm")
    )

    # When Confirm deletion is chosen, then it asks, with the number, the first names and the advice first
    links.get_by_role("button", name="Confirm deletion").click()
    expect(dialog.get_by_role("heading")).to_have_text(f"Delete 7 files from “{kb_name}”?")
    expect(dialog.locator("p").first).to_contain_text("Reconnect the disk")
    expect(dialog.locator("li")).to_have_text(names[:5])
    expect(dialog).to_contain_text("… and 2 more")
    expect(dialog.get_by_role("button", name="Cancel")).to_be_focused()
    assert serious_violations(page) == []
    page.screenshot(path=str(tmp_path / "confirm-deletion.png"))

    # When it is cancelled, nothing goes; when it is confirmed, the seven go
    dialog.get_by_role("button", name="Cancel").click()
    page.wait_for_timeout(1500)
    expect(row).to_be_visible()
    expect(links).to_contain_text("would delete 7")
    links.get_by_role("button", name="Confirm deletion").click()
    dialog.get_by_role("button", name="Delete 7 files").click()
    expect(links).to_contain_text("Up to date", timeout=PROCESSING_MS)
    expect(file_row(page, "chapter-7.md")).to_have_count(0, timeout=PROCESSING_MS)
    links.get_by_role("button", name="Stop syncing").click()
    dialog.get_by_role("button", name="Stop syncing").click()
    expect(links).to_be_hidden()
    page.context.close()


def test_a_link_whose_kb_is_gone_says_so_and_is_pointed_at_another(
    browser: Any, stage: Stage, owner_login: StageUser, owner: PageUser, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    # Given a folder linked to a KB, and another KB of the owner's
    api = cloud(stage, owner_login)
    old_name, next_name = stage.kb_name("旧项目"), stage.kb_name("新项目")
    old, _ = new_kb(api, old_name), new_kb(api, next_name)
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "plan.md").write_text("# plan\n", encoding="utf-8")
    assert owner.desktop.cli("link", str(folder), old).returncode == 0
    page = new_page(browser, owner)
    links = page.get_by_role("region", name="Synced folders")
    expect(links).to_contain_text("Up to date", timeout=PROCESSING_MS)

    # When the KB is deleted and the folder changes, then the page and `desktop links` say the KB is gone
    assert api.delete(f"/knowledge-bases/{old}").status_code in (202, 204)
    (folder / "notes.md").write_text("# notes\n", encoding="utf-8")
    expect(links).to_contain_text(
        "Its knowledge base is gone: link the folder to another knowledge base, or stop syncing it.",
        timeout=PROCESSING_MS,
    )
    assert (
        f"{folder} -> {old}: Its knowledge base is gone: link the folder to another"
        in owner.desktop.cli("links").stdout
    )
    assert serious_violations(page) == []
    page.screenshot(path=str(tmp_path / "kb-gone.png"), full_page=True)

    # When it is linked to another knowledge base, then the same folder syncs into that one
    links.get_by_role("button", name="Link to another knowledge base").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_label("Sync into").select_option(label=next_name)
    dialog.get_by_role("button", name="Link to another knowledge base").click()
    expect(links).to_contain_text(next_name)
    expect(links).to_contain_text("Up to date", timeout=PROCESSING_MS)
    kb_item(page, "mine", next_name).get_by_role("button", name=next_name, exact=True).click()
    expect(file_row(page, "notes.md")).to_contain_text("From the synced folder", timeout=PROCESSING_MS)
    assert owner.desktop.cli("unlink", str(folder)).returncode == 0
    page.context.close()


def test_try_a_question_is_in_the_first_screen_above_sixty_files(
    browser: Any, stage: Stage, owner_login: StageUser, owner: PageUser, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    # Given a KB of sixty files
    api = cloud(stage, owner_login)
    kb_name = stage.kb_name("六十份")
    kb = new_kb(api, kb_name)
    for n in range(60):
        data = f"# note {n}\n".encode()
        ticket = api.post(
            f"/knowledge-bases/{kb}/uploads", json={"filename": f"note-{n:02}.md", "size_bytes": len(data)}
        )
        assert ticket.status_code == 201, ticket.text
        sent = httpx.post(
            ticket.json()["url"], data=ticket.json()["fields"], files={"file": ("f.md", data)}, timeout=30
        )
        assert sent.status_code == 204, sent.text

    # When it is open on a laptop's screen
    page = new_page(browser, owner, width=1280, height=800)
    kb_item(page, "mine", kb_name).get_by_role("button", name=kb_name, exact=True).click()
    expect(page.locator("#entries tr")).to_have_count(60, timeout=PROCESSING_MS)
    page.screenshot(path=str(tmp_path / "sixty-files.png"), full_page=True)

    # Then the question's field is on the first screen, without scrolling
    page.evaluate("window.scrollTo(0, 0)")
    field = page.get_by_role("textbox", name="Try a question").bounding_box()
    assert field is not None
    assert field["y"] + field["height"] <= 800, field
    page.context.close()
