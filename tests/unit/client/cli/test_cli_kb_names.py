"""Every command that takes a knowledge base takes its unique name as well as its id (``entries.kb_named``),
against the fake service of ``tests.support.cli_service``: a command only an owner may run takes the name
of one of one's own; reading (``files ls``, ``kb recall``) takes a KB shared with you too; a name several
KBs share, or none, sends nothing and says so."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import unquote

import httpx
import pytest

from memmy_kb_client.cli import commands, transfer_commands
from memmy_kb_client.cli import main as cli
from tests.support.cli_service import KB_ID, OWNER, READER, FakeService

NAME = "产品资料"


@pytest.fixture
def service(monkeypatch: pytest.MonkeyPatch) -> FakeService:
    fake = FakeService()
    monkeypatch.setattr(commands, "_client", lambda args: fake.client(args.token or OWNER))
    monkeypatch.setattr(transfer_commands, "client_for", lambda args: fake.client(args.token or OWNER))
    monkeypatch.setattr(httpx, "post", lambda *a, **k: httpx.Response(204))  # the bytes to storage
    return fake


def _acted_on(service: FakeService) -> list[tuple[str, str]]:
    """What was asked of a KB (its listing of KBs aside), with the KB id decoded."""
    return [
        (r.method, unquote(r.url.raw_path.decode()).partition("?")[0])
        for r in service.requests
        if r.url.path != "/knowledge-bases"
    ]


@pytest.mark.parametrize(
    ("argv", "method", "path"),
    [
        (["files", "ls", NAME], "GET", f"/knowledge-bases/{KB_ID}/files"),
        (["kb", "rename", NAME, "新名"], "PATCH", f"/knowledge-bases/{KB_ID}"),
        (["folders", "mk", NAME, "新文件夹"], "POST", f"/knowledge-bases/{KB_ID}/folders"),
    ],
)
def test_a_command_takes_the_kb_by_its_name(
    service: FakeService, argv: list[str], method: str, path: str
) -> None:
    assert cli.main(argv) == 0

    assert (method, path) in _acted_on(service)


def test_files_upload_takes_the_kb_by_its_name(service: FakeService, tmp_path: Path) -> None:
    document = tmp_path / "新手册.md"
    document.write_text("# 手册\n", encoding="utf-8")

    assert cli.main(["files", "upload", NAME, str(document)]) == 0

    assert ("POST", f"/knowledge-bases/{KB_ID}/uploads") in _acted_on(service)


def test_a_kb_shared_with_you_is_listed_by_its_name(
    service: FakeService, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["files", "ls", NAME, "--token", READER]) == 0

    assert "介绍.md" in capsys.readouterr().out


def test_a_change_to_a_kb_shared_with_you_by_its_name_says_only_its_owner_may(
    service: FakeService, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["kb", "rename", NAME, "新名", "--token", READER]) == 1

    assert _acted_on(service) == []
    err = capsys.readouterr().err
    assert err.startswith(f"error: no knowledge base of your own with the id or name '{NAME}'")
    assert "one shared with you has it: only its owner may do this" in err


def test_a_name_two_kbs_share_is_refused_with_both_ids(
    service: FakeService, capsys: pytest.CaptureFixture[str]
) -> None:
    service.other_kbs.append({"id": "kb_twin", "name": NAME, "role": "reader"})

    assert cli.main(["files", "ls", NAME]) == 1

    assert _acted_on(service) == []
    err = capsys.readouterr().err
    assert err.startswith(f"error: 2 knowledge bases are named '{NAME}': give the id of the one you mean:")
    assert KB_ID in err
    assert "kb_twin" in err


def test_an_id_is_taken_as_it_is(service: FakeService, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["files", "ls", KB_ID, "--json"]) == 0

    assert ("GET", f"/knowledge-bases/{KB_ID}/files") in _acted_on(service)
    assert json.loads(capsys.readouterr().out)["files"]


def test_when_the_kbs_cannot_be_listed_the_name_is_taken_as_an_id(
    service: FakeService, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    handle = service.handle

    def unavailable_listing(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/knowledge-bases":
            return httpx.Response(503, json={"error": {"code": "unavailable", "message": "Try again."}})
        return handle(request)

    monkeypatch.setattr(service, "handle", unavailable_listing)

    assert cli.main(["files", "ls", KB_ID]) == 0
    assert ("GET", f"/knowledge-bases/{KB_ID}/files") in _acted_on(service)
