"""The desktop service's linked folders (``memmy_kb_client.sync.links``): started and stopped with the
service, their passes sent to the cloud with the service's login, and their routes: ``/control/links``
for ``memmy-kb desktop link|relink|unlink|links|confirm`` (control token), ``/api/links`` for the page
(session, CSRF on changes), which can re-point a linked folder but never link one."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from memmy_kb_client.desktop.routes import Reply, Request, Route, error_reply
from memmy_kb_client.desktop.state import Access, DesktopState

if TYPE_CHECKING:
    from memmy_kb_client.home.credentials import CloudLogin
    from memmy_kb_client.sdk import MemmyClient
    from memmy_kb_client.sync.link_state import ShownLink, UnreadableLink
    from memmy_kb_client.sync.links import Links

# httpx, the SDK and the sync are imported when the links start (after the service listens), not with the
# routes: the service's start stays as cheap as before for the hooks.
MAX_PATH_CHARS: Final = 4096
# Each service's links while they start (a thread each), by the state's id.
_STARTING: dict[int, tuple[threading.Thread, threading.Event]] = {}
_STARTING_LOCK = threading.Lock()


class _ServiceLogin:
    """The service's cloud login on each request, refreshed when due; a 401 marks it rejected; not logged
    in, a request raises ``SyncAborted``."""

    def __init__(self, state: DesktopState) -> None:
        self.state = state
        self.sent: dict[str, CloudLogin] = {}

    def bearer(self) -> str | None:
        from memmy_kb_client.sync.execute import SyncAborted

        login, why = self.state.fresh_login()
        if login is None:
            login_command = self.state.commands()["login"]
            raise SyncAborted(f"the desktop service is not logged in ({why}): run `{login_command}`")
        self.sent = {login.token: login}
        return login.token

    def refused(self, token: str) -> None:
        login = self.sent.get(token)
        if login is not None:
            self.state.mark_rejected(login)


class UnreadableLinks:
    """The service's links when its sync records could not be read (damaged, locked): each place that
    shows the links says so and why, instead of showing none; a link, unlink or confirm is refused."""

    def __init__(self, why: str) -> None:
        self.why = why
        self.store = self

    def shown(self) -> list[UnreadableLink]:
        return [{"dir": None, "kb_id": None, "state": "unreadable", "error": self.why}]

    def link(self, directory: str, kb_id: str) -> ShownLink:
        from memmy_kb_client.sync.links import LinkError

        raise LinkError(f"the linked folders could not be read: {self.why}")

    def unlink(self, directory: str) -> bool:
        return False

    def linked_as(self, directory: str) -> str:
        return directory

    def confirm(self, directory: str) -> bool:
        return False

    def stop(self) -> None:
        return None

    def close(self) -> None:
        return None


def cloud_client(state: DesktopState) -> MemmyClient:
    """The SDK on the client's one HTTP client, with the service's cloud login on each request."""
    from memmy_kb_client.http_client import HttpClient
    from memmy_kb_client.sdk import ClientConfig, MemmyClient

    base = state.cloud.base_url
    return MemmyClient(
        ClientConfig(base, None), http=HttpClient(base, timeout=30), login=_ServiceLogin(state)
    )


def start_links(state: DesktopState) -> None:
    """Start the linked folders of the service's state directory on a thread of their own: the service
    answers at once (the sync's imports cost about 130 ms), and ``state.links`` is set once they run.
    Watched when ``watchfiles`` is installed (the ``desktop`` extra); without it each link is synced at
    start and every ten minutes."""
    stopping = threading.Event()

    def run() -> None:
        import importlib.util
        from pathlib import Path

        from memmy_kb_client.home import paths
        from memmy_kb_client.sync.links import Links
        from memmy_kb_client.sync.store import STORE_FILE, StoreUnusable, SyncStore

        # Beside the secrets, not in the hooks' directory: an agent that may write there must not add a link.
        directory = Path(paths.private_dir(state.state_dir)) / "sync"
        paths.ensure_private_dir(str(directory.parent))
        watch = importlib.util.find_spec("watchfiles") is not None
        with _STARTING_LOCK:
            if not stopping.is_set():
                try:
                    state.links = Links(
                        SyncStore(directory / STORE_FILE), directory, lambda: cloud_client(state), watch=watch
                    ).start()
                except StoreUnusable as err:  # told, not shown as no links
                    state.links = UnreadableLinks(str(err))

    thread = threading.Thread(target=run, name="memmy-kb-links-start", daemon=True)
    _STARTING[id(state)] = (thread, stopping)
    thread.start()


def stop_links(state: DesktopState) -> None:
    """Stop the linked folders' threads (after their start, if it is still under way)."""
    starting = _STARTING.pop(id(state), None)
    if starting is not None:
        with _STARTING_LOCK:
            starting[1].set()
        starting[0].join(30)
    links: Links | UnreadableLinks | None = state.links
    if links is not None:
        state.links = None
        links.stop()
        links.store.close()


def _running(state: DesktopState) -> Links | UnreadableLinks | None:
    """The service's links, once started (a request that comes while they start waits for them)."""
    starting = _STARTING.get(id(state))
    if state.links is None and starting is not None:
        starting[0].join(10)
    links: Links | UnreadableLinks | None = state.links
    return links


def _dir(request: Request) -> str | None:
    body = request.json_object()
    value = body.get("dir") if body else None
    return (
        value if isinstance(value, str) and 0 < len(value) <= MAX_PATH_CHARS and "\0" not in value else None
    )


def _links(state: DesktopState, request: Request) -> Reply:
    links = _running(state)
    return Reply(200, {"links": links.shown() if links is not None else []})


def _dir_and_kb(request: Request) -> tuple[str, str] | None:
    body = request.json_object() or {}
    directory, kb_id = _dir(request), body.get("kb")
    if directory is None or not isinstance(kb_id, str) or not 0 < len(kb_id) <= 256:
        return None
    return directory, kb_id


def _asked_of_links(
    state: DesktopState, request: Request
) -> tuple[tuple[str, str], Links | UnreadableLinks] | Reply:
    """The folder and KB a link or relink asks for, and the running links; else the refusal."""
    asked = _dir_and_kb(request)
    if asked is None:
        return error_reply(422, "validation_error", 'expected {"dir": "/path/to/folder", "kb": "KB_ID"}')
    links = _running(state)
    if links is None:
        return error_reply(503, "links_unavailable", "the service is stopping")
    return asked, links


def _link(state: DesktopState, request: Request) -> Reply:
    found = _asked_of_links(state, request)
    if isinstance(found, Reply):
        return found
    asked, links = found
    return _linking(lambda: links.link(*asked))


def _relink(state: DesktopState, request: Request) -> Reply:
    """A linked folder pointed at another of one's own KBs (its own gone, or the wrong one): the same
    folder only, so the page, which cannot link a folder, can re-point one the control token linked."""
    found = _asked_of_links(state, request)
    if isinstance(found, Reply):
        return found
    asked, links = found
    root = links.linked_as(asked[0])  # the link's own path, however the folder is reached
    current = next((link for link in links.shown() if link["dir"] == root), None)
    if current is None:
        return error_reply(404, "link_not_found", "no linked folder at that path")
    if current["kb_id"] == asked[1]:
        return Reply(200, current)

    def relink() -> ShownLink:
        from memmy_kb_client.sync.links import LinkError

        client = cloud_client(state)
        try:  # the new KB checked before the folder is unlinked: a refusal leaves the link as it was
            if client.get_knowledge_base(asked[1]).get("role") != "owner":
                raise LinkError(
                    "a knowledge base shared with you cannot be a sync target: link one of your own"
                )
        finally:
            client.close()
        links.unlink(root)
        return links.link(root, asked[1])

    return _linking(relink)


def _linking(act: Callable[[], ShownLink]) -> Reply:
    """``act`` (a link) answered: the link, or why it was refused."""
    import httpx

    from memmy_kb_client.sdk import MemmyApiError
    from memmy_kb_client.sync.execute import SyncAborted
    from memmy_kb_client.sync.links import LinkError

    try:
        return Reply(200, act())
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
        links = _running(state)
        done = links is not None and (
            links.unlink(directory) if action == "unlink" else links.confirm(directory)
        )
        if not done:
            return error_reply(404, "link_not_found", "no linked folder at that path")
        return _links(state, request)

    return Route(Access.CONTROL, handle)


def _for_page(route: Route) -> Route:
    return Route(Access.SESSION, route.handler)


_UNLINK, _CONFIRM = _about_one("unlink"), _about_one("confirm")
_RELINK = Route(Access.CONTROL, _relink)
LINK_ROUTES: Final[dict[tuple[str, str], Route]] = {
    ("GET", "/control/links"): Route(Access.CONTROL, _links),
    ("POST", "/control/links"): Route(Access.CONTROL, _link),
    ("POST", "/control/links/relink"): _RELINK,
    ("POST", "/control/links/unlink"): _UNLINK,
    ("POST", "/control/links/confirm"): _CONFIRM,
    ("GET", "/api/links"): Route(Access.SESSION, _links),
    ("POST", "/api/links/unlink"): _for_page(_UNLINK),
    ("POST", "/api/links/confirm"): _for_page(_CONFIRM),
    ("POST", "/api/links/relink"): _for_page(_RELINK),
}
