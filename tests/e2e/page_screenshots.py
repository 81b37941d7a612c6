"""``make screenshots``: PNGs of each screen of the knowledge-base page, in Chinese and English, narrow
(390 px), 1024 px and wide (1920 px), into ``docs/screenshots/`` (or the directory given).

It starts its own local stack and three desktop services (an owner, a reader and a newcomer), seeds the seed story's
documents over the API, and the teams (the owner's "销售部", which the reader joined, with the KB shared with
it and one more person invited; and "市场部", whose invitation the reader has not answered yet), and an app
connected to the owner's knowledge bases through the remote MCP endpoint, and photographs the page as each
person sees it.
"""

from __future__ import annotations

import random
import sys
import tempfile
import uuid
from pathlib import Path

import httpx

from memmy_local.demo import COMPARISON, PRODUCT_INTRO
from tests.support.e2e_story import QUESTION, upload, wait_until_available
from tests.support.page_browser import chromium, new_page, start_user
from tests.support.remote_mcp import call_mcp, mcp_token
from tests.support.stack import start_stack, stop_stack
from tests.support.stage import Stage

WIDTHS = {"narrow": 390, "1024": 1024, "wide": 1920}
LANGS = ("zh", "en")


def seed(api_url: str, owner_token: str, reader_phone: str) -> str:
    headers = {"Authorization": f"Bearer {owner_token}"}
    with httpx.Client(base_url=api_url, headers=headers, timeout=30) as api:
        api.put("/me").raise_for_status()
        kb = api.post("/knowledge-bases", json={"name": "MemOS 产品资料"}).json()["id"]
        api.post(f"/knowledge-bases/{kb}/folders", json={"name": "合同"}).raise_for_status()
        upload(api, kb, "MemOS产品介绍.md", PRODUCT_INTRO)
        upload(api, kb, "MemOS 开源VS商业化.md", COMPARISON)
        payload = b"MZ\x90\x00" + bytes(1000)  # a renamed executable: fails with its reason
        ticket = api.post(
            f"/knowledge-bases/{kb}/uploads", json={"filename": "invoice.pdf", "size_bytes": len(payload)}
        ).json()
        httpx.post(
            ticket["url"], data=ticket["fields"], files={"file": ("invoice.pdf", payload, "application/pdf")}
        ).raise_for_status()
        wait_until_available(api, kb, {"MemOS产品介绍.md", "MemOS 开源VS商业化.md"})
        api.post("/knowledge-bases", json={"name": "财务制度"}).raise_for_status()
        api.post(f"/knowledge-bases/{kb}/members", json={"identifier": reader_phone}).raise_for_status()
    return kb


def seed_teams(api_url: str, owner_token: str, reader: tuple[str, str], invitee_id: str, kb: str) -> None:
    """The owner's two teams: the reader a member of one (its KB shared with it), invited to the other."""
    owner = {"Authorization": f"Bearer {owner_token}"}
    with httpx.Client(base_url=api_url, headers=owner, timeout=30) as api:
        sales = api.post("/teams", json={"name": "销售部"}).json()["id"]
        market = api.post("/teams", json={"name": "市场部"}).json()["id"]
        reader_id, reader_token = reader
        for team, who in ((sales, reader_id), (sales, invitee_id), (market, reader_id)):
            api.post(f"/teams/{team}/members", json={"identifier": who}).raise_for_status()
        httpx.post(
            f"{api_url}/teams/{sales}/accept", headers={"Authorization": f"Bearer {reader_token}"}, timeout=30
        ).raise_for_status()
        api.post(f"/knowledge-bases/{kb}/teams", json={"team_id": sales}).raise_for_status()


