"""The official MCP SDK's OAuth client (``mcp.client.auth.OAuthClientProvider``) against the dev identity
provider, with a stand-in for the MCP endpoint (it answers 401 with ``resource_metadata`` until a token
for it arrives, and serves its protected-resource metadata; the real endpoint is tested end to end):
discovery (RFC 9728, RFC 8414), registration (RFC 7591), sign-in and consent (tests.support.mcp_oauth),
PKCE, RFC 9207's ``iss``, and ``resource`` (RFC 8707), all as the SDK does them, then a refresh."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, parse_qsl, urlsplit

import httpx
import httpx2
import pytest
from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

from memmy_local import tokens
from memmy_local.identity.provider import IdentityProvider
from tests.support.clock import Clock
from tests.support.mcp_oauth import redirect_params, sign_in_and_consent

RESOURCE = "http://127.0.0.1:18080/mcp"
METADATA = "http://127.0.0.1:18080/.well-known/oauth-protected-resource/mcp"
CALLBACK = "http://127.0.0.1:33419/callback"
_HOP_BY_HOP = {"content-length", "content-encoding", "transfer-encoding", "connection"}


class Storage:
    """The SDK's token storage, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class Web:
    """What the SDK's requests reach: the stand-in MCP endpoint, or (forwarded over loopback) the provider."""

    def __init__(self, idp: IdentityProvider) -> None:
        self.idp = idp
        self.forward = httpx.Client(timeout=10)
        self.accepted: list[dict[str, Any]] = []  # the claims of each token the endpoint accepted
        self.token_requests: list[dict[str, str]] = []  # the forms posted to the provider's /token

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        url = str(request.url)
        if url.startswith(self.idp.url + "/"):
            if url == f"{self.idp.url}/token":
                self.token_requests.append(dict(parse_qsl(request.content.decode())))
            answer = self.forward.request(
                request.method, url, headers=dict(request.headers.items()), content=request.content
            )
            headers = {k: v for k, v in answer.headers.items() if k.lower() not in _HOP_BY_HOP}
            return httpx2.Response(answer.status_code, headers=headers, content=answer.content)
        if url == METADATA:
            return httpx2.Response(200, json={"resource": RESOURCE, "authorization_servers": [self.idp.issuer],
                                              "scopes_supported": ["kb.search"],
                                              "bearer_methods_supported": ["header"]})  # fmt: skip
        if url == RESOURCE:
            return self.endpoint(request)
        return httpx2.Response(404)

    def endpoint(self, request: httpx2.Request) -> httpx2.Response:
        bearer = request.headers.get("authorization", "").removeprefix("Bearer ")
        try:
            claims = tokens.verify_token(
                bearer,
                key=self.idp.key,
                issuer=self.idp.issuer,
                audience=RESOURCE,
                clock=self.idp.state.clock,
            )
        except tokens.TokenError:
            challenge = f'Bearer resource_metadata="{METADATA}", scope="kb.search"'
            return httpx2.Response(401, headers={"WWW-Authenticate": challenge})
        self.accepted.append(claims)
        return httpx2.Response(200, json={"jsonrpc": "2.0", "id": 1, "result": {}})


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def idp(tmp_path: Path, clock: Clock) -> Iterator[IdentityProvider]:
    key = tokens.load_signing_key(tmp_path / "key.pem")
    with IdentityProvider(key, port=0, clock=clock, mcp_resource=RESOURCE) as provider:
        yield provider


def sdk_client(web: Web, storage: Storage, redirects: list[str], opened: list[str]) -> OAuthClientProvider:
    async def open_browser(authorization_url: str) -> None:
        opened.append(authorization_url)
        redirects.append(sign_in_and_consent(authorization_url, "alice"))

    async def callback() -> AuthorizationCodeResult:
        found = redirect_params(redirects[-1])
        return AuthorizationCodeResult(code=found["code"], state=found.get("state"), iss=found.get("iss"))

    metadata = OAuthClientMetadata(
        client_name="SDK Agent", redirect_uris=[CALLBACK], grant_types=["authorization_code", "refresh_token"],
        response_types=["code"], token_endpoint_auth_method="none",
    )  # fmt: skip
    return OAuthClientProvider(
        RESOURCE, metadata, storage, redirect_handler=open_browser, callback_handler=callback
    )


async def call_endpoint(web: Web, auth: OAuthClientProvider) -> int:
    async with httpx2.AsyncClient(transport=httpx2.MockTransport(web), auth=auth) as client:
        answer = await client.post(RESOURCE, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    return answer.status_code


def test_the_sdk_registers_signs_in_and_calls_the_endpoint_with_a_token_for_it(
    idp: IdentityProvider, clock: Clock
) -> None:
    web, storage, redirects, opened = Web(idp), Storage(), [], []
    auth = sdk_client(web, storage, redirects, opened)

    assert asyncio.run(call_endpoint(web, auth)) == 200

    assert len(redirects) == 1  # one sign-in and consent
    assert parse_qs(urlsplit(opened[0]).query)["resource"] == [RESOURCE]
    assert redirect_params(redirects[0])["iss"] == idp.issuer
    (claims,) = web.accepted
    assert claims["aud"] == RESOURCE
    assert (claims["sub"], claims["scope"], claims["client_name"]) == ("alice", "kb.search", "SDK Agent")
    assert storage.client is not None
    assert claims["client_id"] == storage.client.client_id
    assert storage.client.token_endpoint_auth_method == "none"
    assert storage.tokens is not None
    assert storage.tokens.refresh_token

    # An hour on, the SDK refreshes and keeps calling, without a new sign-in (its clock is real time:
    # its token is made to expire now, as the provider's clock skips the hour).
    clock.skipped += 3700
    auth.context.token_expiry_time = 1
    assert asyncio.run(call_endpoint(web, auth)) == 200
    assert len(redirects) == 1
    assert web.accepted[-1]["auth_time"] == claims["auth_time"]
    assert web.accepted[-1]["iat"] > claims["iat"]
    assert [form["grant_type"] for form in web.token_requests] == ["authorization_code", "refresh_token"]
    assert [form.get("resource") for form in web.token_requests] == [RESOURCE, RESOURCE]
