"""What the page's browser tests and ``make screenshots`` share: Debian's chromium driven by Playwright,
and a logged-in ``memmy-kb desktop serve`` per user, on the stage (tests/support/stage.py); and what the
tests find on the page (a KB's list item, a file's row) and drop on it (``md``).

Playwright never downloads a browser here: it launches ``/usr/bin/chromium`` (``MEMMY_KB_CHROMIUM``
overrides the path). ``make test`` installs the package when it is missing.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.e2e_desktop import Desktop, start_desktop
from tests.support.stack import stop_stack
from tests.support.stage import ApiTarget, StageUser

CHROMIUM = os.environ.get("MEMMY_KB_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
MISSING = f"no chromium at {CHROMIUM}: run `make test` as root, or `sudo apt-get install chromium`"


@contextmanager
def chromium() -> Iterator[Any]:
    """A headless chromium (Playwright's ``Browser``)."""
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        raise RuntimeError(MISSING)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


@dataclass
class PageUser:
    """A person at their desktop: their own ``desktop serve``, logged in with their cloud login."""

    user_id: str
    desktop: Desktop
    process: subprocess.Popen[bytes]

    def open_url(self, lang: str | None = "en") -> str:
        """A fresh one-time link to the page, as ``memmy-kb desktop open`` hands the browser."""
        done = self.desktop.cli("open", "--no-browser", *(["--lang", lang] if lang else []))
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    def stop(self) -> None:
        assert stop_stack(self.process) == 0, self.desktop.log_path.read_text()


def start_user(stack: ApiTarget, workdir: Path, user: StageUser) -> PageUser:
    """``user`` at their desktop: a desktop service on ``stack``, logged in with their token."""
    workdir.mkdir(parents=True, exist_ok=True)
    process, desktop = start_desktop(workdir, stack.api_url)
    login = desktop.cli("login", "--token", user.token)
    if login.returncode != 0:
        stop_stack(process)
        raise AssertionError(login.stderr)
    return PageUser(user.user_id, desktop, process)


def new_page(
    browser: Any,
    user: PageUser,
    *,
    lang: str | None = "en",
    width: int = 1280,
    height: int = 900,
    locale: str | None = None,
) -> Any:
    """A new browser context for ``user``, signed in to the page through a one-time link (``lang=None``:
    no ``?lang=``, so the browser's ``locale`` decides)."""
    context = browser.new_context(
        viewport={"width": width, "height": height},
        locale=locale or ("zh-CN" if lang == "zh" else "en-US"),
    )
    page = context.new_page()
    page.goto(user.open_url(lang))
    return page


PROCESSING_MS = 60_000  # how long the page may take to show a file as available


def md(name: str, text: str) -> dict[str, Any]:
    """A Markdown file as Playwright sets it on a file input."""
    return {"name": name, "mimeType": "text/markdown", "buffer": text.encode("utf-8")}


def kb_item(page: Any, section: str, name: str) -> Any:
    """The list item of KB ``name`` under the heading ``section``."""
    return page.locator(f"#{section} li").filter(has=page.get_by_role("button", name=name, exact=True))


def file_row(page: Any, name: str) -> Any:
    return page.locator("#entries tr").filter(has_text=name)
