"""The desktop's sign-in driven over HTTP, for its integration tests: ``browse`` plays a browser that has
signed in at the provider, ``sign_in`` starts a browser sign-in and follows it, ``flow_state`` asks how a
sign-in went, ``page_session`` opens a page session (its cookie and CSRF token)."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from memmy_kb_client.desktop.server import DesktopService
from tests.support.desktop_service import Client


@dataclass(frozen=True)
class Page:
    status_code: int
    text: str
    headers: Mapping[str, str]


class _ToTheCallbackOnly(urllib.request.HTTPRedirectHandler):
    """Follows the provider's redirect to the service's ``/callback``, and no further: the callback's own
    answer is what the tests read (a 303 to the page when signed in)."""

    def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str) -> Any:
        if "/callback?" not in newurl:
            return None
        return super().redirect_request(req, fp, code, msg, headers, newurl)


SIGNED_IN = 303  # the callback's answer to a sign-in it kept: on to the page, with a page session


def browse(url: str, language: str = "en-US,en;q=0.9") -> Page:
    """A browser that has signed in: the provider's redirect followed to the service's callback (urllib,
    so that what this test process logs is the service's alone); the callback's answer."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), _ToTheCallbackOnly())
    request = urllib.request.Request(url, headers={"Accept-Language": language})  # noqa: S310 - http: loopback
    try:
        with opener.open(request, timeout=10) as response:
            return Page(response.status, response.read().decode(), dict(response.headers))
    except urllib.error.HTTPError as refused:
        return Page(refused.code, refused.read().decode(), dict(refused.headers))


def sign_in(client: Client) -> tuple[dict[str, Any], Page]:
    status, started = client.control("POST", "/control/login/start", {"mode": "browser"})
    assert status == 200, started
    return started, browse(started["url"])


def flow_state(client: Client, flow: str) -> dict[str, Any]:
    status, answer = client.control("GET", f"/control/login/flow?id={flow}")
    assert status == 200, answer
    return answer


def page_session(service: DesktopService) -> dict[str, str]:
    """The headers of a page session: its cookie and CSRF token."""
    code = service.state.sessions.new_code()
    opened = httpx.get(f"{service.url}/open?code={code}", follow_redirects=False, timeout=10)
    cookie = opened.headers["Set-Cookie"].split(";", 1)[0]
    session = httpx.get(f"{service.url}/api/session", headers={"Cookie": cookie}, timeout=10).json()
    return {"Cookie": cookie, "X-CSRF-Token": session["csrf"]}
