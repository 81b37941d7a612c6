"""The knowledge-base page's Teams section (Debian's chromium through Playwright).

First, on canned answers served by Playwright's routing (no service, no network): what each role is
offered on a team's members, an invitation declined with a block, other people's team names kept as text,
the layout at a phone's and a wide screen's width, and axe-core's check of the section, a team open and the
decline dialog, in both languages. Then the story on the stage, one desktop service per person: a team
created, a colleague invited who accepts in their own page, a KB shared with the team from its sharing
dialog and listed for the member, and the member removed.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest

from memmy_kb_client.desktop import page as desktop_page
from memmy_kb_client.desktop.routes import PAGE_HEADERS
from tests.support.page_browser import PageUser, chromium, kb_item, new_page, start_user
from tests.support.stage import Stage

pytestmark = pytest.mark.e2e

SLOW_MS = 20_000  # page -> desktop -> cloud -> identity lookup, on a loaded 2-core machine

ORIGIN = "http://memmy.test"
XSS = '<img src=x onerror="window.__injected=1">'
ME = {"user_id": "u_me", "display_name": "我"}
OWNER = {"user_id": "u_boss", "display_name": f"老板{XSS}"}


def _team(team_id: str, name: str, role: str, state: str = "member", **extra: Any) -> dict[str, Any]:
    return {
        "id": team_id,
        "name": name,
        "owner": ME if role == "owner" else OWNER,
        "role": role,
        "state": state,
        "invited_by": OWNER if state == "invited" else None,
        "member_count": 4,
        "invited_count": 1,
        "kb_count": 1,
        "created_at": "2026-12-01T00:00:00Z",
        **extra,
    }


TEAMS = [
    _team("tm_admin", f"销售部{XSS}", "admin"),
    _team("tm_mine", "产品组", "owner"),
    _team("tm_invite", f"市场部\u202e{XSS}", "member", state="invited"),
]
MEMBERS = [
    {"user_id": "u_boss", "display_name": OWNER["display_name"], "role": "owner", "state": "member"},
    {"user_id": "u_me", "display_name": "我", "role": "admin", "state": "member"},
    {"user_id": "u_peer", "display_name": "同级管理员", "role": "admin", "state": "member"},
    {"user_id": "u_rep", "display_name": f"销售小王{XSS}", "role": "member", "state": "member"},
    {"user_id": "u_new", "display_name": "新人", "role": "member", "state": "invited"},
]
MY_KB = {
    "id": "kb_mine",
    "name": "财务制度",
    "role": "owner",
    "recall": True,
    "file_count": 0,
    "bytes_used": 0,
    "teams": [],
}
TEAM_READ_KB = {
    "id": "kb_theirs",
    "name": f"报价单{XSS}",
    "role": "reader",
    "recall": True,
    "owner": OWNER,
    "teams": [{"id": "tm_admin", "name": f"销售部{XSS}"}],
}
TEAM_KBS = [
    {"id": "kb_theirs", "name": f"报价单{XSS}", "owner": OWNER, "shared_at": "2026-12-02T00:00:00Z"},
]


RECALLED = {
    "scope_size": 2,
    "discarded": False,
    "partial": False,
    "context": "…",
    "items": [
        {
            "title": "报价",
            "content": "企业版每年一万元",
            "knowledge_base": {"id": "kb_theirs", "name": "报价单"},
            "owner": {"name": "老板"},
            "team": {"id": "tm_admin", "name": f"销售部{XSS}"},
        },
        {
            "title": "差旅",
            "content": "一组知识库里的摘录",
            "knowledge_bases": [
                {"id": "kb_mine", "name": "财务制度", "owner": None},
                {
                    "id": "kb_theirs",
                    "name": "报价单",
                    "owner": {"name": "老板"},
                    "team": {"id": "tm_admin", "name": "销售部"},
                },
            ],
        },
    ],
}


class CannedService:
    """The service's answers to the page, and what the page asked of it (method, path, body)."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str, Any]] = []

    def answer(self, route: Any) -> None:
        request = route.request
        path = request.url[len(ORIGIN) :].split("?")[0]
        if not path.startswith("/api/"):
            name, content_type = desktop_page.ASSETS.get(path, ("index.html", "text/html; charset=utf-8"))
            route.fulfill(
                status=200,
                body=desktop_page.asset(name),
                content_type=content_type,
                headers=dict(PAGE_HEADERS),
            )
            return
        self.asked.append(
            (request.method, path, json.loads(request.post_data) if request.post_data else None)
        )
        detail = {**TEAMS[0], "members": MEMBERS, "knowledge_bases": TEAM_KBS}
        bodies: dict[tuple[str, str], Any] = {
            ("GET", "/api/session"): {
                "csrf": "c",
                "login": "logged_in",
                "user": {"user_id": "u_me", "name": "我"},
            },
            ("PUT", "/api/me"): {"user_id": "u_me"},
            ("GET", "/api/knowledge-bases"): {"items": [MY_KB, TEAM_READ_KB]},
            ("GET", "/api/knowledge-bases/kb_mine/files"): {"folders": [], "files": []},
            ("GET", "/api/knowledge-bases/kb_mine/members"): {"items": []},
            ("GET", "/api/knowledge-bases/kb_mine/teams"): {
                "items": [
                    {
                        "team_id": "tm_mine",
                        "name": "产品组",
                        "shared_by": ME,
                        "shared_at": "2026-12-03T00:00:00Z",
                    }
                ]
            },
            ("POST", "/api/knowledge-bases/kb_mine/teams"): {"team_id": "tm_admin", "name": TEAMS[0]["name"]},
            ("POST", "/api/recall"): RECALLED,
            ("GET", "/api/teams"): {"items": TEAMS},
            ("GET", "/api/teams/tm_admin"): detail,
            ("POST", "/api/teams/tm_invite/decline"): None,
        }
        if (request.method, path) not in bodies:
            refusal = {"error": {"code": "account_not_found" if path.endswith("/members") else "not_found"}}
            route.fulfill(status=404, body=json.dumps(refusal), content_type="application/json")
            return
        body = bodies[(request.method, path)]
        route.fulfill(
            status=200 if body is not None else 204, body=json.dumps(body) if body is not None else ""
        )


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as running:
        yield running


