"""The desktop service's linked-folder routes (docs/sync.md): only the control token links a folder; the
page's session lists, unlinks, confirms and re-points a linked folder at another of one's own KBs (with its
CSRF token) but cannot link one; the hook token gets none of them; a refused link says why; and sync
records that cannot be read are said to be so, not shown as no links. A pass stuck on the cloud holds up
no hook, no status, no listing of the links and no unlink."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memmy_kb_client.desktop.server import DesktopService
from memmy_kb_client.sync.run import store_dir
from tests.support.desktop_page import RecordingCloud, call, signed_in
from tests.support.desktop_service import serving, start

LINK_ROUTES = [
    ("GET", "/control/links"),
    ("POST", "/control/links"),
    ("POST", "/control/links/unlink"),
    ("POST", "/control/links/confirm"),
    ("POST", "/control/links/relink"),
    ("GET", "/api/links"),
    ("POST", "/api/links/unlink"),
    ("POST", "/api/links/confirm"),
    ("POST", "/api/links/relink"),
]


@pytest.fixture
def cloud() -> Iterator[RecordingCloud]:
    yield from serving(RecordingCloud())


@pytest.fixture
def service(
    tmp_path: Path, cloud: RecordingCloud, monkeypatch: pytest.MonkeyPatch
) -> Iterator[DesktopService]:
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    running = start(tmp_path / "desktop", cloud.url)
    yield running
    running.stop()


def as_control(
    service: DesktopService, method: str, path: str, body: Any = None
) -> tuple[int, dict[str, Any]]:
    status, _, data = call(
        service, method, path, {"Authorization": f"Bearer {service.state.control_token}"}, body
    )
    return status, json.loads(data)


@pytest.mark.parametrize(("method", "path"), LINK_ROUTES)
def test_the_hook_token_gets_no_link_route(
    service: DesktopService, tmp_path: Path, method: str, path: str
) -> None:
    hook_token = (tmp_path / "desktop" / "hook-token").read_text()
    status, _, data = call(
        service, method, path, {"Authorization": f"Bearer {hook_token}"}, {"dir": str(tmp_path), "kb": "kb_1"}
    )
    assert (status, json.loads(data)["error"]["code"]) == (403, "hook_token_not_allowed")
    assert as_control(service, "GET", "/control/links") == (200, {"links": []})


def test_the_page_lists_but_cannot_link_a_folder(service: DesktopService, tmp_path: Path) -> None:
    page = signed_in(service)
    status, _, data = call(service, "GET", "/api/links", page)
    assert (status, json.loads(data)) == (200, {"links": []})
    status, _, _ = call(service, "POST", "/api/links", page, {"dir": str(tmp_path), "kb": "kb_1"})
    assert status == 405
    without_csrf = {k: v for k, v in page.items() if k != "X-CSRF-Token"}
    status, _, data = call(service, "POST", "/api/links/unlink", without_csrf, {"dir": str(tmp_path)})
    assert (status, json.loads(data)["error"]["code"]) == (403, "csrf_token_required")
    status, _, data = call(service, "POST", "/api/links/unlink", page, {"dir": str(tmp_path)})
    assert (status, json.loads(data)["error"]["code"]) == (404, "link_not_found")


def test_a_link_to_something_that_is_no_folder_is_refused_with_its_reason(
    service: DesktopService, tmp_path: Path
) -> None:
    status, answer = as_control(
        service, "POST", "/control/links", {"dir": str(tmp_path / "missing"), "kb": "kb_1"}
    )
    assert (status, answer["error"]["code"]) == (409, "link_refused")
    assert "is not a folder" in answer["error"]["message"]
    status, answer = as_control(service, "POST", "/control/links", {"kb": "kb_1"})
    assert (status, answer["error"]["code"]) == (422, "validation_error")
    status, answer = as_control(service, "GET", "/control/status")
    assert (status, answer["links"]) == (200, [])


def test_the_links_are_kept_beside_the_secrets_not_in_the_hooks_directory(
    service: DesktopService, tmp_path: Path
) -> None:
    # An agent that may write the hooks' directory must find no link store there to add a folder to
    assert as_control(service, "GET", "/control/links") == (200, {"links": []})  # waits for the links' start
    assert (tmp_path / "desktop-private" / "sync" / "sync.sqlite3").is_file()
    assert not (tmp_path / "desktop" / "sync").exists()
    assert oct((tmp_path / "desktop-private" / "sync").stat().st_mode & 0o777) == "0o700"
    assert store_dir({"MEMMY_KB_HOME": str(tmp_path)}) == tmp_path / "desktop-private" / "sync"


def test_damaged_sync_records_show_as_unreadable_not_as_no_links(
    tmp_path: Path, cloud: RecordingCloud, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a desktop whose sync records were damaged while it was stopped
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    records = tmp_path / "desktop-private" / "sync" / "sync.sqlite3"
    records.parent.mkdir(parents=True, mode=0o700)
    records.write_bytes(b"not a database at all" * 300)
    service = start(tmp_path / "desktop", cloud.url)
    try:
        # When its links and its status are asked for
        status, links = as_control(service, "GET", "/control/links")
        _, described = as_control(service, "GET", "/control/status")
        _, answer = as_control(service, "POST", "/control/links", {"dir": str(tmp_path), "kb": "kb_1"})
    finally:
        service.stop()

    # Then each says the links could not be read, why and the way out; a new link is refused
    assert status == 200
    [shown] = links["links"]
    assert (shown["state"], described["links"]) == ("unreadable", links["links"])
    assert shown["error"].startswith(f"the sync records ({records}) are damaged")
    assert f"mv {records} {records}.broken" in shown["error"]
    assert answer["error"]["code"] == "link_refused"


class KbCloud(RecordingCloud):
    """A cloud whose KBs are ``kb_old`` and ``kb_new`` (the caller's own) and ``kb_shared`` (a reader's);
    any other is 404 ``kb_not_found``."""

    def answer(self, method: str, path: str) -> tuple[int, Any]:
        kb_id = path.split("?")[0].removeprefix("/knowledge-bases/")
        if method == "GET" and path.startswith("/knowledge-bases/") and "/" not in kb_id:
            if kb_id in ("kb_old", "kb_new", "kb_shared"):
                return 200, {"id": kb_id, "role": "reader" if kb_id == "kb_shared" else "owner"}
            return 404, {"error": {"code": "kb_not_found", "message": "Knowledge base not found."}}
        return 200, {"files": [], "folders": [], "items": []}


@pytest.fixture
def kb_service(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[DesktopService]:
    """The service, logged in, in front of ``KbCloud``."""
    from tests.support.desktop_service import CLOUD_TOKEN

    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    for cloud in serving(KbCloud()):
        running = start(tmp_path / "desktop", cloud.url)
        running.state.set_login(CLOUD_TOKEN)
        yield running
        running.stop()


def test_a_linked_folder_is_pointed_at_another_of_ones_own_kbs_by_control_or_page(
    kb_service: DesktopService, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # Given a folder (outside the service's home, which is never synced) linked to kb_old
    folder = tmp_path_factory.mktemp("docs")
    status, answer = as_control(kb_service, "POST", "/control/links", {"dir": str(folder), "kb": "kb_old"})
    assert status == 200, answer
    page = signed_in(kb_service)

    def relink(kb: str, headers: dict[str, str] = page, where: str = str(folder)) -> tuple[int, Any]:
        status, _, data = call(kb_service, "POST", "/api/links/relink", headers, {"dir": where, "kb": kb})
        return status, json.loads(data)

    def linked_to() -> list[str]:
        return [link["kb_id"] for link in as_control(kb_service, "GET", "/control/links")[1]["links"]]

    # When the page points it at a KB shared with the caller, or one that is gone, then it is refused and
    # the link stays as it was
    status, answer = relink("kb_shared")
    assert (status, answer["error"]["code"]) == (409, "link_refused")
    assert relink("kb_deleted")[0] == 404
    assert linked_to() == ["kb_old"]
    # Without the page's CSRF token, or for a folder that is not linked, nothing changes either
    without_csrf = {k: v for k, v in page.items() if k != "X-CSRF-Token"}
    assert relink("kb_new", without_csrf)[0] == 403
    assert relink("kb_new", where=str(folder.parent))[1]["error"]["code"] == "link_not_found"
    assert linked_to() == ["kb_old"]

    # When it is pointed at another of the caller's own, then the same folder syncs into it
    status, answer = relink("kb_new")
    assert (status, answer["dir"], answer["kb_id"]) == (200, str(folder), "kb_new")
    assert linked_to() == ["kb_new"]
    status, _ = as_control(kb_service, "POST", "/control/links/relink", {"dir": str(folder), "kb": "kb_old"})
    assert (status, linked_to()) == (200, ["kb_old"])
    # And the folder reached by another path (a link to it) is the same linked folder
    alias = folder.parent / f"{folder.name}-alias"
    alias.symlink_to(folder)
    status, answer = relink("kb_new", where=str(alias))
    assert (status, answer["dir"], linked_to()) == (200, str(folder), ["kb_new"])


class StuckCloud(KbCloud):
    """``KbCloud`` whose listing of a KB's files hangs until ``release`` (a cloud that stopped answering
    in the middle of a pass), and whose recall answers at once."""

    def __init__(self) -> None:
        super().__init__()
        self.listing, self.release = threading.Event(), threading.Event()

    def answer(self, method: str, path: str) -> tuple[int, Any]:
        if method == "POST" and path.startswith("/recall"):
            return 200, {"items": [], "context": "", "scope_size": 1, "discarded": False}
        if "/files" in path:
            self.listing.set()
            self.release.wait(30)
        return super().answer(method, path)


def test_a_pass_stuck_on_the_cloud_holds_up_no_hook_status_page_or_unlink(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.support.desktop_service import CLOUD_TOKEN, Client

    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    for cloud in serving(StuckCloud()):
        service = start(tmp_path / "desktop", cloud.url)
        try:
            # Given a linked folder whose pass hangs reading the KB
            service.state.set_login(CLOUD_TOKEN)
            folder = tmp_path_factory.mktemp("docs")
            (folder / "a.md").write_text("a", encoding="utf-8")
            status, answer = as_control(service, "POST", "/control/links", {"dir": str(folder), "kb": "kb_old"})
            assert status == 200, answer
            assert cloud.listing.wait(10), "the pass never read the KB"

            # When the hook, the status, the page's links and an unlink are asked for meanwhile
            started = time.monotonic()
            assert Client(service).recall()["cloud"] == "ok"
            assert as_control(service, "GET", "/control/status")[0] == 200
            assert as_control(service, "GET", "/control/links")[1]["links"][0]["state"] == "syncing"
            unlinked = as_control(service, "POST", "/control/links/unlink", {"dir": str(folder)})

            # Then each answers at once, the pass still stuck
            assert time.monotonic() - started < 5
            assert unlinked[0] == 200
            assert as_control(service, "GET", "/control/links")[1]["links"] == []
            assert not cloud.release.is_set()
        finally:
            cloud.release.set()
            service.stop()
