"""The dev identity provider's consent page for an MCP client in a real browser (Debian's chromium): after
the sign-in form, the page names the client and what it may do, and its buttons are found by their names;
"Allow" reaches the client's loopback callback with a code and ``iss``, "Deny" with ``access_denied``.
And the running stack's provider (its API on a port chosen at start) issues MCP tokens for that API's
``/mcp``, as ``memmy-local token --mcp`` does."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest

from memmy_local import tokens
from memmy_local.identity.provider import IdentityProvider
from tests.support.loopback_callback import loopback_callback
from tests.support.mcp_oauth import pkce, redirect_params, register, sign_in_and_consent
from tests.support.page_browser import chromium
from tests.support.stack import LOCAL_CLI, RunningStack

pytestmark = [pytest.mark.e2e, pytest.mark.local_stack("the dev identity provider's consent page")]
RESOURCE = "http://127.0.0.1:18080/mcp"


@pytest.fixture
def callback() -> Iterator[tuple[str, list[str]]]:
    with loopback_callback() as (redirect_uri, seen):
        yield redirect_uri, seen


@pytest.fixture
def idp(tmp_path: Path) -> Iterator[IdentityProvider]:
    key = tokens.load_signing_key(tmp_path / "key.pem")
    with IdentityProvider(key, port=0, mcp_resource=RESOURCE) as provider:
        yield provider


@pytest.mark.parametrize(("button", "answer"), [("Allow", "code"), ("Deny", "error")])
def test_the_consent_page_in_a_browser_answers_the_client(
    idp: IdentityProvider, callback: tuple[str, list[str]], button: str, answer: str
) -> None:
    redirect_uri, seen = callback
    client = httpx.post(f"{idp.url}/register", timeout=10,
                        json={"client_name": "Browser Agent", "redirect_uris": [redirect_uri]}).json()  # fmt: skip
    _, challenge = pkce()
    query = urlencode({"response_type": "code", "client_id": client["client_id"], "redirect_uri": redirect_uri,
                       "scope": "kb.search", "state": "browser-state", "code_challenge": challenge,
                       "code_challenge_method": "S256", "resource": RESOURCE})  # fmt: skip

    with chromium() as browser:
        page = browser.new_page()
        page.goto(f"{idp.url}/authorize?{query}")
        page.get_by_label("User ID").fill("alice")
        page.get_by_role("button", name="Sign in").click()
        consent = page.locator("body").inner_text()
        page.get_by_role("button", name=button).click()
        page.wait_for_url(f"{redirect_uri}?*")

    assert "Browser Agent (127.0.0.1) asks to connect to your Memmy account." in consent
    assert "it cannot change, share or delete anything" in consent
    (arrived,) = [path for path in seen if path.startswith("/callback?")]
    params = parse_qs(urlsplit(arrived).query)
    assert answer in params
    assert params["state"] == ["browser-state"]
    assert params["iss"] == [idp.issuer]


def test_the_running_stacks_provider_and_token_command_issue_tokens_for_its_mcp_endpoint(
    local_stack: RunningStack,
) -> None:
    resource = f"{local_stack.api_url}/mcp"
    key = tokens.load_signing_key(local_stack.key_path)
    with httpx.Client(base_url=local_stack.issuer, timeout=10) as http:
        client_id = register(http).json()["client_id"]
        verifier, challenge = pkce()
        query = urlencode({"response_type": "code", "client_id": client_id, "scope": "kb.search",
                           "redirect_uri": "http://127.0.0.1:33418/callback", "code_challenge": challenge,
                           "code_challenge_method": "S256"})  # fmt: skip
        code = redirect_params(sign_in_and_consent(f"{local_stack.issuer}/authorize?{query}", "alice"))["code"]
        answer = http.post("/token", data={"grant_type": "authorization_code", "code": code, "client_id": client_id,
                                           "redirect_uri": "http://127.0.0.1:33418/callback",
                                           "code_verifier": verifier})  # fmt: skip
    printed = subprocess.run(  # noqa: S603 - our own CLI with fixed arguments
        [*LOCAL_CLI, "token", "alice", "--mcp"], capture_output=True, text=True, timeout=60, check=True,
        env={**os.environ, tokens.HOME_ENV: str(local_stack.key_path.parent)},
    ).stdout.strip()  # fmt: skip

    for token in (answer.json()["access_token"], printed):
        claims = tokens.verify_token(token, key=key, issuer=local_stack.issuer, audience=resource)
        assert (claims["aud"], claims["sub"], claims["scope"]) == (resource, "alice", "kb.search")
