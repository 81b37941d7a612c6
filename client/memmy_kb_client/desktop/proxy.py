"""The cloud proxy of the desktop service: the cloud routes the page uses (``page.CLOUD_ROUTES``) sent on
with the held login, for two callers: the page (``/api/<cloud route>``, its session and CSRF token) and
the ``memmy-kb`` commands (``/control/cloud/<cloud route>``, the control token). No route gives either a
token; the cloud's answer is passed back as is, except that a 401 marks the login rejected and becomes a
503 the caller can explain (docs/desktop.md, "The cloud through the service")."""

from __future__ import annotations

from typing import Final
from urllib.parse import quote, unquote

from memmy_kb_client.desktop import page
from memmy_kb_client.desktop.routes import Reply, Request, Route, error_reply
from memmy_kb_client.desktop.state import Access, DesktopState
from memmy_kb_client.home.control import CLOUD_PREFIX


def cli_target(method: str, path: str, query: str) -> str | None:
    """The cloud route for a command's ``/control/cloud{path}``; None when it is not one the page may reach.

    The commands escape each id once, as the SDK does for the cloud (a ``.`` left as it is); the page
    escapes it twice, ``.`` too (browsers drop ``%2E`` segments). Each segment is put in the page's form,
    which ``page`` checks and turns into the cloud's: one rule for both callers."""
    if not path.startswith(CLOUD_PREFIX + "/"):
        return None
    try:
        as_page = "/".join(_as_page_segment(part) for part in path[len(CLOUD_PREFIX) :].split("/"))
    except UnicodeDecodeError:
        return None
    return page.cloud_target(method, as_page, query)


def _as_page_segment(segment: str) -> str:
    once = quote(unquote(segment, errors="strict"), safe="").replace(".", "%2E")
    return quote(once, safe="")


def _forward(state: DesktopState, request: Request, target: str) -> Reply:
    """``request`` sent on to the cloud as ``target`` with the held login; the cloud's answer."""
    login, why = state.fresh_login()  # refreshed first when it is about to expire; never an expired one
    if login is None and why == "unreachable":
        return error_reply(
            503,
            "login_refresh_unreachable",
            "the login has expired and the sign-in provider cannot be reached to renew it",
        )
    if login is None:
        return error_reply(
            503, "desktop_logged_out", "the desktop service has no valid login: run `memmy-kb desktop login`"
        )
    headers: dict[str, str] = {}
    key = page.idempotency_key(request.headers.get("Idempotency-Key"))
    if key is not None:
        headers["Idempotency-Key"] = key
    body = request.body if request.method in ("POST", "PUT", "PATCH") else None
    status, data = state.cloud.forward(login.token, request.method, target, body or None, headers)
    if status == 401:
        state.mark_rejected(login)
        return error_reply(503, "cloud_login_rejected", "the cloud refused the desktop's login: log in again")
    return Reply(status, {}, raw=b"" if status == 204 else data)


def to_cloud(state: DesktopState, request: Request) -> Reply:
    """``/api/<cloud route>`` (the page): sent on to the cloud with the held login; its answer passed back."""
    target = page.cloud_target(request.method, request.path[len(page.API_PREFIX) :], request.query)
    if target is None:
        return error_reply(404, "not_found", "no such route")
    return _forward(state, request, target)


def cli_to_cloud(state: DesktopState, request: Request) -> Reply:
    """``/control/cloud/<cloud route>`` (the commands, with the control token): the same as the page's."""
    target = cli_target(request.method, request.path, request.query)
    if target is None:
        return error_reply(404, "not_found", "no such route")
    return _forward(state, request, target)


# Every other /api/... path: the cloud routes in ``page.CLOUD_ROUTES``, checked again by ``to_cloud``.
CLOUD_ROUTE: Final = Route(Access.SESSION, to_cloud)
# Every /control/cloud/... path naming one of those routes, checked again by ``cli_to_cloud``.
CLI_CLOUD_ROUTE: Final = Route(Access.CONTROL, cli_to_cloud)
