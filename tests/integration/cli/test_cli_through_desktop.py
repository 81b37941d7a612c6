"""The ``memmy-kb`` commands through the desktop service (docs/desktop.md, "The commands through the service"):
a real service in-process, signed in, in front of a fake cloud that records what reaches it, and the CLI
run in-process with no other login. Which way each command takes (the service, a token given for the run,
the saved login), what reaches the cloud (the service's login, each id escaped once, the upload's bytes
straight to storage with no credential), and what the service's new routes refuse."""

from __future__ import annotations

import http.client
import io
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest

from memmy_kb_client.cli import main as cli
from memmy_kb_client.desktop.server import DesktopService
from memmy_kb_client.home import paths
from memmy_kb_client.sdk import ClientConfig, MemmyClient
from tests.support.desktop_page import RecordingCloud
from tests.support.desktop_service import CLOUD_TOKEN, jwt, serving, start

KB = {"id": "kb_1", "name": "产品资料", "role": "owner", "recall": True}
SAVED_TOKEN = jwt(sub="bob", exp=2_000_000_000)
RUN_TOKEN = jwt(sub="carol", exp=2_000_000_000)


class Cloud(RecordingCloud):
    """The cloud's routes the commands below use, answered plausibly, and storage at ``/storage`` (the
    presigned POST's URL); every request recorded with its raw path and headers. ``kbs``: the KB listing."""

    kbs: tuple[dict[str, Any], ...] = (KB,)

    def answer(self, method: str, path: str) -> tuple[int, Any]:
        if path == "/storage":
            return 204, None
        if self.status != 200:
            return self.status, {"message": "Unauthorized"}
        route = path.split("?", 1)[0]
        if route == "/knowledge-bases":
            return (200, {"items": list(self.kbs)}) if method == "GET" else (201, KB)
        if route == "/recall":
            item = {
                "title": "报销",
                "content": "住宿发票",
                "knowledge_base": {"id": "kb_1", "name": "产品资料"},
            }
            return 200, {"items": [item], "context": "…", "scope_size": 1, "discarded": False}
        if route == "/me":
            return 200, {"user_id": "alice", "display_name": "Alice"}
        if route.endswith("/uploads"):
            return 201, {"upload_id": "up_1", "url": f"{self.url}/storage", "fields": {"key": "uploads/k"}}
        if route.endswith("/files"):
            return 200, {"folders": [], "files": []}
        if method == "GET" and "/files/" in route:  # a file read by its id: the one asked for
            return 200, {"id": unquote(route.rsplit("/", 1)[1]), "name": "x"}
        return 200, {"id": "x", "name": "x", "cleanup_id": "cl_1"}


