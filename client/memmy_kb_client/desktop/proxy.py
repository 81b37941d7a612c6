"""The cloud proxy of the desktop service: the page's ``/api/<cloud route>`` sent on with the held login.

Only the cloud routes the page uses (``page.CLOUD_ROUTES``) go through; the cloud's answer is passed
back as is, except that a 401 marks the login rejected and becomes a 503 the page can explain.
"""

from __future__ import annotations

from typing import Final

from memmy_kb_client.desktop import page
from memmy_kb_client.desktop.routes import Reply, Request, Route, error_reply
from memmy_kb_client.desktop.state import Access, DesktopState


def to_cloud(state: DesktopState, request: Request) -> Reply:
    """``/api/<cloud route>``: sent on to the cloud with the held login; its answer passed back."""
    target = page.cloud_target(request.method, request.path[len(page.API_PREFIX) :], request.query)
    if target is None:
        return error_reply(404, "not_found", "no such route")
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


# Every other /api/... path: the cloud routes in ``page.CLOUD_ROUTES``, checked again by ``to_cloud``.
CLOUD_ROUTE: Final = Route(Access.SESSION, to_cloud)
