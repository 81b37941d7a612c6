"""The sign-in's routes: ``/control/login/*`` for the commands (control token), ``/callback`` for the
provider (only a pending flow's ``state`` is answered; a finished sign-in lands on the page with a session)
and ``/api/login`` / ``/api/logout`` for the page (docs/desktop.md, "Signing in")."""

from __future__ import annotations

import time
from typing import Any, Final
from urllib.parse import parse_qs

from memmy_kb_client.desktop import oidc, page
from memmy_kb_client.desktop.flows import BROWSER_FLOW_SECONDS, Flow
from memmy_kb_client.desktop.routes import PAGE_HEADERS, Reply, Request, Route, error_reply
from memmy_kb_client.desktop.state import Access, DesktopState

MODES: Final = ("browser", "device")


def _refused(err: oidc.LoginError) -> Reply:
    if isinstance(err, oidc.ProviderUnreachable):
        return error_reply(502, "login_unavailable", err.message)
    return error_reply(502, err.code, err.message)


def _start(state: DesktopState, mode: str, lang: str = "") -> Flow | Reply:
    try:
        provider = oidc.discover(state.cloud.base_url, state.config.login_timeout)
        if mode == "device":
            return state.flows.start_device(provider)
        return state.flows.start_browser(provider, f"{state.url}/callback", lang)
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


# What the callback's page says when no login came of it, in each language: a title and a sentence.
_ENDINGS: Final = {
    "cancelled": {
        "en": ("Sign-in cancelled", "This sign-in was cancelled by a newer sign-in or a sign-out ({why})."),
        "zh": ("登录已取消", "这次登录被更新的一次登录或退出登录取消了（{why}）。"),
    },
    "expired": {
        "en": ("Sign-in expired", "This sign-in was not finished within {minutes} minutes."),
        "zh": ("登录已过期", "这次登录没有在 {minutes} 分钟内完成。"),
    },
    "unknown": {
        "en": (
            "Sign-in not recognised",
            "The Memmy desktop service does not know this sign-in, or it was finished already "
            "(the service may have restarted).",
        ),
        "zh": ("无法识别这次登录", "本机的 Memmy 服务不认识这次登录，或者它已经完成（服务可能重启过）。"),
    },
    "failed": {
        "en": ("Sign-in failed", "The sign-in did not succeed: {why}."),
        "zh": ("登录失败", "这次登录没有成功（{why}）。"),
    },
}
_AFTER: Final = {
    "en": ("Nothing of it was kept. Sign in again from the page, or run {login}.", "Back to Memmy"),
    "zh": ("没有保存它的任何内容。请在页面上重新登录，或运行 {login}。", "返回 Memmy"),
}


def _ended(state: DesktopState, request: Request, ending: str, flow: Flow | None) -> Reply:
    """A sign-in that kept no login: a page in the page's style and language that says why (400)."""
    lang = page.language(flow.lang if flow else None, request.headers.get("Accept-Language"))
    title, sentence = _ENDINGS[ending][lang]
    why = flow.error if flow is not None else ""
    after, back = _AFTER[lang]
    minutes = int(BROWSER_FLOW_SECONDS // 60)
    sentences = [sentence.replace("{why}", why).replace("{minutes}", str(minutes)), after]
    body = page.notice_html(lang, title, sentences, state.commands(), back=back)
    return Reply(400, {}, PAGE_HEADERS, raw=body, content_type="text/html; charset=utf-8")


def _signed_in(state: DesktopState, flow: Flow) -> Reply:
    """The sign-in is kept: on to the knowledge-base page, with a page session for this browser.

    This browser completed the flow (it brought back the flow's ``state``, a secret only the authorization
    URL carried, which works once), so it is the one the person signed in with: as a one-time code does,
    the state becomes a session here."""
    session_id, _ = state.sessions.open_session()
    location = f"/?lang={flow.lang}" if flow.lang in ("en", "zh") else "/"
    headers = (("Set-Cookie", page.session_cookie(state.cookie_name, session_id)), ("Location", location))
    return Reply(303, {}, (*PAGE_HEADERS, *headers), raw=b"")


def _callback(state: DesktopState, request: Request) -> Reply:
    """The provider's redirect: the code exchanged for the flow its ``state`` names, or a refusal."""
    params = parse_qs(request.query)
    offered = (params.get("state") or [""])[0]
    flow = state.flows.claim_by_state(offered) if offered else None
    if flow is None:
        return _ended(state, request, "unknown", None)
    if flow.state in ("cancelled", "expired"):
        return _ended(state, request, flow.state, flow)
    code = (params.get("code") or [""])[0]
    error = (params.get("error") or [""])[0][:64]
    login = state.flows.finish_browser(flow, code or None, error or None)
    if login is None:
        return _ended(state, request, "cancelled" if flow.state == "cancelled" else "failed", flow)
    return _signed_in(state, flow)


def _api_login(state: DesktopState, request: Request) -> Reply:
    """The page's Sign in: a browser flow in the page's language (``{"lang"}``), whose URL it opens."""
    body = request.json_object() or {}
    flow = _start(state, "browser", str(body["lang"]) if body.get("lang") in ("en", "zh") else "")
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
