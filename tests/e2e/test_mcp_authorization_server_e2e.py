"""The service's own authorization server for MCP clients, driven by the official MCP Python SDK and a real
browser, on a local stack started with ``--mcp-authorization service``.

The SDK's OAuth flow goes from ``/mcp``'s 401 to the protected-resource metadata, which names the gateway as
the authorization server, to its RFC 8414 metadata, dynamic registration at ``/oauth/register`` and the
authorization URL. Debian's chromium opens that URL on the gateway, is sent to the dev identity provider's
sign-in page, signs in, comes back to the gateway's ``/oauth/callback`` and sees the service's consent page
(the client's name and its redirect host; axe-core finds nothing serious), and presses Allow or Deny. With
Allow, in both protocol generations, ``search`` returns the person's own excerpt and never an outsider's;
the access token is the gateway's, signed by a key of ``/oauth/jwks``; it is refused by every other route;
once the person disconnects the client, its next call is 401 and its refresh token ``invalid_grant``. With
Deny, the client's callback gets ``access_denied`` and ``iss``.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterator
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientMetadata,
)

from tests.support.e2e_story import client
from tests.support.mcp_consent_browser import Journey, consent_in_chromium
from tests.support.mcp_sdk_client import TokenMemory, kb_with, raw_tools_list
from tests.support.stack import RunningStack, start_stack, stop_stack
from tests.support.stage import Stage

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.local_stack("a stack started with the service's own authorization server"),
]

CALLBACK = "http://127.0.0.1:33419/callback"
BUDGET = "项目 {code} 的预算是 {amount} 万元，由财务部审批。"
CLIENT_NAME = "Research assistant (service AS test)"
COOKIE = "__Host-memmy-oauth"


@pytest.fixture(scope="module")
def service_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningStack]:
    """A stack of its own whose MCP tokens come from the service's authorization server."""
    workdir = tmp_path_factory.mktemp("mcp-auth-stack")
    process, stack = start_stack(workdir, extra=["--mcp-authorization", "service"])
    try:
        yield stack
    finally:
        stop_stack(process)


class _Person:
    """The person at the browser: what the SDK sent them to, and what their browser saw there."""

    def __init__(self, user_id: str, decision: str, screenshot: Path) -> None:
        self.user_id, self.decision, self.screenshot = user_id, decision, screenshot
        self.authorization_urls: list[str] = []
        self.journeys: list[Journey] = []

    async def redirect(self, url: str) -> None:
        self.authorization_urls.append(url)

    async def callback(self) -> AuthorizationCodeResult:
        url = self.authorization_urls[-1]

        def journey() -> Journey:
            return consent_in_chromium(
                url, self.user_id, callback=CALLBACK, decision=self.decision, screenshot=self.screenshot
            )

        seen = await anyio.to_thread.run_sync(journey)
        self.journeys.append(seen)
        query = parse_qs(urlparse(seen.landed).query)
        if "error" in query:
            raise _Denied(seen.landed)
        return AuthorizationCodeResult(
            code=query["code"][0], state=query.get("state", [None])[0], iss=query.get("iss", [None])[0]
        )


class _Denied(Exception):
    """The person pressed Deny: the client's callback got an error."""


def _raised(error: BaseException, kind: type[BaseException]) -> bool:
    """Whether ``error`` is ``kind`` or holds one, through exception groups and causes."""
    if isinstance(error, kind):
        return True
    inner = [*getattr(error, "exceptions", ()), error.__cause__, error.__context__]
    return any(_raised(e, kind) for e in inner if e is not None)


def _oauth(mcp_url: str, person: _Person, storage: TokenMemory) -> OAuthClientProvider:
    metadata = OAuthClientMetadata(
        client_name=CLIENT_NAME,
        redirect_uris=[CALLBACK],  # type: ignore[list-item]  # pydantic parses the string
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )
    return OAuthClientProvider(
        mcp_url, metadata, storage, redirect_handler=person.redirect, callback_handler=person.callback
    )


def _search(mcp_url: str, auth: OAuthClientProvider, mode: str, query: str) -> dict[str, Any]:
    async def main() -> dict[str, Any]:
        async with (
            httpx2.AsyncClient(auth=auth, timeout=60) as http,
            Client(streamable_http_client(mcp_url, http_client=http), mode=mode) as mcp,
        ):
            result = await mcp.call_tool("search", {"query": query})
        assert not result.is_error, result
        structured: dict[str, Any] = result.structured_content
        return structured

    return anyio.run(main)


def _jwt_part(token: str, index: int) -> dict[str, Any]:
    """A JWT's header (0) or claims (1), unverified: what the token says of itself."""
    part = token.split(".")[index]
    decoded: dict[str, Any] = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    return decoded