@pytest.fixture
def cloud() -> Iterator[Cloud]:
    yield from serving(Cloud())


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home with no login of the CLI's own: no config.json, no token or endpoint in the environment."""
    for name in ("MEMMY_KB_TOKEN", "MEMMY_KB_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(paths.HOME_ENV, str(tmp_path / "home"))
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    return tmp_path / "home"


@pytest.fixture
def desktop(home: Path, cloud: Cloud) -> Iterator[DesktopService]:
    running = start(home / "desktop", cloud.url)
    running.state.set_login(CLOUD_TOKEN)
    yield running
    running.stop()


def run(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *argv: str
) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def bearers(cloud: Cloud) -> set[str]:
    return {r["headers"].get("Authorization", "") for r in cloud.requests if r["path"] != "/storage"}


def test_with_the_desktop_signed_in_and_no_other_login_the_commands_go_through_it(
    desktop: DesktopService, cloud: Cloud, home: Path, tmp_path: Path, capsys, monkeypatch
):
    notes = tmp_path / "报销.md"
    notes.write_text("# 报销\n住宿发票\n", encoding="utf-8")
    assert not (home / "config.json").exists()

    assert run(capsys, monkeypatch, "kb", "create", "产品资料")[:2] == (0, "kb_1  recall on   产品资料\n")
    assert "kb_1  recall on  产品资料" in run(capsys, monkeypatch, "kb", "ls")[1]
    code, _, err = run(capsys, monkeypatch, "files", "upload", "kb_1", str(notes))
    assert code == 0, err
    code, out, _ = run(capsys, monkeypatch, "recall", "报销需要哪些发票")
    assert code == 0
    assert "《报销》" in out

    assert bearers(cloud) == {f"Bearer {CLOUD_TOKEN}"}  # the service's login, on every cloud call
    paths_asked = [(r["method"], r["path"]) for r in cloud.requests]
    assert paths_asked == [
        ("POST", "/knowledge-bases"),
        ("GET", "/knowledge-bases"),
        ("GET", "/knowledge-bases"),  # the KB the upload names, by id or name
        ("GET", "/knowledge-bases/kb_1/files"),  # the names already in the folder
        ("POST", "/knowledge-bases/kb_1/uploads"),
        ("POST", "/storage"),
        ("POST", "/recall"),
    ]
    create, storage = cloud.requests[0], cloud.requests[5]
    assert create["headers"].get("Idempotency-Key")  # passed on, so a retried create is one KB
    # The bytes went straight to storage with the presigned POST's fields, and no credential.
    assert "Authorization" not in storage["headers"]
    assert "住宿发票".encode() in storage["body"]
    assert all("住宿发票".encode() not in r["body"] for r in cloud.requests if r["path"] != "/storage")


def _login_line(out: str) -> str:
    """What ``memmy-kb me`` says on its ``Login:`` line."""
    return next(line.removeprefix("Login:").strip() for line in out.splitlines() if line.startswith("Login:"))


def test_me_says_which_login_and_which_way(desktop: DesktopService, cloud: Cloud, capsys, monkeypatch):
    code, out, _ = run(capsys, monkeypatch, "me")
    assert code == 0
    assert _login_line(out) == f"through the desktop service at {desktop.url}, signed in as alice (cloud: {cloud.url})"
    monkeypatch.setenv("MEMMY_KB_TOKEN", RUN_TOKEN)
    monkeypatch.setenv("MEMMY_KB_ENDPOINT", cloud.url)
    out = run(capsys, monkeypatch, "me", "--json")[1]
    assert json.loads(out)["login"] == f"$MEMMY_KB_TOKEN, as carol, straight to {cloud.url}"


@pytest.mark.parametrize(
    "ident",
    [".", "..", "a/b", "kb|1 产品", "50%", "x?y#z", "~tilde", "%2E"],
)
def test_ids_reach_the_cloud_as_they_do_without_the_service(
    desktop: DesktopService, cloud: Cloud, capsys, monkeypatch, ident: str
):
    cloud.kbs = (KB, {"id": ident, "name": "x", "role": "owner"})
    with MemmyClient(ClientConfig(cloud.url, RUN_TOKEN)) as direct:
        direct.move_file(ident, ident, None)
    assert run(capsys, monkeypatch, "files", "mv", ident, ident)[0] == 0
    direct_path, through = (r["path"] for r in cloud.requests if r["method"] == "PATCH")
    assert unquote(through) == unquote(direct_path) == f"/knowledge-bases/{ident}/files/{ident}"


def call(desktop: DesktopService, method: str, path: str, headers: dict[str, str]) -> tuple[int, Any]:
    connection = http.client.HTTPConnection("127.0.0.1", desktop.port, timeout=10)
    connection.request(method, path, headers=headers)
    response = connection.getresponse()
    answer = json.loads(response.read() or b"{}")
    connection.close()
    return response.status, answer


@pytest.mark.parametrize(
    ("who", "status", "code"),
    [
        ("hook", 403, "hook_token_not_allowed"),
        ("none", 401, "unauthorized"),
        ("session", 401, "unauthorized"),
    ],
)
def test_only_the_control_token_reaches_the_cloud_through_the_commands_route(
    desktop: DesktopService, cloud: Cloud, who: str, status: int, code: str
):
    headers = {
        "hook": {"Authorization": f"Bearer {desktop.state.hook_token}"},
        "none": {},
        "session": {"Cookie": f"{desktop.state.cookie_name}=anything"},
    }[who]
    answered, answer = call(desktop, "GET", "/control/cloud/knowledge-bases", headers)
    assert (answered, answer["error"]["code"]) == (status, code)
    assert cloud.requests == []


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/control/cloud/me/blocked"),  # a cloud route the page does not use
        ("PATCH", "/control/cloud/me"),
        ("GET", "/control/cloud/login-configuration"),
        ("GET", "/control/cloud/knowledge-bases/a/b/c/d"),
        ("GET", "/control/cloud/knowledge-bases/%FF"),  # not UTF-8
        ("GET", "/control/cloudknowledge-bases"),
    ],
)
def test_the_commands_route_reaches_only_the_pages_cloud_routes(
    desktop: DesktopService, cloud: Cloud, method: str, path: str
):
    status, _ = call(desktop, method, path, {"Authorization": f"Bearer {desktop.state.control_token}"})
    assert status in (404, 405)
    assert cloud.requests == []


