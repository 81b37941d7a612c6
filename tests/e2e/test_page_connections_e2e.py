"""The knowledge-base page's "Connected apps" section (Debian's chromium through Playwright), and
``memmy-kb connections`` through the desktop service.

First, on canned answers served by Playwright's routing (no service, no network): each app's name, since,
last use, what it may do and state; a Disconnect asked first and sent; the recent activity; another app's
name kept as text; the empty state saying what a connected app is and that local agents use the desktop;
the layout at a phone's and a wide screen's width; axe-core's check of the section and the dialog; in both
languages. Then the story on the local stack: an agent off the desktop reaches ``POST /mcp`` with a token of
``memmy-local token USER --mcp`` (which makes the connection), the person sees it in the page and in
``memmy-kb connections ls``, disconnects it from the page, and the agent's token is refused from then on.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memmy_kb_client.desktop import page as desktop_page
from memmy_kb_client.desktop.routes import PAGE_HEADERS
from tests.support.e2e_desktop import clean_env
from tests.support.page_browser import PageUser, chromium, new_page, start_user
from tests.support.remote_mcp import call_mcp, mcp_token
from tests.support.stack import CLI
from tests.support.stage import Stage

pytestmark = pytest.mark.e2e

SLOW_MS = 20_000  # page -> desktop -> cloud, on a loaded 2-core machine

ORIGIN = "http://memmy.test"
XSS = '<img src=x onerror="window.__injected=1">'


def _connection(conn_id: str, name: str | None, state: str = "active", **extra: Any) -> dict[str, Any]:
    return {
        "id": conn_id,
        "client_id": f"https://{conn_id}.example/client.json",
        "client_name": name,
        "scope": ["kb.search"],
        "since": "2026-12-01T02:00:00Z",
        "last_used": "2026-12-07T10:05:00Z",
        "state": state,
        "revoked_at": "2026-12-06T01:00:00Z" if state == "revoked" else None,
        **extra,
    }


CONNECTIONS = [
    _connection("conn_claude", "Claude"),
    _connection("conn_evil", f"研发助手\u202e{XSS}", last_used=None),
    _connection("conn_old", "ChatGPT", state="revoked"),
]
ACTIVITY = [
    {
        "kind": "connection_revoked",
        "connection_id": "conn_old",
        "client_name": "ChatGPT",
        "at": "2026-12-06T01:00:00Z",
    },
    {
        "kind": "connection_added",
        "connection_id": "conn_evil",
        "client_name": f"研发助手{XSS}",
        "at": "2026-12-05T01:00:00Z",
    },
]


class CannedService:
    """The service's answers to the page, and what the page asked of it (method, path)."""

    def __init__(self, connections: list[dict[str, Any]], activity: list[dict[str, Any]]) -> None:
        self.asked: list[tuple[str, str]] = []
        self.connections, self.activity = connections, activity

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
        self.asked.append((request.method, path))
        if request.method == "DELETE" and path.startswith("/api/me/connections/"):
            gone = path.rsplit("/", 1)[1]
            self.connections = [
                {**c, "state": "revoked", "revoked_at": "2026-12-07T11:00:00Z"} if c["id"] == gone else c
                for c in self.connections
            ]
            route.fulfill(status=204, body="")
            return
        bodies: dict[tuple[str, str], Any] = {
            ("GET", "/api/session"): {
                "csrf": "c",
                "login": "logged_in",
                "user": {"user_id": "u_me", "name": "我"},
            },
            ("PUT", "/api/me"): {"user_id": "u_me"},
            ("GET", "/api/knowledge-bases"): {"items": []},
            ("GET", "/api/teams"): {"items": []},
            ("GET", "/api/me/connections"): {"connections": self.connections, "activity": self.activity},
        }
        body = bodies.get((request.method, path))
        if body is None:
            route.fulfill(
                status=404, body=json.dumps({"error": {"code": "not_found"}}), content_type="application/json"
            )
            return
        route.fulfill(status=200, body=json.dumps(body), content_type="application/json")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as running:
        yield running


