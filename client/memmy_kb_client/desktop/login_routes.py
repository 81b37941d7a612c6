"""The sign-in's routes: ``/control/login/*`` for the commands (control token), ``/callback`` for the
provider (only a pending flow's ``state`` is answered) and ``/api/login`` / ``/api/logout`` for the page
(docs/desktop.md, "Signing in")."""

from __future__ import annotations

import html
import time
from typing import Any, Final
from urllib.parse import parse_qs

from memmy_kb_client.desktop import oidc
from memmy_kb_client.desktop.flows import Flow
from memmy_kb_client.desktop.routes import PAGE_HEADERS, Reply, Request, Route, error_reply
from memmy_kb_client.desktop.state import Access, DesktopState

MODES: Final = ("browser", "device")


def _refused(err: oidc.LoginError) -> Reply:
    if isinstance(err, oidc.ProviderUnreachable):
        return error_reply(502, "login_unavailable", err.message)
    return error_reply(502, err.code, err.message)


def _start(state: DesktopState, mode: str) -> Flow | Reply:
    try:
        provider = oidc.discover(state.cloud.base_url, state.config.login_timeout)
        if mode == "device":
            return state.flows.start_device(provider)
        return state.flows.start_browser(provider, f"{state.url}/callback")
    except oidc.LoginError as err:
        return _refused(err)


def _login_start(state: DesktopState, request: Request) -> Reply:
    body = request.json_object()
    mode = (body or {}).get("mode", "browser")
    if body is None or mode not in MODES:
        return error_reply(422, "validation_error", 'expected {"mode": "browser" | "device"}')
    flow = _start(state, str(mode))
    if isinstance(flow, Reply):
        return flow
    answer: dict[str, Any] = {"flow": flow.id, "expires_in": flow.expires_in(time.monotonic())}
    if flow.request is not None:
        answer["url"] = flow.request.url
    else:
        for name in ("verification_uri", "verification_uri_complete", "user_code"):
            if isinstance(flow.device.get(name), str):
                answer[name] = flow.device[name]
    return Reply(200, answer)


def _login_flow(state: DesktopState, request: Request) -> Reply:
    flow_id = (parse_qs(request.query).get("id") or [""])[0]
    flow = state.flows.get(flow_id) if flow_id else None
    if flow is None:
        return error_reply(404, "flow_not_found", "no such sign-in (the service may have restarted)")
    # Exchanging the code, or keeping the login it gave: still pending to whoever asks.
    answer: dict[str, Any] = {"state": "pending" if flow.state in ("exchanging", "keeping") else flow.state}
    if flow.error:
        answer["error"] = flow.error
    if flow.state == "done":
        answer["status"] = state.status()
    return Reply(200, answer)


def _page(status: int, title: str, text: str, *, back: bool = False) -> Reply:
    # ``back``: a link to the knowledge-base page, for a sign-in started there (the tab that left it).
    link = '<p><a href="/">Back to Memmy / 返回 Memmy</a></p>' if back else ""
    body = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title></head>"
        f"<body><h1>{html.escape(title)}</h1><p>{html.escape(text)}</p>{link}</body></html>"
    )
    return Reply(status, {}, PAGE_HEADERS, raw=body.encode("utf-8"), content_type="text/html; charset=utf-8")


def _cancelled(flow: Flow) -> Reply:
    """A late answer to a sign-in that a newer one or a logout cancelled: nothing is kept."""
    return _page(
        400,
        "Sign-in cancelled",
        f"This sign-in was cancelled by a newer sign-in or a logout ({flow.error}); the Memmy desktop "
        "service kept nothing from it. Run `memmy-kb desktop login` to sign in.",
    )


def _callback(state: DesktopState, request: Request) -> Reply:
    """The provider's redirect: the code exchanged for the flow its ``state`` names, or a refusal."""
    params = parse_qs(request.query)
    offered = (params.get("state") or [""])[0]
    flow = state.flows.claim_by_state(offered) if offered else None
    if flow is not None and flow.state == "cancelled":
        return _cancelled(flow)
    if flow is None:
        return _page(
            400,
            "Sign-in refused",
            "This sign-in is unknown to the Memmy desktop service, or was finished already. "
            "Run `memmy-kb desktop login` again.",
        )
    code = (params.get("code") or [""])[0]
    error = (params.get("error") or [""])[0][:64]
    login = state.flows.finish_browser(flow, code or None, error or None)
    if login is None and flow.state == "cancelled":
        return _cancelled(flow)
    if login is None:
        return _page(400, "Sign-in failed", f"{flow.error}. Run `memmy-kb desktop login` again.")
    profile = login.profile()
    who = next((str(profile[c]) for c in ("name", "email", "sub") if isinstance(profile.get(c), str)), "")
    return _page(
        200,
        "Signed in",
        f"The Memmy desktop service is signed in{f' as {who}' if who else ''}. You can close this tab.",
        back=True,
    )


def _api_login(state: DesktopState, request: Request) -> Reply:
    flow = _start(state, "browser")
    if isinstance(flow, Reply):
        return flow
    assert flow.request is not None
    return Reply(200, {"url": flow.request.url})


def _api_logout(state: DesktopState, request: Request) -> Reply:
    state.logout()
    return Reply(200, {})


LOGIN_ROUTES: Final[dict[tuple[str, str], Route]] = {
    ("POST", "/control/login/start"): Route(Access.CONTROL, _login_start),
    ("GET", "/control/login/flow"): Route(Access.CONTROL, _login_flow),
    ("GET", "/callback"): Route(Access.PUBLIC, _callback),
    ("POST", "/api/login"): Route(Access.SESSION, _api_login),
    ("POST", "/api/logout"): Route(Access.SESSION, _api_logout),
}
