"""Signing in on the local stack as a person does, with access tokens that live 5 seconds.

The desktop service knows only the cloud's URL; ``memmy-kb desktop login --no-browser`` prints the dev
identity provider's sign-in link, chromium signs in there and lands on the service's loopback callback, and
``desktop status`` and the page say who is signed in. The hook then keeps answering across several
expiries with nobody touching anything, while the gateway refuses no token (the cloud never receives an
expired one); a refresh token revoked at the provider turns into "logged out", with a hook that prints
nothing and a status that says what to do. The device grant signs in with a code; a forged ``state`` at
the callback stores nothing; no token reaches a log.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from memmy_kb_client.home import paths
from tests.support.e2e_desktop import Desktop, block_of, clean_env, run_hook, start_desktop
from tests.support.e2e_recall import MARKER, user_with_the_document
from tests.support.page_browser import chromium
from tests.support.polling import wait_until
from tests.support.stack import CLI, RunningStack, start_stack, stop_stack
from tests.support.stage import Stage

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.local_stack("a stack of its own with 5-second tokens and the dev identity provider's sign-in"),
]

TTL_SECONDS = 5
# Seconds of hook calls: at least three lifetimes of an access token.
RUN_SECONDS = 3 * TTL_SECONDS + 2
# The gateway's access line: "POST /recall 401 3.2 ms (POST /recall)".
GATEWAY_401 = re.compile(r"^.*POST /recall 401 ", re.MULTILINE)


@pytest.fixture(scope="module")
def short_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningStack]:
    process, stack = start_stack(
        tmp_path_factory.mktemp("login-stack"), extra=("--access-token-ttl", str(TTL_SECONDS))
    )
    try:
        yield stack
    finally:
        stop_stack(process)


@pytest.fixture
def desktop(short_stack: RunningStack, tmp_path: Path) -> Iterator[Desktop]:
    (tmp_path / "desktop").mkdir()
    process, running = start_desktop(tmp_path / "desktop", short_stack.api_url)
    try:
        yield running
    finally:
        assert stop_stack(process) == 0, running.log_path.read_text()


def status_of(desktop: Desktop) -> dict[str, Any]:
    done = desktop.cli("status", "--json")
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def start_login(desktop: Desktop, *flags: str) -> tuple[subprocess.Popen[str], str]:
    """``memmy-kb desktop login FLAGS`` in the background; the process and what it printed up to its wait."""
    process = subprocess.Popen(  # noqa: S603 - our own CLI
        [*CLI, "desktop", "login", *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=clean_env(desktop.home),
        text=True,
    )
    assert process.stdout is not None
    lines = []
    for line in process.stdout:
        lines.append(line)
        if line.startswith("Waiting for the sign-in"):
            return process, "".join(lines)
    raise AssertionError(
        f"desktop login ended early: {''.join(lines)} {process.stderr and process.stderr.read()}"
    )


def sign_in_form(page: Any, user: str, name: str) -> None:
    page.get_by_label("User ID").fill(user)
    page.get_by_label("Name").fill(name)
    page.get_by_label("Email").fill(f"{user}@example.com")
    page.get_by_label("Phone").fill("+8613800138000")
    page.get_by_role("button", name="Sign in").click()


def finished(process: subprocess.Popen[str]) -> str:
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, (out, err)
    return out


def saved_login(desktop: Desktop) -> dict[str, Any]:
    """The login as the service keeps it with no keychain (the tests' environment has none)."""
    private = Path(paths.private_dir(str(desktop.state_dir)))
    (saved,) = [p for p in private.iterdir() if "login" in p.name]
    return dict(json.loads(saved.read_text()))


def test_browser_sign_in_lasts_across_expiries_until_the_provider_revokes_it(short_stack, desktop):
    # Given a person with the document, signing in through the browser at the stack's provider
    user = f"signin-{uuid.uuid4().hex[:8]}"
    user_with_the_document(Stage.on_local(short_stack), user, "Sign-in Person")

    login, printed = start_login(desktop, "--no-browser")
    (url,) = re.findall(r"^(http://127\.0\.0\.1:\d+/authorize\?\S+)$", printed, re.MULTILINE)
    assert url.startswith(short_stack.issuer + "/authorize?")
    with chromium() as browser:
        # A browser with no page session of the service: the sign-in brings it to the page, signed in
        page = browser.new_page(locale="en-US")
        # The provider on another site, as a real one is (localhost and 127.0.0.1 are two sites): its
        # redirect to the callback is a cross-site navigation, which carries no SameSite=Strict cookie.
        page.goto(url.replace("http://127.0.0.1:", "http://localhost:", 1))
        sign_in_form(page, user, "Sign-in Person")
        page.get_by_text("Signed in as Sign-in Person", exact=True).wait_for()
        assert page.url == f"{desktop.url}/"
        assert page.get_by_role("button", name="Sign out").is_visible()
        assert page.get_by_role("heading", name="My knowledge bases").is_visible()
        assert "logged in as " + user in finished(login)

        # Then the service is logged in as them, and the page says who is signed in, and offers Sign out.
        status = status_of(desktop)
        assert (status["login"]["state"], status["login"]["user"]) == ("logged_in", user)

    # When the hook asks for three lifetimes of the access token, then it answers every time, with nobody
    # signing in again. (Until three lifetimes have passed and three refreshes been seen: a hook takes up to
    # 2 s on a slow machine, so no count of answers in a fixed time holds there; the deadline is generous.)
    started = time.monotonic()
    answers = 0
    access_tokens = {saved_login(desktop)["access_token"]}
    while time.monotonic() - started < RUN_SECONDS or len(access_tokens) < 4:
        assert time.monotonic() - started < 6 * RUN_SECONDS, f"{len(access_tokens)} tokens, {answers} answers"
        done, _ = run_hook("claude-code", desktop.home)
        assert (done.returncode, done.stderr) == (0, b"")
        assert MARKER in block_of("claude-code", done.stdout), done.stdout[:300]
        answers += 1
        access_tokens.add(saved_login(desktop)["access_token"])
        time.sleep(1)
    assert len(access_tokens) >= 4  # the first one and at least three refreshes
    # Every recall reached a function: the gateway's authorizer refused no token, expired or other.
    assert "POST /recall 200 " in short_stack.log()
    assert not GATEWAY_401.search(short_stack.log()), short_stack.log()[-3000:]

    # When the provider revokes the refresh token, then at the next expiry the desktop is logged out, quietly.
    secret = saved_login(desktop)
    refresh_token = secret["refresh_token"]
    revoked = httpx.post(
        f"{short_stack.issuer}/revoke",
        data={"token": refresh_token, "client_id": "memmy-desktop"},
        timeout=10,
    )
    assert revoked.status_code == 200, revoked.text
    time.sleep(TTL_SECONDS + 1)
    done, _ = run_hook("claude-code", desktop.home)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    status = status_of(desktop)
    assert status["login"]["state"] == "logged_out", status
    assert "memmy-kb desktop login" in status["login"]["note"]
    said = desktop.cli("status")
    assert "memmy-kb desktop login" in said.stdout

    # When logged out, then the page offers Sign in: the provider's form, the callback, and back to the page.
    with chromium() as browser:
        from playwright.sync_api import expect

        page = browser.new_page()
        page.goto(desktop.cli("open", "--no-browser", "--lang", "en").stdout.strip())
        page.get_by_role("button", name="Sign in").click()
        sign_in_form(page, user, "Sign-in Person")
        page.get_by_text("Signed in as Sign-in Person", exact=True).wait_for()
        assert page.url == f"{desktop.url}/?lang=en"  # in the language the page was in

        # Sign out asks first, saying that the agents' hooks stop too; Escape keeps the sign-in
        page.get_by_role("button", name="Sign out").click()
        dialog = page.get_by_role("dialog")
        expect(dialog).to_contain_text("until you sign in again, your agents' hooks and searches add no excerpts")
        page.keyboard.press("Escape")
        expect(dialog).to_be_hidden()
        expect(page.get_by_role("button", name="Sign out")).to_be_focused()
        assert status_of(desktop)["login"]["state"] == "logged_in"

        # In Chinese, by keyboard alone: the question in Chinese, Enter on its Sign out
        page.get_by_role("link", name="中文").click()
        page.get_by_role("button", name="退出登录").focus()
        page.keyboard.press("Enter")
        expect(dialog).to_contain_text("AI 助手的钩子和搜索都不会再附上知识库的摘录")
        expect(dialog.get_by_role("button", name="退出登录")).to_be_focused()
        page.keyboard.press("Enter")
        page.get_by_role("button", name="登录", exact=True).wait_for()
        expect(page.locator("#notice")).to_contain_text("已退出登录")
    assert status_of(desktop)["login"]["state"] == "logged_out"

    # Then no token, refresh token or code is in what the service or the stack logged.
    logs = desktop.log_path.read_text() + short_stack.log()
    assert refresh_token not in logs
    assert not re.search(r"eyJ[\w-]{10,}\.", logs)
    assert "code=" not in logs


def test_device_sign_in_and_a_forged_callback(short_stack, desktop):
    user = f"device-{uuid.uuid4().hex[:8]}"
    forged = httpx.get(f"{desktop.url}/callback", params={"code": "x", "state": "forged"}, timeout=10)
    assert forged.status_code == 400
    assert status_of(desktop)["login"]["state"] == "logged_out"

    login, printed = start_login(desktop, "--device")
    found = re.search(r"open (http\S+) and enter the code (\S+)", printed)
    assert found, printed
    verification, code = found.groups()
    with chromium() as browser:
        page = browser.new_page()
        page.goto(verification)
        page.get_by_label("Code").fill(code)
        page.get_by_role("button", name="Continue").click()
        sign_in_form(page, user, "Device Person")
        wait_until(
            lambda: login.poll() is not None, timeout=30, message=lambda: "the device sign-in to finish"
        )
    assert "logged in as " + user in finished(login)
    assert status_of(desktop)["login"]["user"] == user
