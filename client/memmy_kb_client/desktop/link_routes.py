"""The desktop service's linked folders (``memmy_kb_client.sync.links``): started and stopped with the
service, their passes sent to the cloud with the service's login, and their routes: ``/control/links``
for ``memmy-kb desktop link|unlink|links|confirm`` (control token), ``/api/links`` for the page (session,
CSRF on changes)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from memmy_kb_client.desktop.routes import Reply, Request, Route, error_reply
from memmy_kb_client.desktop.state import Access, DesktopState

if TYPE_CHECKING:
    from memmy_kb_client.sdk import MemmyClient
    from memmy_kb_client.sync.links import Links

# httpx, the SDK and the sync are imported when the links start (after the service listens), not with the
# routes: the service's start stays as cheap as before for the hooks.
MAX_PATH_CHARS: Final = 4096


def cloud_client(state: DesktopState) -> MemmyClient:
    """The SDK with the service's cloud login on each request (refreshed when due; a 401 marks it
    rejected); not logged in, a request raises ``SyncAborted``."""
    from collections.abc import Generator

    import httpx

    from memmy_kb_client.sdk import ClientConfig, MemmyClient
    from memmy_kb_client.sync.execute import SyncAborted

    class ServiceLogin(httpx.Auth):
        def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
            login, why = state.fresh_login()
            if login is None:
                raise SyncAborted(
                    f"the desktop service is not logged in ({why}): run `memmy-kb desktop login`"
                )
            request.headers["Authorization"] = f"Bearer {login.token}"
            response = yield request
            if response.status_code == 401:
                state.mark_rejected(login)

    base = state.cloud.base_url
    return MemmyClient(
        ClientConfig(base, None), http=httpx.Client(base_url=base, auth=ServiceLogin(), timeout=30)
    )


def start_links(state: DesktopState, **options: Any) -> Links:
    """The linked folders of the service's state directory, watched when ``watchfiles`` is installed (the
    ``desktop`` extra); without it each is synced at start and every ten minutes."""
    import importlib.util
    from pathlib import Path

    from memmy_kb_client.sync.links import Links
    from memmy_kb_client.sync.store import STORE_FILE, SyncStore

    directory = Path(state.state_dir) / "sync"
    options.setdefault("watch", importlib.util.find_spec("watchfiles") is not None)
    return Links(SyncStore(directory / STORE_FILE), directory, lambda: cloud_client(state), **options).start()


def stop_links(state: DesktopState) -> None:
    links: Links | None = state.links
    if links is not None:
        state.links = None
        links.stop()
        links.store.close()


def _dir(request: Request) -> str | None:
    body = request.json_object()
    value = body.get("dir") if body else None
    return (
        value if isinstance(value, str) and 0 < len(value) <= MAX_PATH_CHARS and "\0" not in value else None
    )


def _links(state: DesktopState, request: Request) -> Reply:
    return Reply(200, {"links": state.links.shown() if state.links is not None else []})


def _link(state: DesktopState, request: Request) -> Reply:
    body = request.json_object() or {}
    directory, kb_id = _dir(request), body.get("kb")
    if directory is None or not isinstance(kb_id, str) or not 0 < len(kb_id) <= 256:
        return error_reply(422, "validation_error", 'expected {"dir": "/path/to/folder", "kb": "KB_ID"}')
    if state.links is None:
        return error_reply(503, "links_unavailable", "the service is stopping")
    import httpx

    from memmy_kb_client.sdk import MemmyApiError
    from memmy_kb_client.sync.execute import SyncAborted
    from memmy_kb_client.sync.links import LinkError

    try:
        return Reply(200, state.links.link(directory, kb_id))
    except LinkError as err:
        return error_reply(409, "link_refused", str(err))
    except SyncAborted as err:
        return error_reply(503, "desktop_logged_out", str(err))
    except MemmyApiError as err:
        return error_reply(err.status, err.code, err.message)
    except (httpx.HTTPError, OSError) as err:
        return error_reply(502, "cloud_unreachable", f"the cloud did not answer ({type(err).__name__})")


def _about_one(action: str) -> Route:
    def handle(state: DesktopState, request: Request) -> Reply:
        directory = _dir(request)
        if directory is None:
            return error_reply(422, "validation_error", 'expected {"dir": "/path/to/folder"}')
        done = state.links is not None and (
            state.links.unlink(directory) if action == "unlink" else state.links.confirm(directory)
        )
        if not done:
            return error_reply(404, "link_not_found", "no linked folder at that path")
        return _links(state, request)

    return Route(Access.CONTROL, handle)


def _for_page(route: Route) -> Route:
    return Route(Access.SESSION, route.handler)


_UNLINK, _CONFIRM = _about_one("unlink"), _about_one("confirm")
LINK_ROUTES: Final[dict[tuple[str, str], Route]] = {
    ("GET", "/control/links"): Route(Access.CONTROL, _links),
    ("POST", "/control/links"): Route(Access.CONTROL, _link),
    ("POST", "/control/links/unlink"): _UNLINK,
    ("POST", "/control/links/confirm"): _CONFIRM,
    ("GET", "/api/links"): Route(Access.SESSION, _links),
    ("POST", "/api/links/unlink"): _for_page(_UNLINK),
    ("POST", "/api/links/confirm"): _for_page(_CONFIRM),
}