def canned_page(browser: Any, lang: str, width: int = 1280) -> tuple[Any, CannedService]:
    service = CannedService()
    context = browser.new_context(viewport={"width": width, "height": 900})
    context.route(f"{ORIGIN}/**", service.answer)
    page = context.new_page()
    page.goto(f"{ORIGIN}/?lang={lang}")
    page.locator("#team-list li[data-team]").first.wait_for()
    return page, service


def serious_violations(page: Any, context: str | None = None) -> list[str]:
    """axe-core's serious and critical findings (its script ships in the package)."""
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page, context=context)
    return [
        f"{v['id']} ({v['impact']}): {[n['target'] for n in v['nodes']]}"
        for v in results.response["violations"]
        if v["impact"] in ("serious", "critical")
    ]


def overflow(page: Any) -> int:
    return int(page.evaluate("document.documentElement.scrollWidth - window.innerWidth"))


def actions_of(page: Any, user_id: str) -> list[str]:
    row = page.locator(f"#team-members li[data-member='{user_id}']")
    return [str(a) for a in row.locator("button").evaluate_all("(bs) => bs.map((b) => b.dataset.action)")]


NOT_FOUND = {
    "en": "No account has this user ID, phone or email (they need to sign in to Memmy once first).",
    "zh": "没有找到这个用户 ID、手机号或邮箱对应的账号（对方需要先登录一次 Memmy）。",
}


@pytest.mark.parametrize(
    ("lang", "invitations", "decline", "block_owner", "team_kbs"),
    [
        ("en", "Invitations", "Decline", "Decline and block its owner", "Knowledge bases shared with the team"),
        ("zh", "邀请我加入的团队", "拒绝", "拒绝，并屏蔽所有者", "共享给团队的知识库"),
    ],
)
def test_an_admin_is_offered_what_an_admin_may_do_and_declines_an_invitation_blocking_its_owner(
    browser, lang, invitations, decline, block_owner, team_kbs
):
    from playwright.sync_api import expect

    page, service = canned_page(browser, lang)
    teams = page.locator("#teams")
    expect(teams.get_by_role("heading", name=invitations)).to_be_visible()
    # Others' team and person names stay text, each set apart in a <bdi>
    invite = page.locator("#invites li[data-invite=tm_invite]")
    assert f"市场部\u202e{XSS}" in invite.inner_text()
    assert invite.locator("bdi").count() >= 2
    assert serious_violations(page, "#teams") == []

    # A team open: an admin removes a member and cancels an invitation, but sets no role and leaves the
    # owner and the other admin alone; renames and leaves, never deletes
    page.locator("#team-list li[data-team=tm_admin] button.link").click()
    expect(page.locator("#team-heading")).to_have_text(f"销售部{XSS}")
    expect(page.locator("#team-heading")).to_be_focused()
    assert actions_of(page, "u_rep") == ["remove"]
    assert actions_of(page, "u_new") == ["cancel"]
    assert actions_of(page, "u_boss") == actions_of(page, "u_peer") == actions_of(page, "u_me") == []
    tools = page.locator("#team-tools button[data-action]").evaluate_all(
        "(bs) => bs.map((b) => b.dataset.action)"
    )
    assert tools == ["rename", "leave"]
    # An invitation the cloud refuses says why, beside the field
    page.locator("#invite-identifier").fill("nobody@example.com")
    page.locator("#invite-identifier").press("Enter")
    expect(page.locator("#team-error")).to_have_text(NOT_FOUND[lang])
    expect(page.get_by_role("heading", name=team_kbs)).to_be_visible()
    # The member's KB of someone else: an admin may unshare it
    expect(page.locator("#team-kbs li[data-kb=kb_theirs] button.danger")).to_have_count(1)
    assert serious_violations(page, "#team") == []
    assert page.evaluate("window.__injected") is None

    # Declining, with the owner blocked: the dialog asks how, by keyboard, and the choice is sent
    invite.get_by_role("button", name=decline).first.click()
    dialog = page.locator("#dialog")
    expect(dialog.locator("input[type=radio]").first).to_be_focused()
    assert serious_violations(page, "#dialog") == []
    dialog.get_by_role("radio", name=block_owner).check()
    dialog.locator("#dialog-buttons button.danger").click()
    expect(dialog).to_be_hidden()
    expect(page.locator("#teams-heading")).to_be_focused()
    assert ("POST", "/api/teams/tm_invite/decline", {"block": "owner"}) in service.asked
    page.context.close()


