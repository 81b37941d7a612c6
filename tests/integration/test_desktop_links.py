"""The desktop service's linked-folder routes (docs/sync.md): only the control token links a folder; the
page's session lists, unlinks and confirms (with its CSRF token) but cannot link one; the hook token gets
none of them; a refused link says why; and sync records that cannot be read are said to be so, not shown
as no links."""

from __future__ import annotations

import json
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
    ("GET", "/api/links"),
    ("POST", "/api/links/unlink"),
    ("POST", "/api/links/confirm"),
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