def _assert_the_services_consent_page(stack: RunningStack, seen: Journey) -> None:
    assert seen.consent_url.startswith(f"{stack.api_url}/oauth/callback?"), seen.consent_url
    assert CLIENT_NAME in seen.consent_text
    assert "127.0.0.1" in seen.consent_text  # the redirect URI's host
    assert "cannot change, share or delete anything" in seen.consent_text
    assert seen.violations == []
    [cookie] = [c for c in seen.cookies if c["name"] == COOKIE]
    assert cookie["secure"]
    assert cookie["httpOnly"]
    assert cookie["sameSite"] == "Lax"
    assert cookie["domain"] == urlparse(stack.api_url).hostname


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_an_sdk_client_gets_the_services_token_through_sign_in_and_consent_in_a_browser(
    service_stack: RunningStack, mode: str, tmp_path: Path
) -> None:
    stack = service_stack
    stage = Stage.on_local(stack)
    suffix = uuid.uuid4().hex[:8]
    budget = f"budget{suffix}"
    person = stage.user(f"as-reader-{suffix}", name="研究员")
    outsider = stage.user(f"as-outsider-{suffix}", name="旁人")
    mcp_url = f"{stack.api_url}/mcp"
    mine, others = client(stage, person.token), client(stage, outsider.token)
    try:
        for api in (mine, others):
            assert api.put("/me").status_code == HTTPStatus.OK
        # Given the person's own KB and an outsider's KB that answers the same question
        own_kb = kb_with(mine, stage, "我的预算", "预算.md", BUDGET.format(code=budget, amount=120))
        kb_with(others, stage, "旁人的资料", "旁人.md", BUDGET.format(code=budget, amount=999))

        # When the SDK client connects and the person signs in and allows it in the browser
        storage = TokenMemory()
        at_browser = _Person(person.user_id, "Allow", tmp_path / f"mcp-consent-{mode}.png")
        auth = _oauth(mcp_url, at_browser, storage)
        found = _search(mcp_url, auth, mode, f"项目 {budget} 的预算是多少")

        # Then /mcp's 401 named metadata whose authorization server is the gateway itself
        challenge = httpx.post(mcp_url, json={}, timeout=10)
        assert challenge.status_code == HTTPStatus.UNAUTHORIZED
        prm_url = challenge.headers["www-authenticate"].split('resource_metadata="', 1)[1].split('"')[0]
        assert httpx.get(prm_url, timeout=10).json()["authorization_servers"] == [stack.api_url]
        # And the SDK was sent to the gateway's own /oauth/authorize, registered at /oauth/register
        [authorization_url] = at_browser.authorization_urls
        assert authorization_url.startswith(f"{stack.api_url}/oauth/authorize?"), authorization_url
        assert storage.client_info is not None
        assert storage.client_info.client_id
        metadata = httpx.get(f"{stack.api_url}/.well-known/oauth-authorization-server", timeout=10).json()
        assert metadata["issuer"] == stack.api_url
        assert metadata["registration_endpoint"] == f"{stack.api_url}/oauth/register"
        # And the browser saw the service's consent page, held its cookie, and landed with code and iss
        [seen] = at_browser.journeys
        _assert_the_services_consent_page(stack, seen)
        assert (tmp_path / f"mcp-consent-{mode}.png").stat().st_size > 0
        landed = parse_qs(urlparse(seen.landed).query)
        assert landed["iss"] == [stack.api_url]
        assert landed["code"]
        assert landed["state"]

        # And search returns the person's own excerpt, never the outsider's
        assert [hit["knowledge_base"]["id"] for hit in found["results"]] == [own_kb], found
        assert "120 万元" in found["results"][0]["text"]

        # And the access token is the gateway's, signed by a key it publishes
        assert storage.tokens is not None
        assert storage.tokens.refresh_token
        mcp_token = storage.tokens.access_token
        assert _jwt_part(mcp_token, 1)["iss"] == stack.api_url
        jwks = httpx.get(f"{stack.api_url}/oauth/jwks", timeout=10).json()
        assert _jwt_part(mcp_token, 0)["kid"] in [key["kid"] for key in jwks["keys"]]

        # And it is refused by every other route
        on_kbs = httpx.get(
            f"{stack.api_url}/knowledge-bases", headers={"Authorization": f"Bearer {mcp_token}"}, timeout=10
        )
        assert on_kbs.status_code == HTTPStatus.UNAUTHORIZED
        assert raw_tools_list(mcp_url, mcp_token).status_code == HTTPStatus.OK

        # When the person disconnects the client, then its next call is 401 and its refresh is refused
        listed = mine.get("/me/connections").json()
        [connection] = [c for c in listed["connections"] if c["client_name"] == CLIENT_NAME]
        assert mine.delete(f"/me/connections/{connection['id']}").status_code == HTTPStatus.NO_CONTENT
        assert raw_tools_list(mcp_url, mcp_token).status_code == HTTPStatus.UNAUTHORIZED
        refreshed = httpx.post(
            f"{stack.api_url}/oauth/token",
            data={
                "grant_type": "refresh_token",
                "refresh_token": storage.tokens.refresh_token,
                "client_id": storage.client_info.client_id,
            },
            timeout=10,
        )
        assert refreshed.status_code == HTTPStatus.BAD_REQUEST, refreshed.text
        assert refreshed.json()["error"] == "invalid_grant"
    finally:
        mine.close()
        others.close()


def test_deny_in_the_browser_sends_access_denied_and_iss_to_the_client(
    service_stack: RunningStack, tmp_path: Path
) -> None:
    stack = service_stack
    mcp_url = f"{stack.api_url}/mcp"
    at_browser = _Person(f"as-denier-{uuid.uuid4().hex[:8]}", "Deny", tmp_path / "mcp-consent-deny.png")
    storage = TokenMemory()
    auth = _oauth(mcp_url, at_browser, storage)

    # The SDK's flow stops at the callback's error (inside its task groups' exception groups)
    try:
        _search(mcp_url, auth, "2026-07-28", "anything")
    except BaseException as stopped:  # which wrapper the SDK puts around it is its own
        assert _raised(stopped, _Denied), repr(stopped)  # noqa: PT017
    else:
        pytest.fail("the client got on without the person's consent")

    [seen] = at_browser.journeys
    _assert_the_services_consent_page(stack, seen)
    landed = parse_qs(urlparse(seen.landed).query)
    assert landed["error"] == ["access_denied"]
    assert landed["iss"] == [stack.api_url]
    assert "code" not in landed
    assert storage.tokens is None
