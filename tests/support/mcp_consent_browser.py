"""A person's browser for an MCP client's authorization URL at the service's own authorization server:
Debian's chromium through Playwright opens the URL on the gateway, signs in at the dev identity provider's
page, comes back to the gateway's ``/oauth/callback`` and its consent page, which axe-core checks and which
is screenshot, then presses Allow or Deny. The redirect to the client's callback is caught by
``page.route`` (nothing listens there) and handed back.

Sync Playwright stays on the thread that started it: call ``consent_in_chromium`` whole inside one
``anyio.to_thread.run_sync``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tests.support.page_browser import chromium

SLOW_MS = 20_000  # gateway -> function -> identity provider, on a loaded 2-core machine
LOOPBACK = ("127.0.0.1", "localhost")


@dataclass(frozen=True)
class Journey:
    """What the browser saw: the consent page's URL, text and axe-core findings, the cookies it held
    there, and the URL it was finally sent to at the client's callback."""

    consent_url: str
    consent_text: str
    violations: list[str]
    cookies: list[dict[str, Any]]
    landed: str


def serious_violations(page: Any) -> list[str]:
    """axe-core's serious and critical findings on the page (its script ships in the package)."""
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page)
    return [
        f"{v['id']} ({v['impact']}): {[n['target'] for n in v['nodes']]}"
        for v in results.response["violations"]
        if v["impact"] in ("serious", "critical")
    ]


def _only_loopback(route: Any) -> None:
    """Tests send nothing beyond loopback: any other host is aborted."""
    if urlsplit(route.request.url).hostname in LOOPBACK:
        route.continue_()
    else:
        route.abort()


def _wait_for_consent(page: Any, decision: str) -> None:
    """The consent page's ``decision`` button, or an AssertionError saying where the browser stopped."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.get_by_role("button", name=decision).wait_for()
    except PlaywrightTimeout:
        text = page.locator("body").inner_text()[:500]
        raise AssertionError(f"no consent page: the browser stopped at {page.url}: {text}") from None


def consent_in_chromium(
    authorization_url: str, user_id: str, *, callback: str, decision: str, screenshot: Path
) -> Journey:
    """Sign in as ``user_id`` for ``authorization_url`` and press ``decision`` ("Allow" or "Deny") on the
    service's consent page; the redirect to ``callback`` is fulfilled here and its URL returned."""
    landed: list[str] = []

    def at_callback(route: Any) -> None:
        landed.append(route.request.url)
        route.fulfill(status=200, body="You may close this window.", content_type="text/plain")

    with chromium() as browser:
        context = browser.new_context(locale="en-US")
        try:
            context.route("**/*", _only_loopback)
            context.route(f"{callback}**", at_callback)
            page = context.new_page()
            page.set_default_timeout(SLOW_MS)
            page.goto(authorization_url)
            page.locator('input[name="login_user_id"]').fill(user_id)
            page.get_by_role("button", name="Sign in").click()
            _wait_for_consent(page, decision)
            consent_url = page.url
            text = page.locator("body").inner_text()
            cookies = context.cookies()
            violations = serious_violations(page)
            page.screenshot(path=str(screenshot))
            page.get_by_role("button", name=decision).click()
            deadline = time.monotonic() + SLOW_MS / 1000
            while not landed and time.monotonic() < deadline:
                page.wait_for_timeout(50)
        finally:
            context.close()
    assert landed, f"the browser never reached {callback}"
    return Journey(consent_url, text, violations, cookies, landed[0])