def canned_page(
    browser: Any, lang: str, width: int = 1280, connections: list[dict[str, Any]] | None = None
) -> tuple[Any, CannedService]:
    service = CannedService(
        CONNECTIONS if connections is None else connections, ACTIVITY if connections is None else []
    )
    context = browser.new_context(viewport={"width": width, "height": 900}, timezone_id="Asia/Shanghai")
    context.route(f"{ORIGIN}/**", service.answer)
    page = context.new_page()
    page.goto(f"{ORIGIN}/?lang={lang}")
    page.locator("#connection-list li").first.wait_for()
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


WORDS = {
    "en": {
        "heading": "Connected apps",
        "claude": [
            "Claude",
            "Connected 1 Dec 2026, 10:00 · Last used 7 Dec 2026, 18:05",
            "May: search, read only",
            "Connected",
        ],
        "never": "Not used yet",
        "revoked": "Disconnected 6 Dec 2026, 09:00",
        "disconnect": "Disconnect",
        "done": "Disconnected “Claude”.",
        "activity": ["6 Dec 2026, 09:00 ChatGPT disconnected", f"5 Dec 2026, 09:00 研发助手{XSS} connected"],
        "empty": "No app is connected yet.",
        "desktop": "search through the desktop service instead",
    },
    "zh": {
        "heading": "已连接的应用",
        "claude": [
            "Claude",
            "连接于 2026年12月1日 10:00 · 最近使用：2026年12月7日 18:05",
            "可以：检索，只读",
            "已连接",
        ],
        "never": "尚未使用",
        "revoked": "已断开（2026年12月6日 09:00）",
        "disconnect": "断开连接",
        "done": "已断开「Claude」。",
        "activity": ["2026年12月6日 09:00 ChatGPT 已断开", f"2026年12月5日 09:00 研发助手{XSS} 已连接"],
        "empty": "还没有已连接的应用。",
        "desktop": "经由桌面服务检索",
    },
}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_each_app_says_what_it_may_do_and_is_disconnected_once_asked(browser, lang):
    from playwright.sync_api import expect

    words = WORDS[lang]
    page, service = canned_page(browser, lang)
    section = page.locator("#connections")
    expect(section.get_by_role("heading", name=words["heading"])).to_be_visible()
    claude = section.locator("li[data-connection=conn_claude]")
    assert [t.strip() for t in claude.locator("strong, .meta, .state").all_inner_texts()] == words["claude"]
    # Another app's name stays text, set apart in a <bdi>; never used is said so
    evil = section.locator("li[data-connection=conn_evil]")
    expect(evil.locator("bdi")).to_have_text(f"研发助手\u202e{XSS}")
    expect(evil).to_contain_text(words["never"])
    # A disconnected app says when, and offers nothing more; the active ones are listed first
    old = section.locator("li[data-connection=conn_old]")
    expect(old.locator(".state")).to_have_text(words["revoked"])
    expect(old.get_by_role("button")).to_have_count(0)
    order = section.locator("#connection-list li").evaluate_all("(ls) => ls.map((l) => l.dataset.connection)")
    assert order == ["conn_claude", "conn_evil", "conn_old"]
    assert [t.strip() for t in section.locator("#connection-activity li").all_inner_texts()] == words[
        "activity"
    ]
    assert serious_violations(page, "#connections") == []

    # Disconnecting is asked first; the cloud is told, and the app shown disconnected
    claude.get_by_role("button", name=f"{words['disconnect']} Claude").click()
    dialog = page.locator("#dialog")
    expect(dialog).to_contain_text("Claude")
    assert serious_violations(page, "#dialog") == []
    assert ("DELETE", "/api/me/connections/conn_claude") not in service.asked
    dialog.locator("#dialog-buttons button.danger").click()
    expect(dialog).to_be_hidden()
    expect(page.locator("#connections-status")).to_have_text(words["done"])
    expect(claude).to_have_attribute("data-state", "revoked")
    expect(page.locator("#connections-heading")).to_be_focused()
    assert ("DELETE", "/api/me/connections/conn_claude") in service.asked
    assert page.evaluate("window.__injected") is None
    page.context.close()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_with_no_app_the_section_says_what_one_is_and_that_local_agents_use_the_desktop(browser, lang):
    from playwright.sync_api import expect

    page, _ = canned_page(browser, lang, connections=[])
    empty = page.locator("#connection-list li.muted")
    expect(empty).to_contain_text(WORDS[lang]["empty"])
    expect(empty).to_contain_text(WORDS[lang]["desktop"])
    expect(page.locator("#connection-activity-part")).to_be_hidden()
    assert serious_violations(page, "#connections") == []
    page.context.close()


