"""``memmy-kb files replace KB FILE PATH [--if-version N] [--wait]`` and ``MemmyClient.replace_file``,
against a fake service answering ``POST .../files/{file}/replacements`` and ``GET .../files/{file}`` as the
cloud does; and ``files ls`` showing each file's version and its replace."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from memmy_kb_client.cli import main as cli
from memmy_kb_client.cli import transfer_commands
from memmy_kb_client.cli.rendering import render_listing
from memmy_kb_client.sdk import ClientConfig, MemmyClient
from tests.support.mock_http import mock_http

KB, FILE = "kb_1", "fi_1"
TICKET = {
    "status": "issued", "file_id": FILE, "replaces_version": 1, "upload_id": "up_2",
    "url": "http://storage.test/bucket", "fields": {"key": "uploads/kb_1/up_2", "Content-Type": "text/markdown"},
    "expires_at": "2026-01-01T00:10:00Z",
}


def entry(version: int, status: str, replacement: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"id": FILE, "name": "价目表.md", "status": status, "version": version, "replacement": replacement}


class FakeCloud:
    """Answers the replace with ``answer`` and each file read after it with the next of ``reads`` (the last
    repeats); a read before it (the command looking the file up by id: ``lookups``, apart from ``requests``)
    finds the file at version 1."""

    def __init__(self, answer: httpx.Response, *reads: dict[str, Any]) -> None:
        self.answer, self.reads = answer, list(reads)
        self.requests: list[httpx.Request] = []
        self.lookups: list[httpx.Request] = []
        self.posted: list[bytes] = []

    def client(self) -> MemmyClient:
        def handle(request: httpx.Request) -> httpx.Response:
            if request.url.path == "/knowledge-bases":
                return httpx.Response(200, json={"items": [{"id": KB, "name": "价目", "role": "owner"}]})
            if request.method == "GET" and not any(r.method == "POST" for r in self.requests):
                self.lookups.append(request)
                return httpx.Response(200, json=entry(1, "available"))
            self.requests.append(request)
            if request.method == "POST":
                return self.answer
            if request.method == "DELETE":
                return httpx.Response(204)
            return httpx.Response(200, json=self.reads.pop(0) if len(self.reads) > 1 else self.reads[0])

        http = mock_http(handle)
        return MemmyClient(ClientConfig(endpoint="http://cloud.test", token="t"), http=http)

    def storage_post(self, url: str, *, data: dict[str, str], files: dict[str, Any], timeout: Any) -> httpx.Response:
        _name, reader, _ = files["file"]
        self.posted.append(reader.read())
        return httpx.Response(204)


@pytest.fixture
def new_content(tmp_path: Path) -> Path:
    path = tmp_path / "新价目表.md"
    path.write_text("# 价目表\n新价格。\n", encoding="utf-8")
    return path


def run(monkeypatch: pytest.MonkeyPatch, cloud: FakeCloud, *argv: str) -> int:
    monkeypatch.setattr(transfer_commands, "client_for", lambda args: cloud.client())
    monkeypatch.setattr(httpx, "post", cloud.storage_post)
    monkeypatch.setattr(transfer_commands.time, "sleep", lambda _s: None)
    return cli.main(["files", "replace", *argv])


def test_the_same_bytes_print_unchanged_and_send_nothing(monkeypatch, capsys, new_content):
    cloud = FakeCloud(httpx.Response(200, json={"status": "unchanged", "file_id": FILE, "version": 3}))

    assert run(monkeypatch, cloud, KB, FILE, str(new_content), "--if-version", "3") == 0

    [request] = cloud.requests
    assert request.url.path == f"/knowledge-bases/{KB}/files/{FILE}/replacements"
    assert json.loads(request.content) == {
        "size_bytes": new_content.stat().st_size,
        "sha256": hashlib.sha256(new_content.read_bytes()).hexdigest(),
        "if_version": 3,
    }
    assert cloud.posted == []
    assert capsys.readouterr().out.split()[0] == "unchanged"


def test_new_bytes_go_to_storage_and_wait_ends_when_the_next_version_is_available(monkeypatch, capsys, new_content):
    cloud = FakeCloud(
        httpx.Response(201, json=TICKET),
        entry(1, "available", {"upload_id": "up_2", "status": "uploading"}),
        entry(2, "processing"),
        entry(2, "available"),
    )

    assert run(monkeypatch, cloud, KB, FILE, str(new_content), "--wait") == 0

    assert cloud.posted == [new_content.read_bytes()]
    assert [r.method for r in cloud.requests] == ["POST", "GET", "GET", "GET"]
    assert capsys.readouterr().out.split()[:4] == ["available", FILE, "version", "2"]


def test_a_replace_that_fails_exits_1_saying_the_version_kept(monkeypatch, capsys, new_content):
    failed = {"upload_id": "up_2", "status": "failed", "reason": "The file is not valid UTF-8 text."}
    cloud = FakeCloud(httpx.Response(201, json=TICKET), entry(1, "available", failed))

    assert run(monkeypatch, cloud, KB, FILE, str(new_content), "--wait") == 1

    assert "not valid UTF-8 text.; version 1 kept" in capsys.readouterr().out


def test_bytes_storage_refuses_dismiss_the_replace_so_that_a_retry_is_not_held_off(monkeypatch, capsys, new_content):
    # Left pending, the replace would hold the file until its POST expired: every retry 409 for minutes
    cloud = FakeCloud(httpx.Response(201, json=TICKET))
    monkeypatch.setattr(cloud, "storage_post", lambda *a, **k: httpx.Response(403, text="Policy expired"))

    assert run(monkeypatch, cloud, KB, FILE, str(new_content)) == 1

    assert [(r.method, r.url.path) for r in cloud.requests] == [
        ("POST", f"/knowledge-bases/{KB}/files/{FILE}/replacements"),
        ("DELETE", f"/knowledge-bases/{KB}/uploads/up_2"),
    ]
    assert "storage_rejected_upload" in capsys.readouterr().err


def test_a_stale_version_is_refused_with_its_code(monkeypatch, capsys, new_content):
    conflict = {"error": {"code": "version_conflict", "message": "The file is at version 2 now."}}
    cloud = FakeCloud(httpx.Response(409, json=conflict))

    assert run(monkeypatch, cloud, KB, FILE, str(new_content), "--if-version", "1") == 1

    assert "version_conflict" in capsys.readouterr().err
    assert cloud.posted == []


def test_files_ls_shows_each_files_version_and_its_replace():
    listing = {
        "folders": [],
        "files": [
            entry(2, "available", {"upload_id": "up_3", "status": "uploading"}),
            {**entry(1, "available", {"upload_id": "up_9", "status": "failed", "reason": "No."}), "id": "fi_2"},
            {"id": "up_5", "name": "new.md", "status": "uploading", "version": None},
        ],
    }

    assert render_listing(listing).splitlines() == [
        "available  fi_1  v2  价目表.md  [being replaced by up_3]",
        "available  fi_2  v1  价目表.md  [replace up_9 failed: No.]",
        "uploading  up_5  -   new.md",
    ]
