"""``memmy-kb files mv``, ``folders mv|rename|mk`` against the fake service of ``tests.support.cli_service``:
files and folders given by id or unique name, what moved where said in words, ``folders mk`` printing
the new folder's id alone (for ``FO=$(memmy-kb folders mk ...)``), and ``--json`` the API's object."""

from __future__ import annotations

import json

import pytest

from memmy_kb_client.cli import commands
from memmy_kb_client.cli import main as cli
from tests.support.cli_service import FILE_ID, FOLDER_ID, KB_ID, OWNER, SUB_FOLDER_ID, FakeService


@pytest.fixture
def service(monkeypatch: pytest.MonkeyPatch) -> FakeService:
    fake = FakeService()
    fake.folders["fo_archive"] = {"id": "fo_archive", "name": "归档", "parent_id": None}
    monkeypatch.setattr(commands, "_client", lambda args: fake.client(args.token or OWNER))
    return fake


def _patches(service: FakeService) -> list[tuple[str, dict[str, object]]]:
    return [(r.url.path, json.loads(r.content)) for r in service.requests if r.method == "PATCH"]


@pytest.mark.parametrize(
    ("argv", "said", "patched"),
    [
        (
            ["files", "mv", KB_ID, "介绍.md", "--folder", "资料/旧版"],
            "moved file '介绍.md' to folder '旧版'",
            {"folder_id": SUB_FOLDER_ID},
        ),
        (["files", "mv", KB_ID, FILE_ID], "moved file '介绍.md' to the root", {"folder_id": None}),
        (
            ["folders", "mv", KB_ID, "旧版", "--parent", "归档"],
            "moved folder '旧版' into folder '归档'",
            {"parent_id": "fo_archive"},
        ),
        (["folders", "mv", KB_ID, SUB_FOLDER_ID], "moved folder '旧版' to the root", {"parent_id": None}),
        (["folders", "rename", KB_ID, "资料", "文档"], "renamed folder '资料' to '文档'", {"name": "文档"}),
    ],
)
def test_a_move_or_rename_takes_ids_or_names_and_says_what_went_where(
    service: FakeService,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    said: str,
    patched: dict[str, object],
) -> None:
    assert cli.main(argv) == 0
    assert capsys.readouterr().out == said + "\n"
    assert [body for _, body in _patches(service)] == [patched]


def test_a_move_prints_the_apis_object_with_json(
    service: FakeService, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["folders", "mv", KB_ID, "旧版", "--parent", "归档", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "id": SUB_FOLDER_ID,
        "name": "旧版",
        "parent_id": "fo_archive",
    }


def test_a_destination_that_names_nothing_moves_nothing(
    service: FakeService, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["files", "mv", KB_ID, "介绍.md", "--folder", "不存在"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"error: no folder with the id or name '不存在' in knowledge base {KB_ID}")
    assert _patches(service) == []


def test_a_name_two_folders_share_moves_nothing(
    service: FakeService, capsys: pytest.CaptureFixture[str]
) -> None:
    service.folders["fo_twin"] = {"id": "fo_twin", "name": "旧版", "parent_id": None}
    assert cli.main(["folders", "mv", KB_ID, "旧版", "--parent", "归档"]) == 1
    err = capsys.readouterr().err
    assert err.splitlines()[0].startswith(f"error: 2 folders in knowledge base {KB_ID} are named '旧版'")
    assert "  fo_twin  旧版" in err
    assert "资料/旧版" in err
    assert _patches(service) == []


def test_a_new_folder_prints_its_id_alone(service: FakeService, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["folders", "mk", KB_ID, "产品", "--parent", FOLDER_ID]) == 0
    (created,) = [f for f in service.folders.values() if f["name"] == "产品"]
    assert capsys.readouterr().out == f"{created['id']}\n"
    assert created["parent_id"] == FOLDER_ID


def test_ls_and_mk_take_a_folder_by_name_too(
    service: FakeService, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["files", "ls", KB_ID, "--folder", "资料/旧版"]) == 0
    assert "旧手册.pdf" in capsys.readouterr().out
    assert cli.main(["folders", "mk", KB_ID, "新", "--parent", "旧版"]) == 0
    (created,) = [f for f in service.folders.values() if f["name"] == "新"]
    assert created["parent_id"] == SUB_FOLDER_ID