def main(out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="memmy-screenshots-"))
    process, stack = start_stack(work / "stack")
    users = []
    try:
        phone = f"139{random.randrange(10**8):08d}"
        suffix = uuid.uuid4().hex[:6]
        owner_claims = {"name": "产品经理", "email": "pm@example.com"}
        people = Stage.on_local(stack)
        owner = start_user(stack, work / "owner", people.user(f"pm-{suffix}", **owner_claims))
        users.append(owner)
        salesperson = people.user(f"sales-{suffix}", name="销售小王", phone=f"+86{phone}")
        reader = start_user(stack, work / "reader", salesperson)
        users.append(reader)
        newcomer = start_user(stack, work / "newcomer", people.user(f"new-{suffix}", name="新同事"))
        users.append(newcomer)
        with httpx.Client(base_url=stack.api_url, timeout=30) as api:
            token = stack.token(reader.user_id, name="销售小王", phone=f"+86{phone}")
            api.put("/me", headers={"Authorization": f"Bearer {token}"}).raise_for_status()
        owner_token = stack.token(owner.user_id, **owner_claims)
        kb = seed(stack.api_url, owner_token, phone)
        invitee = f"mkt-{suffix}"
        with httpx.Client(base_url=stack.api_url, timeout=30) as api:
            api.put("/me", headers={"Authorization": f"Bearer {stack.token(invitee, name='市场部小林')}"})
        seed_teams(stack.api_url, owner_token, (reader.user_id, token), invitee, kb)
        connected = call_mcp(stack.api_url, mcp_token(stack.key_path.parent, owner.user_id))
        connected.raise_for_status()  # the owner's connected app: memmy-local-cli
        written = []
        with chromium() as browser:
            for lang in LANGS:
                for size, width in WIDTHS.items():

                    def shot(
                        page: object, screen: str, lang: str = lang, size: str = size, full: bool = True
                    ) -> None:
                        path = out / f"{screen}-{lang}-{size}.png"
                        page.screenshot(path=str(path), full_page=full)  # type: ignore[attr-defined]
                        written.append(path)

                    page = new_page(browser, owner, lang=lang, width=width, height=800)
                    page.locator("#mine li button.link").first.wait_for()
                    shot(page, "lists")
                    page.locator("#mine li button.link", has_text="MemOS 产品资料").click()
                    page.locator("#entries tr .status.available").nth(1).wait_for()
                    page.locator("#entries tr .reason").wait_for()
                    shot(page, "knowledge-base")
                    page.locator("#share").click()
                    page.locator("#dialog .members li[data-member]").wait_for()
                    shot(page, "sharing", full=False)  # a modal dialog: the window as seen
                    page.keyboard.press("Escape")
                    page.locator("#question").fill(QUESTION)
                    page.locator("#ask-form button[type=submit]").click()
                    page.locator("#answer .excerpt").first.wait_for()
                    page.locator("#answer details summary").click()
                    page.locator("#ask").scroll_into_view_if_needed()
                    shot(page, "try-a-question")
                    page.context.close()

                    page = new_page(browser, owner, lang=lang, width=width, height=800)
                    page.locator("#team-list li[data-team] button.link", has_text="销售部").click()
                    page.locator("#team-kbs li[data-kb]").wait_for()
                    shot(page, "teams")
                    page.context.close()

                    page = new_page(browser, owner, lang=lang, width=width, height=800)
                    page.locator("#connection-list li[data-connection]").wait_for()
                    page.locator("#connections").scroll_into_view_if_needed()
                    shot(page, "connected-apps", full=False)  # the section, in the window as seen
                    page.context.close()

                    page = new_page(browser, newcomer, lang=lang, width=width, height=800)
                    page.locator("#welcome").wait_for()
                    shot(page, "welcome")
                    page.context.close()

                    page = new_page(browser, reader, lang=lang, width=width, height=800)
                    page.locator("#invites li[data-invite]").wait_for()
                    page.locator("#team-list li[data-team]").wait_for()
                    shot(page, "team-invitation")
                    page.locator("#shared li button.link").first.click()
                    page.locator("#entries tr .status.available").nth(1).wait_for()
                    shot(page, "reader")
                    page.context.close()

                    context = browser.new_context(viewport={"width": width, "height": 500})
                    page = context.new_page()
                    page.goto(f"{owner.desktop.url}/?lang={lang}")
                    page.locator("#notice").wait_for()
                    shot(page, "signed-out")
                    context.close()
        for path in written:
            print(f"wrote {path}")
    finally:
        for user in users:
            user.stop()
        stop_stack(process)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/screenshots")))
