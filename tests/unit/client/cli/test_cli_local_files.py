"""``memmy-kb files upload`` and ``files replace`` of a local file that cannot be sent as given (missing, a
folder, empty) say so in one sentence before the cloud is asked anything, exit 1 and send nothing; a
replace by a file of another format than the knowledge base's file is refused before anything is sent
(the file keeps its name, and the cloud checks the new bytes against it)."""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import pytest

from memmy_kb_client.cli import main as cli
from memmy_kb_client.cli import transfer_commands
from memmy_kb_client.cli.local_files import file_format
from memmy_kb_client.sdk import ClientConfig, MemmyClient
from tests.support.mock_http import mock_http

KB, FILE = "kb_1", "fi_1"


class Cloud:
    """Every request the command makes, and every storage POST: the KB ``价目`` holds ``价目表.md``."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []
        self.stored = 0

    def client(self) -> MemmyClient:
        def handle(request: httpx.Request) -> httpx.Response:
            self.requests.append(request)
            if request.url.path == "/knowledge-bases":
                return httpx.Response(200, json={"items": [{"id": KB, "name": "价目", "role": "owner"}]})
            if request.method == "GET" and request.url.path.endswith(f"/files/{FILE}"):
                return httpx.Response(200, json={"id": FILE, "name": "价目表.md", "status": "available"})
            if request.method == "GET":
                return httpx.Response(200, json={"folders": [], "files": []})
            ticket = {"status": "issued", "upload_id": "up_1", "url": "http://storage.test/b", "fields": {}}
            return httpx.Response(201, json={**ticket, "replaces_version": 1, "file_id": FILE})

        return MemmyClient(ClientConfig(endpoint="http://cloud.test", token="t"), http=mock_http(handle))

    def store(self, url: str, **_: object) -> httpx.Response:
        self.stored += 1
        return httpx.Response(204)


@pytest.fixture
def cloud(monkeypatch: pytest.MonkeyPatch) -> Cloud:
    fake = Cloud()
    monkeypatch.setattr(transfer_commands, "client_for", lambda args: fake.client())
    monkeypatch.setattr(httpx, "post", fake.store)
    return fake


@pytest.fixture
def local(tmp_path: Path) -> Path:
    (tmp_path / "ok.md").write_text("# ok\n", encoding="utf-8")
    (tmp_path / "empty.md").write_bytes(b"")
    (tmp_path / "folder").mkdir()
    os.mkfifo(tmp_path / "pipe.md")  # opening it to read would wait for a writer for ever
    (tmp_path / "notes.pdf").write_bytes(b"%PDF-1.4\n%%EOF\n")
    return tmp_path


@pytest.mark.parametrize(
    ("name", "sentence"),
    [
        ("gone.md", "there is no file {path}: check the path (a typo, or a disk not mounted?); nothing was uploaded"),
        (
            "folder",
            "{path} is a folder: give the files in it, or keep the whole folder in the knowledge base with "
            "`memmy-kb sync {path} KB`; nothing was uploaded",
        ),
        (
            "empty.md",
            "{path} is empty (0 bytes): a knowledge base takes files of 1 byte to 100 MB; nothing was uploaded",
        ),
        ("pipe.md", "{path} is not a regular file (a pipe, a socket or a device): give a file; nothing was uploaded"),
    ],
    ids=["missing", "folder", "empty", "pipe"],
)
def test_an_upload_of_a_file_that_cannot_be_sent_asks_the_cloud_nothing(
    cloud: Cloud, local: Path, capsys: pytest.CaptureFixture[str], name: str, sentence: str
) -> None:
    path = str(local / name)

    # The good file given first is not uploaded either: nothing goes while one cannot.
    assert cli.main(["files", "upload", KB, str(local / "ok.md"), path]) == 1

    assert capsys.readouterr().err == f"error: {sentence.format(path=path)}\n"
    assert cloud.requests == []
    assert cloud.stored == 0


def test_every_file_that_cannot_be_sent_is_named(
    cloud: Cloud, local: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["files", "upload", KB, str(local / "gone.md"), str(local / "empty.md")]) == 1

    err = capsys.readouterr().err
    assert err.startswith(f"error: there is no file {local / 'gone.md'}:")
    assert f"\n{local / 'empty.md'} is empty (0 bytes)" in err
    assert cloud.requests == []


@pytest.mark.parametrize(
    ("name", "sentence"),
    [
        ("gone.md", "there is no file {path}: check the path (a typo, or a disk not mounted?); nothing was sent"),
        ("folder", "{path} is a folder: give the file whose content is the new version; nothing was sent"),
        (
            "empty.md",
            "{path} is empty (0 bytes): a file's new version holds at least 1 byte (to remove the file, use "
            "`memmy-kb files rm`); nothing was sent",
        ),
    ],
    ids=["missing", "folder", "empty"],
)
def test_a_replace_by_a_file_that_cannot_be_sent_asks_the_cloud_nothing(
    cloud: Cloud, local: Path, capsys: pytest.CaptureFixture[str], name: str, sentence: str
) -> None:
    path = str(local / name)

    assert cli.main(["files", "replace", KB, FILE, path]) == 1

    assert capsys.readouterr().err == f"error: {sentence.format(path=path)}\n"
    assert cloud.requests == []
    assert cloud.stored == 0


def test_a_replace_by_another_format_is_refused_before_anything_is_sent(
    cloud: Cloud, local: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(local / "notes.pdf")

    assert cli.main(["files", "replace", "价目", FILE, path]) == 1

    assert capsys.readouterr().err == (
        "error: 'notes.pdf' is a .pdf file and file '价目表.md' is a .md file: a replace keeps the file's "
        "name, and the cloud checks the new content as a .md file; nothing was sent. To add 'notes.pdf' as "
        f"a file of its own, run `memmy-kb files upload 价目 {path}`\n"
    )
    # Only reads: the KB's name and the file's (no replace asked for, no bytes stored).
    assert [r.method for r in cloud.requests] == ["GET", "GET"]
    assert cloud.stored == 0


def test_a_replace_of_the_same_format_is_sent(cloud: Cloud, local: Path) -> None:
    assert cli.main(["files", "replace", KB, FILE, str(local / "ok.md")]) == 0

    assert [r.method for r in cloud.requests] == ["GET", "GET", "POST"]
    assert cloud.stored == 1


@pytest.mark.parametrize(
    ("name", "fmt"),
    [("a.MD", "md"), ("page.htm", "html"), ("page.html", "html"), ("README", ""), (".pdf", ""), ("a.b.txt", "txt")],
)
def test_a_names_format_is_the_clouds_reading_of_its_extension(name: str, fmt: str) -> None:
    assert file_format(name) == fmt