@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("width", [360, 1920])
def test_the_teams_fit_a_phone_and_a_wide_screen(browser, lang, width):
    page, _ = canned_page(browser, lang, width)
    page.locator("#team-list li[data-team=tm_admin] button.link").click()
    page.locator("#team-members li[data-member]").first.wait_for()
    assert overflow(page) <= 0
    page.context.close()


def test_a_kb_is_shared_with_a_team_joined_from_its_sharing_dialog_and_a_team_read_kb_names_its_team(browser):
    from playwright.sync_api import expect

    page, service = canned_page(browser, "en")
    # Read through a team only: the team is named, and there is no share of one's own to leave
    theirs = page.locator("#shared li[data-kb=kb_theirs]")
    expect(theirs.locator(".teams-of")).to_have_text(f"Through team: 销售部{XSS}")
    expect(theirs.get_by_role("button", name="Leave")).to_have_count(0)

    page.locator("#mine li[data-kb=kb_mine] button.link").click()
    page.locator("#share").click()
    dialog = page.locator("#dialog")
    expect(dialog.locator("#kb-teams li[data-team=tm_mine]")).to_have_text("产品组Unshare")
    # Offered: the teams joined and not yet sharing it; never an invitation
    options = dialog.locator("#kb-team-select option").evaluate_all("(os) => os.map((o) => o.value)")
    assert options == ["tm_admin"]
    assert serious_violations(page, "#dialog") == []
    dialog.get_by_role("button", name="Share with team").click()
    expect(dialog.get_by_role("status").filter(has_text="Shared with the team")).to_be_visible()
    assert ("POST", "/api/knowledge-bases/kb_mine/teams", {"team_id": "tm_admin"}) in service.asked
    page.context.close()


# The story on the stage: two people, each with their own desktop service and browser context.


@pytest.fixture(scope="module")
def team_people(
    stage: Stage, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[PageUser, PageUser]]:
    suffix = uuid.uuid4().hex[:8]
    with ExitStack() as started:
        lead = start_user(
            stage, tmp_path_factory.mktemp("lead"), stage.user(f"lead-{suffix}", name="组长老陈")
        )
        started.callback(lead.stop)
        rep = start_user(stage, tmp_path_factory.mktemp("rep"), stage.user(f"rep-{suffix}", name="销售小李"))
        started.callback(rep.stop)
        yield lead, rep


