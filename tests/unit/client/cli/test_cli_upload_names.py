"""``files upload`` of a name already in the folder refuses (exit 1), names the file there and says how to
send a new version of it (``files replace``) or keep both (``--keep-both``: a free name such as
``介绍 (2).md``); the service's 409 ``name_taken`` (a file that arrived after the listing was read) is said
with the same sentence. Against the fake service of ``tests.support.cli_service``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from memmy_kb_client.cli import main as cli
from memmy_kb_client.cli import transfer_commands
from memmy_kb_client.cli.upload_names import free_name, same_name_key
from tests.support.cli_service import FILE_ID, OWNER, FakeService, error

NAME = "产品资料"


@pytest.fixture
def service(monkeypatch: pytest.MonkeyPatch) -> FakeService:
    fake = FakeService()
    monkeypatch.setattr(transfer_commands, "client_for", lambda args: fake.client(OWNER))
    monkeypatch.setattr(httpx, "post", lambda *a, **k: httpx.Response(204))  # the bytes to storage
    return fake


@pytest.fixture
def same_name(tmp_path: Path) -> str:
    """A file named as the KB's root file 介绍.md."""
    path = tmp_path / "介绍.md"
    path.write_text("# 新介绍\n", encoding="utf-8")
    return str(path)


def _upload_requests(service: FakeService) -> list[dict[str, Any]]:
    return [
        json.loads(r.content)
        for r in service.requests
        if r.method == "POST" and r.url.path.endswith("/uploads")
    ]


def test_a_name_already_in_the_folder_is_refused_naming_the_file_and_files_replace(
    service: FakeService, same_name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["files", "upload", NAME, same_name]) == 1

    assert _upload_requests(service) == []
    printed = capsys.readouterr()
    assert printed.out == ""
    assert printed.err.startswith("error: '介绍.md' is already in the root of knowledge base 产品资料")
    assert f"(file {FILE_ID})" in printed.err
    assert f"memmy-kb files replace 产品资料 {FILE_ID} PATH" in printed.err
    assert "--keep-both" in printed.err


def test_keep_both_uploads_under_a_free_name(
    service: FakeService, same_name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["files", "upload", NAME, same_name, "--keep-both"]) == 0

    assert [body["filename"] for body in _upload_requests(service)] == ["介绍 (2).md"]
    assert capsys.readouterr().out.split() == ["uploaded", "介绍", "(2).md"]


def test_a_name_that_differs_only_by_spaces_or_its_unicode_form_is_the_same_name(
    service: FakeService, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    service.files[FILE_ID]["name"] = "café.md"  # NFC
    path = tmp_path / " cafe\u0301.md"  # NFD, a space before
    path.write_text("x", encoding="utf-8")

    assert cli.main(["files", "upload", NAME, str(path)]) == 1

    assert _upload_requests(service) == []
    assert f"(file {FILE_ID})" in capsys.readouterr().err


def test_the_services_name_taken_is_said_with_the_same_sentence(
    service: FakeService, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "新手册.md"  # not in the listing read first: it arrives meanwhile
    path.write_text("x", encoding="utf-8")
    service.upload_refusal = error(409, "name_taken", "A file of this name is already in the folder.")

    assert cli.main(["files", "upload", NAME, str(path)]) == 1

    err = capsys.readouterr().err
    assert err.startswith("error: '新手册.md' is already in the root of knowledge base 产品资料")
    assert "memmy-kb files replace 产品资料 新手册.md PATH" in err


def test_two_files_of_one_name_in_one_command_send_nothing_without_keep_both(
    service: FakeService, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = [tmp_path / "a" / "笔记.md", tmp_path / "b" / "笔记.md"]
    for path in paths:
        path.parent.mkdir()
        path.write_text(path.parent.name, encoding="utf-8")

    assert cli.main(["files", "upload", NAME, *map(str, paths)]) == 1
    assert _upload_requests(service) == []
    assert "'笔记.md' is given twice" in capsys.readouterr().err

    assert cli.main(["files", "upload", NAME, *map(str, paths), "--keep-both"]) == 0
    assert [body["filename"] for body in _upload_requests(service)] == ["笔记.md", "笔记 (2).md"]


@pytest.mark.parametrize(
    ("name", "taken", "free"),
    [
        ("a.md", [], "a.md"),
        ("a.md", ["a.md"], "a (2).md"),
        ("a.md", ["a.md", "a (2).md"], "a (3).md"),
        ("README", ["README"], "README (2)"),
        (".env", [".env"], ".env (2)"),
    ],
)
def test_free_name_numbers_the_stem(name: str, taken: list[str], free: str) -> None:
    assert free_name(name, [same_name_key(t) for t in taken]) == free


def test_a_listing_the_service_cannot_give_now_leaves_the_refusal_to_it(
    service: FakeService, same_name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    service.listing_failure = error(503, "unavailable", "Try again.")
    service.upload_refusal = error(409, "name_taken", "A file of this name is already in the folder.")

    assert cli.main(["files", "upload", NAME, same_name]) == 1

    assert len(_upload_requests(service)) == 1  # asked, and refused by the service
    assert "'介绍.md' is already in the root of knowledge base 产品资料" in capsys.readouterr().err
