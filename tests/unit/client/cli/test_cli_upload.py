"""``memmy-kb files upload``: with ``--wait`` each file's state is told once per change, not once per look
(in flight on stderr, available or failed on stdout); ``--json`` prints one JSON list, each file as the
listing shows it, and nothing else on stdout."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from memmy_kb_client.cli import main as cli
from memmy_kb_client.cli import transfer_commands
from memmy_kb_client.sdk import ClientConfig, MemmyClient
from tests.support.mock_http import mock_http

KB = "kb_1"


def entry(upload_id: str, name: str, status: str, **more: Any) -> dict[str, Any]:
    file_id = upload_id if status == "uploading" else f"fi_{upload_id}"
    return {"id": file_id, "name": name, "status": status, "upload_id": upload_id, **more}


class FakeCloud:
    """Tickets up_1, up_2... for the uploads; each listing after them is the next of ``listings`` (the last
    repeats); the one before them (the names already in the folder) is ``before``."""

    def __init__(self, *listings: list[dict[str, Any]]) -> None:
        self.listings = list(listings)
        self.looks = 0
        self.before: list[dict[str, Any]] = []
        self.posted = False

    def client(self) -> MemmyClient:
        tickets = iter(range(1, 100))

        def handle(request: httpx.Request) -> httpx.Response:
            if request.url.path == "/knowledge-bases":
                return httpx.Response(200, json={"items": [{"id": KB, "name": "产品资料", "role": "owner"}]})
            if request.method == "GET" and not self.posted:
                return httpx.Response(200, json={"folders": [], "files": self.before})
            if request.method == "POST":
                self.posted = True
                ticket = {"upload_id": f"up_{next(tickets)}", "url": "http://storage.test/b", "fields": {}}
                return httpx.Response(201, json=ticket)
            self.looks += 1
            files = self.listings.pop(0) if len(self.listings) > 1 else self.listings[0]
            return httpx.Response(200, json={"folders": [], "files": files, "refresh_after_seconds": 2})

        return MemmyClient(ClientConfig(endpoint="http://cloud.test", token="t"), http=mock_http(handle))


@pytest.fixture
def files(tmp_path: Path) -> list[str]:
    paths = [tmp_path / "产品手册.md", tmp_path / "b.pdf"]
    for path in paths:
        path.write_bytes(b"x" * 10)
    return [str(path) for path in paths]


def _storage_post(url: str, *, files: dict[str, Any], **_: Any) -> httpx.Response:
    reader = files["file"][1]
    while reader.read(4):  # as the transport reads it, to the end
        pass
    return httpx.Response(204)


def run(monkeypatch: pytest.MonkeyPatch, cloud: FakeCloud, *argv: str) -> int:
    monkeypatch.setattr(transfer_commands, "client_for", lambda args: cloud.client())
    monkeypatch.setattr(httpx, "post", _storage_post)
    monkeypatch.setattr(transfer_commands.time, "sleep", lambda _s: None)
    return cli.main(["files", "upload", KB, *argv])


def test_wait_tells_each_state_once_as_it_changes(monkeypatch, capsys, files):
    cloud = FakeCloud(
        [entry("up_1", "产品手册.md", "uploading"), entry("up_2", "b.pdf", "uploading")],
        [entry("up_1", "产品手册.md", "processing"), entry("up_2", "b.pdf", "processing")],
        [entry("up_1", "产品手册.md", "processing"), entry("up_2", "b.pdf", "processing")],
        [entry("up_1", "产品手册.md", "available"), entry("up_2", "b.pdf", "processing")],
        [entry("up_1", "产品手册.md", "available"), entry("up_2", "b.pdf", "failed", reason="Not a PDF.")],
    )

    assert run(monkeypatch, cloud, *files, "--wait") == 1

    out, err = capsys.readouterr()
    assert cloud.looks == 5
    assert out.splitlines() == ["available         产品手册.md", "failed            b.pdf  (Not a PDF.)"]
    lines = err.removesuffix("\n").split("\n")  # not splitlines(): a bar starts with "\r"
    states = [line for line in lines if "%" not in line]
    assert states == [
        "uploading         产品手册.md",
        "uploading         b.pdf",
        "processing        产品手册.md",
        "processing        b.pdf",
    ]
    # Each file's bar once, its name in a column as wide as the widest name (产品手册.md: 11 columns)
    bars = [line.lstrip("\r") for line in lines if "%" in line]
    assert bars == ["产品手册.md [" + "#" * 30 + "] 100%", "b.pdf       [" + "#" * 30 + "] 100%"]


def test_wait_names_what_is_still_processing_at_the_timeout(monkeypatch, capsys, files):
    cloud = FakeCloud([entry("up_1", "产品手册.md", "processing"), entry("up_2", "b.pdf", "available")])
    assert run(monkeypatch, cloud, *files, "--wait", "--timeout", "0") == 0
    assert capsys.readouterr().out.splitlines() == [
        "available         b.pdf",
        "still processing  产品手册.md",
    ]


def test_without_wait_each_file_is_said_uploaded(monkeypatch, capsys, files):
    assert run(monkeypatch, FakeCloud([]), *files) == 0
    assert capsys.readouterr().out.splitlines() == [
        "uploaded          产品手册.md",
        "uploaded          b.pdf",
    ]


def test_json_prints_the_files_as_listed_and_nothing_else(monkeypatch, capsys, files):
    listed = [entry("up_1", "产品手册.md", "processing", version=None)]
    assert run(monkeypatch, FakeCloud(listed), *files, "--json") == 0
    out = capsys.readouterr().out
    assert json.loads(out) == [listed[0], {"upload_id": "up_2", "name": "b.pdf", "status": "uploading"}]


def test_json_with_wait_prints_the_finished_files(monkeypatch, capsys, files):
    done = [
        entry("up_1", "产品手册.md", "available", version=1),
        entry("up_2", "b.pdf", "available", version=1),
    ]
    cloud = FakeCloud([entry("up_1", "产品手册.md", "processing")], done)
    assert run(monkeypatch, cloud, *files, "--wait", "--json") == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == done
    assert "available         b.pdf" in err.splitlines()