def test_a_team_through_the_page(browser, team_people, stage):
    from playwright.sync_api import expect

    # Given each person's page, opened once (which registers their profile)
    lead_user, rep_user = team_people
    suffix = uuid.uuid4().hex[:4]
    team_name, kb_name = f"销售部 {suffix}", stage.kb_name(f"报价资料 {suffix}")
    lead = new_page(browser, lead_user)
    rep = new_page(browser, rep_user)
    expect(rep.locator("#team-list")).to_contain_text("You are in no team yet.")

    # When the lead creates a team: it opens, theirs
    lead.get_by_role("button", name="New team").click()
    lead.get_by_role("textbox", name="Team name").fill(team_name)
    lead.keyboard.press("Enter")
    expect(lead.locator("#team-heading")).to_have_text(team_name)
    expect(lead.locator("#team-meta")).to_contain_text("Your role: Owner")
    # and invites the rep by user ID: invited, not yet a member
    lead.get_by_role("textbox", name="Invite by user ID, phone or email").fill(rep_user.user_id)
    lead.get_by_role("button", name="Invite", exact=True).click()
    expect(lead.locator("#team-status")).to_contain_text("Invited 销售小李", timeout=SLOW_MS)
    invited = lead.locator(f"#team-members li[data-member='{rep_user.user_id}']")
    expect(invited).to_have_attribute("data-state", "invited")
    assert serious_violations(lead, "#teams") == serious_violations(lead, "#team") == []

    # Then the rep, in their own page, finds the invitation and accepts it
    rep.reload()
    invitation = rep.locator("#invites li[data-invite]").filter(has_text=team_name)
    expect(invitation).to_contain_text("Invited by: 组长老陈")
    invitation.get_by_role("button", name=f"Accept {team_name}").click()
    expect(rep.locator("#teams-status")).to_have_text(f"You joined “{team_name}”.")
    expect(rep.locator("#team-list li[data-team] button.link", has_text=team_name)).to_be_focused()
    expect(rep.locator("#team-list li[data-team]").filter(has_text=team_name)).to_contain_text(
        "Your role: Member"
    )

    # When the lead creates a KB and shares it with the team from its sharing dialog
    lead.get_by_role("button", name="New knowledge base").click()
    lead.get_by_role("textbox", name="Name", exact=True).fill(kb_name)
    lead.keyboard.press("Enter")
    expect(lead.get_by_role("heading", name=kb_name)).to_be_visible()
    expect(lead.locator("#team")).to_be_hidden()  # a KB and a team take the same place
    lead.get_by_role("button", name="Share", exact=True).click()
    lead.get_by_role("combobox", name="Share with one of my teams").select_option(label=team_name)
    lead.get_by_role("button", name="Share with team").click()
    expect(lead.locator("#kb-teams li[data-team]")).to_have_text(f"{team_name}Unshare", timeout=SLOW_MS)
    lead.keyboard.press("Escape")

    # Then the member sees it, read only, through the team, and listed in the team
    rep.reload()
    shared = kb_item(rep, "shared", kb_name)
    expect(shared).to_contain_text(f"Through team: {team_name}")
    expect(shared.get_by_role("button", name="Leave")).to_have_count(0)
    rep.locator("#team-list li[data-team] button.link", has_text=team_name).click()
    expect(rep.locator("#team-kbs li[data-kb]")).to_contain_text(kb_name)
    expect(rep.locator("#team-tools button[data-action]")).to_have_count(1)  # a member may only leave
    rep.locator("#team-kbs li[data-kb] button.link").click()
    expect(rep.locator("#kb-readonly")).to_contain_text("组长老陈")

    # When the lead removes the member (asked first), having made them an admin meanwhile
    lead.reload()
    lead.locator("#team-list li[data-team] button.link", has_text=team_name).click()
    joined = lead.locator(f"#team-members li[data-member='{rep_user.user_id}']")
    expect(joined).to_have_attribute("data-state", "member")
    # (the owner may make a member an admin first)
    joined.get_by_role("button", name="Make admin 销售小李").click()
    expect(joined.locator(".role")).to_have_text("Admin")
    expect(joined.get_by_role("button", name="Make member 销售小李")).to_be_visible()
    joined.get_by_role("button", name="Remove 销售小李").click()
    lead.locator("#dialog-buttons button.danger").click()
    expect(joined).to_have_count(0)
    expect(lead.locator("#team-meta")).to_contain_text("1 member · 1 knowledge base")

    # Then the rep's page loses the team and its KB
    rep.reload()
    expect(rep.locator("#team-list")).to_contain_text("You are in no team yet.")
    expect(kb_item(rep, "shared", kb_name)).to_have_count(0)
    lead.context.close()
    rep.context.close()


@pytest.mark.parametrize(
    ("lang", "ask", "single", "group"),
    [
        (
            "en",
            "Ask",
            f"From 报价单 · Shared by 老板 · Through team 销售部{XSS}",
            "From one of 财务制度; 报价单 · Shared by 老板 · Through team 销售部",
        ),
        (
            "zh",
            "提问",
            f"来自知识库 报价单 · 共享者 老板 · 通过团队 销售部{XSS}",
            "来自以下知识库之一 财务制度；报价单 · 共享者 老板 · 通过团队 销售部",
        ),
    ],
)
def test_an_excerpt_read_through_a_team_names_the_team(browser, lang, ask, single, group):
    page, _ = canned_page(browser, lang)
    page.locator("#question").fill("报价")
    page.get_by_role("button", name=ask, exact=True).click()
    page.locator("#answer .excerpt").first.wait_for()
    assert page.locator("#answer .excerpt .source").all_inner_texts() == [single, group]
    assert page.evaluate("window.__injected") is None
    page.context.close()
