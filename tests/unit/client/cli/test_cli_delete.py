"""``memmy-kb kb rm``, ``files rm`` and ``folders rm`` and the SDK's delete methods, against a fake service.

The fake is an ``httpx.MockTransport`` holding one owner's KB with nested folders and files; it answers
the routes as the service does (202 ``{cleanup_id}``, 403 ``owner_only`` for a reader, 404s) and records
every request with its raw path, so the tests see exactly what went over the wire and what did not.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

import httpx
import pytest

from memmy_kb_client.cli import commands, delete_prompts
from memmy_kb_client.cli import main as cli
from memmy_kb_client.sdk import ClientConfig, MemmyApiError, MemmyClient
from tests.support.mock_http import mock_http

OWNER, READER = "owner-token", "reader-token"
# Ids a client must percent-encode: a pipe and a space (as login providers' ids have), a slash, ? and #.
KB_ID = "kb|1 产品"
FOLDER_ID = "fo|2 a/b"
SUB_FOLDER_ID = "fo 3?x"
FILE_ID = "fi|4 #c"
DEEP_FILE_ID = "fi 5"


def _error(status: int, code: str, message: str) -> httpx.Response:
    return httpx.Response(status, json={"error": {"code": code, "message": message}})


@dataclass
class FakeService:
    """One KB named 产品资料 owned by OWNER and shared with READER:

    root: folder 资料 (FOLDER_ID) with a subfolder 旧版 (SUB_FOLDER_ID) holding 旧手册.pdf (DEEP_FILE_ID);
    root: 介绍.md (FILE_ID).
    """

    kb_name: str = "产品资料"
    folders: dict[str, dict[str, Any]] = field(
        default_factory=lambda: {
            FOLDER_ID: {"id": FOLDER_ID, "name": "资料", "parent_id": None},
            SUB_FOLDER_ID: {"id": SUB_FOLDER_ID, "name": "旧版", "parent_id": FOLDER_ID},
        }
    )
    files: dict[str, dict[str, Any]] = field(
        default_factory=lambda: {
            FILE_ID: {"id": FILE_ID, "name": "介绍.md", "folder_id": None, "status": "available"},
            DEEP_FILE_ID: {
                "id": DEEP_FILE_ID,
                "name": "旧手册.pdf",
                "folder_id": SUB_FOLDER_ID,
                "status": "available",
            },
        }
    )
    listing_failure: httpx.Response | None = None
    requests: list[httpx.Request] = field(default_factory=list)

    def handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        token = request.headers.get("Authorization", "").removeprefix("Bearer ")
        if token not in (OWNER, READER):
            return _error(401, "unauthorized", "Unauthorized")
        raw = request.url.raw_path.decode("ascii").partition("?")[0]
        parts = [unquote(part) for part in raw.split("/")[1:]]
        if parts[0] != "knowledge-bases" or len(parts) < 2:
            return _error(404, "route_not_found", "No such route.")
        if parts[1] != KB_ID:
            return _error(404, "kb_not_found", "Knowledge base not found.")
        role = "owner" if token == OWNER else "reader"
        match request.method, parts[2:]:
            case "GET", []:
                kb = {"id": KB_ID, "name": self.kb_name, "role": role, "recall": True}
                return httpx.Response(200, json=kb)
            case "GET", ["files"]:
                if self.listing_failure is not None:
                    return self.listing_failure
                folder = request.url.params.get("folder_id")
                return httpx.Response(
                    200,
                    json={
                        "folders": [f for f in self.folders.values() if f["parent_id"] == folder],
                        "files": [f for f in self.files.values() if f["folder_id"] == folder],
                    },
                )
            case "DELETE", rest:
                if role != "owner":
                    return _error(403, "owner_only", "Only the knowledge base's owner may do this.")
                match rest:
                    case []:
                        return httpx.Response(202, json={"cleanup_id": "cleanup-kb"})
                    case ["files", file_id]:
                        if file_id not in self.files:
                            return _error(404, "file_not_found", "File not found.")
                        return httpx.Response(202, json={"cleanup_id": "cleanup-file"})
                    case ["folders", folder_id]:
                        if folder_id not in self.folders:
                            return _error(404, "folder_not_found", "Folder not found.")
                        return httpx.Response(202, json={"cleanup_id": "cleanup-folder"})
        return _error(404, "route_not_found", "No such route.")

    def client(self, token: str = OWNER) -> MemmyClient:
        http = mock_http(self.handle, "http://memmy.test")
        return MemmyClient(ClientConfig(endpoint="http://memmy.test", token=token), http=http)

    @property
    def deletes(self) -> list[str]:
        return [r.url.raw_path.decode() for r in self.requests if r.method == "DELETE"]


class Terminal(io.StringIO):
    """stdin as a person at a terminal: what they will type, and isatty() true."""

    def isatty(self) -> bool:
        return True


@pytest.fixture
def service(monkeypatch: pytest.MonkeyPatch) -> FakeService:
    fake = FakeService()
    monkeypatch.setattr(commands, "_client", lambda args: fake.client(args.token or OWNER))
    return fake


def run(monkeypatch: pytest.MonkeyPatch, stdin: io.StringIO, *argv: str) -> int:
    monkeypatch.setattr("sys.stdin", stdin)
    return cli.main(list(argv))


KB_PATH = "/knowledge-bases/kb%7C1%20%E4%BA%A7%E5%93%81"
# What each command names when it is done: the name, as the question does, not the id.
DELETED = {
    "kb": "deleted knowledge base '产品资料' (cleanup cleanup-kb",
    "file": "deleted file '介绍.md' (cleanup cleanup-file",
    "folder": "deleted folder '资料' (cleanup cleanup-folder",
}
COMMANDS = {
    "kb": (["kb", "rm", KB_ID], KB_PATH, "cleanup-kb"),
    "file": (["files", "rm", KB_ID, FILE_ID], f"{KB_PATH}/files/fi%7C4%20%23c", "cleanup-file"),
    "folder": (["folders", "rm", KB_ID, FOLDER_ID], f"{KB_PATH}/folders/fo%7C2%20a%2Fb", "cleanup-folder"),
}


# ---------------------------------------------------------------------------------------------- SDK


@pytest.mark.parametrize(
    ("call", "path", "cleanup_id"),
    [
        (lambda c: c.delete_knowledge_base(KB_ID), COMMANDS["kb"][1], "cleanup-kb"),
        (lambda c: c.delete_file(KB_ID, FILE_ID), COMMANDS["file"][1], "cleanup-file"),
        (lambda c: c.delete_folder(KB_ID, FOLDER_ID), COMMANDS["folder"][1], "cleanup-folder"),
    ],
)
def test_the_sdk_sends_delete_on_the_quoted_path_and_returns_the_cleanup_id(
    call: Any, path: str, cleanup_id: str
) -> None:
    fake = FakeService()
    with fake.client() as client:
        assert call(client) == cleanup_id
    assert [(r.method, r.url.raw_path.decode()) for r in fake.requests] == [("DELETE", path)]


@pytest.mark.parametrize(
    ("call", "token", "status", "code"),
    [
        (lambda c: c.delete_knowledge_base(KB_ID), READER, 403, "owner_only"),
        (lambda c: c.delete_knowledge_base("kb-other"), OWNER, 404, "kb_not_found"),
        (lambda c: c.delete_file(KB_ID, "fi-gone"), OWNER, 404, "file_not_found"),
        (lambda c: c.delete_folder(KB_ID, "fo-gone"), OWNER, 404, "folder_not_found"),
        (lambda c: c.delete_folder(KB_ID, FOLDER_ID), "stranger", 401, "unauthorized"),
    ],
)
def test_the_sdk_raises_the_services_error(call: Any, token: str, status: int, code: str) -> None:
    with FakeService().client(token) as client, pytest.raises(MemmyApiError) as raised:
        call(client)
    assert (raised.value.status, raised.value.code) == (status, code)


def test_other_sdk_paths_quote_the_kb_id_too() -> None:
    fake = FakeService()
    with fake.client() as client:
        assert client.get_knowledge_base(KB_ID)["name"] == "产品资料"
        client.list_files(KB_ID, FOLDER_ID)
    assert [r.url.raw_path.decode() for r in fake.requests] == [
        KB_PATH,
        f"{KB_PATH}/files?folder_id=fo%7C2+a%2Fb",
    ]


# ---------------------------------------------------------------------------------------------- --yes


@pytest.mark.parametrize("which", COMMANDS)
@pytest.mark.parametrize("flag", ["--yes", "-y"])
def test_yes_deletes_without_asking_or_reading_stdin_and_names_what_it_deleted(
    service: FakeService,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    which: str,
    flag: str,
) -> None:
    argv, path, _ = COMMANDS[which]
    stdin = io.StringIO("n\n")  # not a terminal, and a "no" that must not be read

    assert run(monkeypatch, stdin, *argv, flag) == 0

    # The name is looked up first (it is gone after the delete); the lookups only read
    assert service.deletes == [path]
    assert service.requests[-1].method == "DELETE"
    assert {r.method for r in service.requests[:-1]} == {"GET"}
    out, err = capsys.readouterr()
    assert out.startswith(DELETED[which])
    assert err == ""
    assert stdin.tell() == 0


@pytest.mark.parametrize("which", COMMANDS)
def test_yes_names_by_id_what_the_service_would_not_name(
    service: FakeService, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], which: str
) -> None:
    # Listing needs MemOS, deleting does not: a 503 on the lookup costs only the name
    service.listing_failure = _error(503, "memos_unavailable", "MemOS unavailable")
    assert run(monkeypatch, io.StringIO(), *COMMANDS[which][0], "--yes") == 0
    out = capsys.readouterr().out
    expected = {
        "kb": "deleted knowledge base '产品资料' (cleanup",
        "file": f"deleted file {FILE_ID} (cleanup",
        "folder": f"deleted folder {FOLDER_ID} (cleanup",
    }
    assert out.startswith(expected[which])
    assert len(service.deletes) == 1


@pytest.mark.parametrize("which", COMMANDS)
def test_json_prints_the_cleanup_id_as_the_apis_json(
    service: FakeService, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], which: str
) -> None:
    argv, _, cleanup_id = COMMANDS[which]
    assert run(monkeypatch, io.StringIO(), *argv, "--yes", "--json") == 0
    assert json.loads(capsys.readouterr().out) == {"cleanup_id": cleanup_id}


# ---------------------------------------------------------------------------------------------- asking


@pytest.mark.parametrize(
    ("argv", "question", "done"),
    [
        (
            COMMANDS["kb"][0],
            "Delete knowledge base '产品资料' and all its files for everyone it is shared with? [y/N] ",
            "deleted knowledge base '产品资料' (cleanup cleanup-kb",
        ),
        (
            COMMANDS["file"][0],
            "Delete file '介绍.md' from knowledge base '产品资料' for everyone it is shared with? [y/N] ",
            "deleted file '介绍.md' (cleanup cleanup-file",
        ),
        (
            ["files", "rm", KB_ID, DEEP_FILE_ID],
            "Delete file '旧手册.pdf' from knowledge base '产品资料' for everyone it is shared with? [y/N] ",
            "deleted file '旧手册.pdf' (cleanup cleanup-file",
        ),
        (
            COMMANDS["folder"][0],
            "Delete folder '资料' and all its subfolders and files from knowledge base '产品资料' "
            "for everyone it is shared with? [y/N] ",
            "deleted folder '资料' (cleanup cleanup-folder",
        ),
        (
            ["folders", "rm", KB_ID, SUB_FOLDER_ID],
            "Delete folder '旧版' and all its subfolders and files from knowledge base '产品资料' "
            "for everyone it is shared with? [y/N] ",
            "deleted folder '旧版' (cleanup cleanup-folder",
        ),
    ],
)
@pytest.mark.parametrize("answer", ["y\n", "Y\n", "yes\n", " YES \n"])
def test_a_yes_at_the_terminal_deletes_what_the_question_named(
    service: FakeService,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    question: str,
    done: str,
    answer: str,
) -> None:
    assert run(monkeypatch, Terminal(answer), *argv) == 0

    out, err = capsys.readouterr()
    assert err == question
    assert out.startswith(done)
    assert len(service.deletes) == 1
    # The lookups only read
    assert {r.method for r in service.requests} == {"GET", "DELETE"}
    assert service.requests[-1].method == "DELETE"


@pytest.mark.parametrize("which", COMMANDS)
@pytest.mark.parametrize("answer", ["n\n", "\n", "", "no\n", "yep\n", "y es\n"])
def test_anything_but_yes_deletes_nothing(
    service: FakeService,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    which: str,
    answer: str,
) -> None:
    assert run(monkeypatch, Terminal(answer), *COMMANDS[which][0]) == 1

    out, err = capsys.readouterr()
    assert service.deletes == []
    assert out == ""
    assert "[y/N]" in err
    assert err.endswith("not deleted\n")


@pytest.mark.parametrize("which", COMMANDS)
@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_without_a_terminal_and_without_yes_it_refuses_at_once(
    service: FakeService,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    which: str,
    json_flag: list[str],
) -> None:
    piped = io.StringIO("y\n")  # even a piped "y" is not a person's confirmation

    assert run(monkeypatch, piped, *COMMANDS[which][0], *json_flag) == 1

    out, err = capsys.readouterr()
    assert service.requests == []
    assert piped.tell() == 0
    assert out == ""
    assert "stdin is not a terminal" in err
    assert "--yes" in err


def test_no_stdin_at_all_is_no_terminal(
    service: FakeService, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    closed = io.StringIO()
    closed.close()  # isatty() on a closed stream raises ValueError
    assert run(monkeypatch, closed, *COMMANDS["kb"][0]) == 1
    assert service.requests == []
    assert "stdin is not a terminal" in capsys.readouterr().err


def test_names_others_could_see_are_escaped_in_the_question(
    service: FakeService, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    service.kb_name = "evil\x1b[2J\u202ename"
    assert run(monkeypatch, Terminal("n\n"), *COMMANDS["kb"][0]) == 1
    err = capsys.readouterr().err
    assert "evil\\u001b[2J\\u202ename" in err
    assert "\x1b" not in err


def test_a_name_it_cannot_find_cheaply_is_asked_by_id(
    service: FakeService, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A chain of folders deeper than the lookup reads: the file at the bottom is asked about by its id
    parent = None
    for depth in range(delete_prompts.NAME_LOOKUP_LISTINGS + 2):
        service.folders[f"deep-{depth}"] = {"id": f"deep-{depth}", "name": f"d{depth}", "parent_id": parent}
        parent = f"deep-{depth}"
    service.files["bottom"] = {"id": "bottom", "name": "底.md", "folder_id": parent, "status": "available"}

    assert run(monkeypatch, Terminal("y\n"), "files", "rm", KB_ID, "bottom") == 0

    out, err = capsys.readouterr()
    assert err == "Delete file bottom from knowledge base '产品资料' for everyone it is shared with? [y/N] "
    assert out.startswith("deleted file bottom (cleanup cleanup-file")
    listings = [r for r in service.requests if r.url.path.endswith("/files")]
    assert len(listings) == delete_prompts.NAME_LOOKUP_LISTINGS


def test_a_listing_that_fails_only_costs_the_name(
    service: FakeService, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Listing needs MemOS for live status; deleting does not, so a 503 there must not block the delete
    service.listing_failure = _error(503, "memos_unavailable", "MemOS unavailable")
    assert run(monkeypatch, Terminal("y\n"), *COMMANDS["folder"][0]) == 0
    out, err = capsys.readouterr()
    assert err.startswith(
        f"Delete folder {FOLDER_ID} and all its subfolders and files from knowledge base '产品资料'"
    )
    assert out.startswith(f"deleted folder {FOLDER_ID} (cleanup cleanup-folder")


# ---------------------------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("argv", "token", "expected"),
    [
        (COMMANDS["kb"][0], READER, "error: Only the knowledge base's owner may do this. (403 owner_only)"),
        (COMMANDS["file"][0], READER, "error: Only the knowledge base's owner may do this. (403 owner_only)"),
        (
            COMMANDS["folder"][0],
            READER,
            "error: Only the knowledge base's owner may do this. (403 owner_only)",
        ),
        (["kb", "rm", "kb-other"], OWNER, "error: Knowledge base not found. (404 kb_not_found)"),
        (["files", "rm", KB_ID, "fi-gone"], OWNER, "error: File not found. (404 file_not_found)"),
        (["folders", "rm", KB_ID, "fo-gone"], OWNER, "error: Folder not found. (404 folder_not_found)"),
    ],
)
def test_refusals_are_printed_as_other_commands_print_them(
    service: FakeService,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    token: str,
    expected: str,
) -> None:
    assert run(monkeypatch, io.StringIO(), *argv, "--yes", "--token", token) == 1
    out, err = capsys.readouterr()
    assert (out, err) == ("", expected + "\n")
    assert len(service.deletes) == 1


def test_a_missing_file_asked_about_is_refused_by_the_service(
    service: FakeService, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(monkeypatch, Terminal("y\n"), "files", "rm", KB_ID, "fi-gone") == 1
    out, err = capsys.readouterr()
    assert err.startswith("Delete file fi-gone from knowledge base '产品资料'")
    assert err.endswith("error: File not found. (404 file_not_found)\n")
    assert out == ""


@pytest.mark.parametrize(
    "argv",
    [["kb", "rm", "kb-other"], ["files", "rm", "kb-other", FILE_ID], ["folders", "rm", "kb-other", "f"]],
)
def test_a_kb_that_is_not_there_is_reported_before_asking(
    service: FakeService, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    terminal = Terminal("y\n")
    assert run(monkeypatch, terminal, *argv) == 1
    out, err = capsys.readouterr()
    assert (out, err) == ("", "error: Knowledge base not found. (404 kb_not_found)\n")
    assert service.deletes == []
    assert terminal.tell() == 0
