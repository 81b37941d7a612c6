"""Names where ids were wanted: ``files upload --folder`` and ``files replace KB FILE`` take a folder or
file by id, unique name or path of names (``entries.resolve``); ``sync DIR KB`` and ``desktop link DIR KB``
take one's own KB by id or unique name (``entries.kb_id``), against the fake service of
``tests.support.cli_service`` (``tests.support.fake_kb`` for a sync pass). A name that names nothing, or
several, sends nothing. And ``login --json`` prints one JSON object: who, where, never the token."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import httpx
import pytest

from memmy_kb_client.cli import desktop_commands, transfer_commands
from memmy_kb_client.cli import main as cli
from tests.support.cli_service import FILE_ID, KB_ID, OWNER, SUB_FOLDER_ID, FakeService, Opened
from tests.support.fake_kb import FakeKb


@pytest.fixture
def service(monkeypatch: pytest.MonkeyPatch) -> FakeService:
    fake = FakeService()
    monkeypatch.setattr(transfer_commands, "client_for", lambda args: fake.client(OWNER))
    monkeypatch.setattr(httpx, "post", lambda *a, **k: httpx.Response(204))  # the bytes to storage
    return fake


@pytest.fixture
def document(tmp_path: Path) -> str:
    path = tmp_path / "新手册.md"
    path.write_text("# 手册\n", encoding="utf-8")
    return str(path)


def _posts(service: FakeService) -> list[tuple[str, dict[str, Any]]]:
    return [
        (unquote(r.url.raw_path.decode()), json.loads(r.content))
        for r in service.requests
        if r.method == "POST"
    ]


def test_upload_takes_its_folder_by_path_of_names(
    service: FakeService, document: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["files", "upload", KB_ID, document, "--folder", "资料/旧版"]) == 0

    [(path, body)] = _posts(service)
    assert path == f"/knowledge-bases/{KB_ID}/uploads"
    assert body["folder_id"] == SUB_FOLDER_ID
    assert capsys.readouterr().out.split() == ["uploaded", "新手册.md"]


def test_upload_into_a_folder_that_names_nothing_sends_nothing(
    service: FakeService, document: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["files", "upload", KB_ID, document, "--folder", "不存在"]) == 1

    assert _posts(service) == []
    assert capsys.readouterr().err.startswith("error: no folder with the id or name '不存在'")


def test_replace_takes_the_file_by_name(
    service: FakeService, document: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["files", "replace", KB_ID, "介绍.md", document]) == 0

    assert [path for path, _ in _posts(service)] == [f"/knowledge-bases/{KB_ID}/files/{FILE_ID}/replacements"]
    out = capsys.readouterr().out
    assert out.startswith("unchanged")
    assert f" {FILE_ID} " in out


def test_replace_of_a_name_that_names_nothing_sends_nothing(
    service: FakeService, document: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["files", "replace", KB_ID, "不存在.md", document]) == 1

    assert _posts(service) == []
    assert "no file with the id or name '不存在.md'" in capsys.readouterr().err


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MEMMY_KB_HOME", str(tmp_path / "home"))
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("a", encoding="utf-8")
    return tmp_path / "docs"


@pytest.mark.parametrize(("role", "status"), [("owner", 0), ("reader", 1)])
def test_sync_takes_its_own_kb_by_name_never_a_shared_one(
    folder: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], role: str, status: int
) -> None:
    kb = FakeKb(role=role)  # kb_1, named "KB"
    monkeypatch.setattr(transfer_commands, "client_for", lambda args: Opened(kb))
    monkeypatch.setattr("memmy_kb_client.sync.execute.post_upload_from", kb.send)

    assert cli.main(["sync", str(folder), "KB"]) == status

    printed = capsys.readouterr()
    if role == "owner":
        assert printed.out.splitlines()[-1].startswith(f"synced {folder} -> kb_1: uploaded 1")
    else:
        assert "a sync target must be one of your own" in printed.err
        assert kb.uploads == {}
        assert kb.calls["list_files"] == 0


class Control:
    """The desktop service's control routes a link uses: the KB listing through its login, and the link."""

    def __init__(self, *kbs: dict[str, str]) -> None:
        self.kbs = list(kbs)
        self.linked: list[dict[str, Any]] = []

    def __call__(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any] | None:
        if (method, path) == ("GET", "/control/cloud/knowledge-bases"):
            return {"items": self.kbs}
        assert (method, path) == ("POST", "/control/links")
        assert body is not None
        self.linked.append(body)
        return {"dir": body["dir"], "kb_id": body["kb"], "state": "idle"}


def _kb(kb_id: str, name: str, role: str = "owner") -> dict[str, str]:
    return {"id": kb_id, "name": name, "role": role}


@pytest.mark.parametrize(
    ("kbs", "given", "linked", "said"),
    [
        ([_kb("kb_1", "产品资料"), _kb("kb_2", "产品资料", "reader")], "产品资料", "kb_1", ""),
        ([_kb("kb_1", "产品资料")], "kb_1", "kb_1", ""),
        ([_kb("kb_2", "产品资料", "reader")], "产品资料", None, "a sync target must be one of your own"),
        (
            [_kb("kb_1", "产品资料"), _kb("kb_3", "产品资料")],
            "产品资料",
            None,
            "2 knowledge bases of your own are named '产品资料': give the id",
        ),
        (
            [_kb("kb_1", "产品资料")],
            "不存在",
            None,
            "no knowledge base of your own with the id or name '不存在'",
        ),
    ],
)
def test_desktop_link_takes_its_own_kb_by_id_or_unique_name(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    kbs: list[dict[str, str]],
    given: str,
    linked: str | None,
    said: str,
) -> None:
    control = Control(*kbs)
    monkeypatch.setattr(desktop_commands, "_control", control)

    assert cli.main(["desktop", "link", str(tmp_path), given]) == (0 if linked else 1)

    assert [body["kb"] for body in control.linked] == ([linked] if linked else [])
    err = capsys.readouterr().err
    assert said in err if said else err == ""
    if "2 knowledge bases" in said:
        assert "kb_1" in err
        assert "kb_3" in err


def test_login_json_says_who_and_where_never_the_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEMMY_KB_HOME", str(tmp_path))
    monkeypatch.delenv("MEMMY_KB_TOKEN", raising=False)
    monkeypatch.delenv("MEMMY_KB_ENDPOINT", raising=False)
    claims = base64.urlsafe_b64encode(json.dumps({"sub": "alice"}).encode()).decode().rstrip("=")
    token = f"header.{claims}.signature"

    assert cli.main(["login", "--endpoint", "http://127.0.0.1:8080", "--token", token, "--json"]) == 0

    out = capsys.readouterr().out
    assert token not in out
    assert "signature" not in out
    answer = json.loads(out)
    assert answer["endpoint"] == "http://127.0.0.1:8080"
    assert answer["user"] == "alice"
    assert answer["saved_to"] == str(tmp_path / "config.json")
    assert "as alice" in answer["in_use"]