def test_signed_out_the_commands_use_the_saved_login(
    desktop: DesktopService, cloud: Cloud, home: Path, capsys, monkeypatch
):
    ClientConfig(cloud.url, SAVED_TOKEN).save()
    desktop.state.logout()
    assert run(capsys, monkeypatch, "kb", "ls")[0] == 0
    assert bearers(cloud) == {f"Bearer {SAVED_TOKEN}"}
    assert _login_line(run(capsys, monkeypatch, "me")[1]).startswith("the saved login in")


def test_a_token_given_for_the_run_goes_straight_to_the_cloud(
    desktop: DesktopService, cloud: Cloud, capsys, monkeypatch
):
    assert run(capsys, monkeypatch, "kb", "ls", "--token", RUN_TOKEN, "--endpoint", cloud.url)[0] == 0
    monkeypatch.setenv("MEMMY_KB_TOKEN", RUN_TOKEN)
    monkeypatch.setenv("MEMMY_KB_ENDPOINT", cloud.url)
    assert run(capsys, monkeypatch, "recall", "报销")[0] == 0
    assert bearers(cloud) == {f"Bearer {RUN_TOKEN}"}


def test_a_cloud_other_than_the_desktops_is_asked_with_the_saved_login(
    desktop: DesktopService, cloud: Cloud, home: Path, capsys, monkeypatch
):
    for other in serving(Cloud()):
        monkeypatch.setenv("MEMMY_KB_ENDPOINT", other.url)
        code, _, err = run(capsys, monkeypatch, "kb", "ls")
        assert code == 1
        assert err.startswith(
            f"error: not signed in to {other.url}: the desktop service is signed in to {cloud.url}, not "
            f"{other.url}, and there is no saved login\nleave out --endpoint and $MEMMY_KB_ENDPOINT"
        )
        ClientConfig(other.url, SAVED_TOKEN).save()
        assert run(capsys, monkeypatch, "kb", "ls")[0] == 0
        assert bearers(other) == {f"Bearer {SAVED_TOKEN}"}
    assert cloud.requests == []


def test_the_cloud_refusing_the_desktops_login_says_to_sign_in_again(
    desktop: DesktopService, cloud: Cloud, capsys, monkeypatch
):
    cloud.status = 401
    code, out, err = run(capsys, monkeypatch, "kb", "ls")
    assert (code, out) == (1, "")
    assert err.splitlines()[0] == (
        "error: the cloud refused the desktop's login: log in again "
        f"(503 cloud_login_rejected; desktop service at {desktop.url})"
    )
    assert err.splitlines()[1].startswith("sign in again with `")
    assert err.splitlines()[1].endswith(" desktop login`")
    assert desktop.state.status()["login"]["state"] == "rejected"
    # and the next command no longer takes the refused login for one
    assert run(capsys, monkeypatch, "kb", "ls")[2].startswith(
        "error: not signed in: the desktop service is signed out, and there is no saved login"
    )