@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("width", [360, 1920])
def test_the_connected_apps_fit_a_phone_and_a_wide_screen(browser, lang, width):
    page, _ = canned_page(browser, lang, width)
    assert int(page.evaluate("document.documentElement.scrollWidth - window.innerWidth")) <= 0
    page.context.close()


# The story on the local stack: an agent off the desktop connects with an MCP token, the person disconnects it.


@pytest.fixture(scope="module")
def person(stage: Stage, tmp_path_factory: pytest.TempPathFactory) -> Iterator[PageUser]:
    user = start_user(
        stage, tmp_path_factory.mktemp("apps"), stage.user(f"apps-{uuid.uuid4().hex[:8]}", name="小周")
    )
    yield user
    user.stop()


def connections_cli(user: PageUser, *args: str) -> subprocess.CompletedProcess[str]:
    """``memmy-kb connections ...`` on the person's computer: through their desktop service."""
    home: Path = user.desktop.home
    return subprocess.run(  # noqa: S603 - our own CLI with fixed arguments
        [*CLI, "connections", *args],
        capture_output=True,
        text=True,
        env=clean_env(home),
        timeout=60,
        check=False,
    )


@pytest.mark.local_stack("the agent's token is signed by memmy-local token --mcp with the local stack's key")
def test_an_agent_connected_with_an_mcp_token_is_listed_and_disconnected_from_the_page(
    browser, person, stage
):
    from playwright.sync_api import expect

    # Given an agent off the desktop that reached the remote endpoint with the person's MCP token
    assert stage.local is not None
    token = mcp_token(stage.local.key_path.parent, person.user_id)
    assert call_mcp(stage.api_url, token).status_code == 200

    # Then the command lists it, through the desktop service: the client the token was issued for
    listed = connections_cli(person, "ls", "--json")
    assert listed.returncode == 0, listed.stderr
    (connection,) = json.loads(listed.stdout)["connections"]
    assert (connection["client_id"], connection["state"], connection["scope"]) == (
        "memmy-local-cli",
        "active",
        ["kb.search"],
    )
    name = connection["client_name"] or connection["client_id"]

    # and the person's page, active, with what it may do, and its arrival in the activity
    page = new_page(browser, person)
    app = page.locator(f"#connection-list li[data-connection='{connection['id']}']")
    expect(app).to_have_attribute("data-state", "active", timeout=SLOW_MS)
    expect(app.locator("bdi")).to_have_text(name)
    expect(app).to_contain_text("May: search, read only")
    expect(page.locator("#connection-activity li[data-kind=connection_added]")).to_have_count(1)
    assert serious_violations(page, "#connections") == []

    # When the person disconnects it (asked first)
    app.get_by_role("button", name=f"Disconnect {name}").click()
    page.locator("#dialog-buttons button.danger").click()
    expect(app).to_have_attribute("data-state", "revoked", timeout=SLOW_MS)
    expect(page.locator("#connection-activity li[data-kind=connection_revoked]")).to_have_count(1)

    # Then the agent's token is refused, saying so in the way the MCP authorization spec asks
    refused = call_mcp(stage.api_url, token)
    assert refused.status_code == 401
    assert 'error="invalid_token"' in refused.headers["WWW-Authenticate"]
    # and the command shows it disconnected; revoking it again by the client's name is fine
    shown = connections_cli(person, "ls")
    assert shown.returncode == 0, shown.stderr
    row = next(line for line in shown.stdout.splitlines() if line.strip().startswith(connection["id"]))
    assert name in row
    assert "disconnected" in row
    again = connections_cli(person, "revoke", name)
    assert again.returncode == 0, again.stderr
    page.context.close()
