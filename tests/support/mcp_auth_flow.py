"""An MCP client, a browser and a person against the authorization server's handler
(``functions/mcp_auth/app.py``), with API Gateway events: register, authorize, sign in at the login
provider (the dev identity provider on 127.0.0.1, over httpx), come back to the callback, answer the
consent page, and use the token endpoint. ``AuthFlow.connect`` runs the whole flow to a token response."""

from __future__ import annotations

import importlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from tests.support.events import FakeLambdaContext
from tests.support.mcp_auth_events import auth_event, cookie_of
from tests.support.mcp_oauth import pkce, read_form, sign_in_and_consent

COOKIE = "__Host-memmy-oauth"
ISSUER = "http://127.0.0.1:18443"  # the authorization server's: loopback, as the login client's redirect must be
RESOURCE = "http://127.0.0.1:8080/mcp"
CALLBACK = "http://127.0.0.1:33418/callback"


def query_of(url: str) -> dict[str, str]:
    return dict(parse_qsl(urlsplit(url).query, keep_blank_values=True))


@dataclass
class Result:
    """A proxy result, read."""

    status: int
    headers: dict[str, str]
    body: str
    cookies: list[str]

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def location(self) -> str:
        return self.headers["location"]


@dataclass
class Sign:
    """One sign-in under way: the browser's cookie, the client's PKCE verifier and its state."""

    client_id: str
    verifier: str
    state: str
    cookie: str | None = None
    consent_page: Result | None = None
    extra: dict[str, str] = field(default_factory=dict)


@dataclass
class AuthFlow:
    """The authorization server at ``domain`` (its issuer and the MCP resource are the settings')."""

    issuer: str
    resource: str
    source_ip: str = "198.51.100.7"

    def call(self, method: str, path: str, **sent: Any) -> Result:
        handler = importlib.import_module("functions.mcp_auth.app").lambda_handler
        event = auth_event(method, path, source_ip=self.source_ip, **sent)
        result = handler(event, FakeLambdaContext(function_name="McpAuthFunction"))
        return Result(result["statusCode"], result.get("headers") or {}, result.get("body") or "",
                      result.get("cookies") or [])  # fmt: skip

    def register(self, name: str = "Claude", redirect_uris: Sequence[str] = (CALLBACK,)) -> str:
        body = {"client_name": name, "redirect_uris": list(redirect_uris), "token_endpoint_auth_method": "none"}
        reply = self.call("POST", "/oauth/register", json_body=body)
        assert reply.status == 201, reply.body
        return str(reply.json()["client_id"])

    def authorize(self, client_id: str, *, redirect_uri: str = CALLBACK, state: str = "st-1",
                  resource: str | None = None, extra: Sequence[tuple[str, str]] = ()) -> tuple[Sign, Result]:  # fmt: skip
        verifier, challenge = pkce()
        query = [("response_type", "code"), ("client_id", client_id), ("redirect_uri", redirect_uri),
                 ("scope", "kb.search"), ("state", state), ("code_challenge", challenge),
                 ("code_challenge_method", "S256"), *extra]  # fmt: skip
        if resource is not None:
            query.append(("resource", resource))
        reply = self.call("GET", "/oauth/authorize", query=query)
        return Sign(client_id, verifier, state, _cookie(reply)), reply

    def sign_in(self, login_url: str, user_id: str) -> dict[str, str]:
        """The login provider's redirect back to our callback, for ``user_id``: its query."""
        back = sign_in_and_consent(login_url, user_id, email=f"{user_id}@example.com")
        assert back.startswith(f"{self.issuer}/oauth/callback?"), back
        return query_of(back)

    def callback(self, query: dict[str, str], cookie: str | None) -> Result:
        return self.call("GET", "/oauth/callback", query=query, cookies=[f"{COOKIE}={cookie}"] if cookie else [])

    def consent(self, page: Result, cookie: str | None, decision: str = "allow") -> Result:
        action, hidden = read_form(page.body)
        assert action == "/oauth/consent"
        form = [*hidden, ("decision", decision)]
        return self.call("POST", "/oauth/consent", form=form, cookies=[f"{COOKIE}={cookie}"] if cookie else [])

    def token(self, form: dict[str, str]) -> Result:
        return self.call("POST", "/oauth/token", form=form)

    def code_for(self, user_id: str, client_id: str, **asked: Any) -> tuple[Sign, dict[str, str]]:
        """Authorize, sign in and allow: the sign-in and the client's redirect's query (code, state, iss)."""
        sign, reply = self.authorize(client_id, **asked)
        assert reply.status == 302, reply.body
        page = self.callback(self.sign_in(reply.location, user_id), sign.cookie)
        assert page.status == 200, page.body
        answer = self.consent(page, sign.cookie)
        assert answer.status == 302, answer.body
        return sign, query_of(answer.location)

    def exchange(self, sign: Sign, code: str, redirect_uri: str = CALLBACK, **more: str) -> Result:
        return self.token({"grant_type": "authorization_code", "code": code, "client_id": sign.client_id,
                           "redirect_uri": redirect_uri, "code_verifier": sign.verifier, **more})  # fmt: skip

    def refresh(self, client_id: str, refresh_token: str) -> Result:
        return self.token({"grant_type": "refresh_token", "refresh_token": refresh_token, "client_id": client_id})

    def connect(self, user_id: str, client_id: str) -> dict[str, Any]:
        """The whole flow: the token response."""
        sign, back = self.code_for(user_id, client_id)
        reply = self.exchange(sign, back["code"])
        assert reply.status == 200, reply.body
        tokens: dict[str, Any] = reply.json()
        return tokens


def _cookie(reply: Result) -> str | None:
    return cookie_of({"cookies": reply.cookies}, COOKIE)
