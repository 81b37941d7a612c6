"""The dev identity provider's sign-in pages in a real browser (Debian's chromium): found by their labels,
their Content-Security-Policy lets the form's answer redirect to the loopback callback, and the device
page's "Code" leads to the same sign-in form."""

from __future__ import annotations

import base64
import hashlib
import secrets
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest

from memmy_local import tokens
from memmy_local.identity.provider import IdentityProvider
from memmy_local.identity.records import CLIENT_ID
from tests.support.loopback_callback import loopback_callback
from tests.support.page_browser import chromium

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.local_stack("the dev identity provider's sign-in pages"),
]


@pytest.fixture
def callback() -> Iterator[tuple[str, list[str]]]:
    with loopback_callback() as (redirect_uri, seen):
        yield redirect_uri, seen


@pytest.fixture
def idp(tmp_path: Path) -> Iterator[IdentityProvider]:
    with IdentityProvider(tokens.load_signing_key(tmp_path / "key.pem"), port=0) as provider:
        yield provider


def test_signing_in_in_a_browser_reaches_the_callback_and_a_device_is_connected(
    idp: IdentityProvider, callback: tuple[str, list[str]]
) -> None:
    redirect_uri, seen = callback
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    query = urlencode({"response_type": "code", "client_id": CLIENT_ID, "redirect_uri": redirect_uri,
                       "scope": "openid profile phone", "state": "browser-state", "code_challenge": challenge,
                       "code_challenge_method": "S256"})  # fmt: skip
    device = httpx.post(f"{idp.url}/device_authorization", data={"client_id": CLIENT_ID}, timeout=10).json()

    with chromium() as browser:
        page = browser.new_page()
        page.goto(f"{idp.url}/authorize?{query}")
        page.get_by_label("User ID").fill("alice")
        page.get_by_label("Phone").fill("+8613800138000")
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(f"{redirect_uri}?*")

        page.goto(device["verification_uri"])
        page.get_by_label("Code").fill(device["user_code"])
        page.get_by_role("button", name="Continue").click()
        page.get_by_label("User ID").fill("bob")
        page.get_by_role("button", name="Sign in").click()
        connected = page.locator("h1").inner_text()

    (arrived,) = [path for path in seen if path.startswith("/callback?")]  # chromium also asks for a favicon
    params = parse_qs(urlsplit(arrived).query)
    assert params["state"] == ["browser-state"]
    token = httpx.post(f"{idp.url}/token", timeout=10, data={"grant_type": "authorization_code",
                       "code": params["code"][0], "redirect_uri": redirect_uri, "client_id": CLIENT_ID,
                       "code_verifier": verifier})  # fmt: skip
    assert token.status_code == 200, token.text
    assert connected == "Device connected"
    polled = httpx.post(f"{idp.url}/token", timeout=10, data={"client_id": CLIENT_ID, "device_code":
                        device["device_code"], "grant_type": "urn:ietf:params:oauth:grant-type:device_code"})  # fmt: skip
    assert polled.status_code == 200, polled.text
