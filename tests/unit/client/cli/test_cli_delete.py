"""``memmy-kb kb rm``, ``files rm`` and ``folders rm`` and the SDK's delete methods, against the fake service of
``tests.support.cli_service``: what goes over the wire, what is asked and what is printed.
"""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from memmy_kb_client.cli import commands, entries
from memmy_kb_client.cli import main as cli
from memmy_kb_client.sdk import MemmyApiError
from tests.support.cli_service import (
    DEEP_FILE_ID,
    FILE_ID,
    FOLDER_ID,
    KB_ID,
    OWNER,
    READER,
    SUB_FOLDER_ID,
    FakeService,
    error,
)


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
def test_the_sdk_raises_the_serviceserror(call: Any, token: str, status: int, code: str) -> None:
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
    # Listing needs MemOS, deleting does not: a 503 on the lookup costs only the name (a file's is read
    # by its id, without a listing)
    service.listing_failure = error(503, "memos_unavailable", "MemOS unavailable")
    assert run(monkeypatch, io.StringIO(), *COMMANDS[which][0], "--yes") == 0
    out = capsys.readouterr().out
    expected = {
        "kb": "deleted knowledge base '产品资料' (cleanup",
        "file": "deleted file '介绍.md' (cleanup",
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


def test_a_folder_it_cannot_find_within_the_listings_it_reads_is_asked_by_id(
    service: FakeService, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A chain of folders deeper than the lookup reads: the folder at the bottom is asked about by its id
    parent = None
    for depth in range(entries.MAX_LISTINGS + 2):
        service.folders[f"deep-{depth}"] = {"id": f"deep-{depth}", "name": f"d{depth}", "parent_id": parent}
        parent = f"deep-{depth}"

    assert run(monkeypatch, Terminal("y\n"), "folders", "rm", KB_ID, parent) == 0

    out, err = capsys.readouterr()
    assert err.startswith(
        f"Delete folder {parent} and all its subfolders and files from knowledge base '产品资料'"
    )
    assert out.startswith(f"deleted folder {parent} (cleanup cleanup-folder")
    assert service.listings == entries.MAX_LISTINGS


def test_a_listing_that_fails_only_costs_the_name(
    service: FakeService, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Listing needs MemOS for live status; deleting does not, so a 503 there must not block the delete
    service.listing_failure = error(503, "memos_unavailable", "MemOS unavailable")
    assert run(monkeypatch, Terminal("y\n"), *COMMANDS["folder"][0]) == 0
    out, err = capsys.readouterr()
    assert err.startswith(
        f"Delete folder {FOLDER_ID} and all its subfolders and files from knowledge base '产品资料'"
    )
    assert out.startswith(f"deleted folder {FOLDER_ID} (cleanup cleanup-folder")


# ---------------------------------------------------------------------------------------------- errors


NOT_THERE = (
    "error: no knowledge base of your own with the id or name 'kb-other': give its id, or its name if no "
    "other of your own has it (`memmy-kb kb ls` lists them)"
)


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


@pytest.mark.parametrize(("command", "noun"), [("files", "file"), ("folders", "folder")])
@pytest.mark.parametrize("stdin", [Terminal("y\n"), io.StringIO()])
def test_an_id_or_name_that_names_nothing_deletes_nothing_and_says_what_to_give(
    service: FakeService,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: str,
    noun: str,
    stdin: io.StringIO,
) -> None:
    yes = [] if stdin.isatty() else ["--yes"]
    assert run(monkeypatch, stdin, command, "rm", KB_ID, "手册.pdf", *yes) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        f"error: no {noun} with the id or name '手册.pdf' in knowledge base {KB_ID}: give the {noun}'s id, "
        f"or its name if no other {noun} has it (`memmy-kb files ls {KB_ID}` lists them)\n"
    )
    assert service.deletes == []


@pytest.mark.parametrize(
    ("argv", "question", "path"),
    [
        (
            ["files", "rm", KB_ID, "旧手册.pdf"],
            "Delete file '旧手册.pdf' from knowledge base '产品资料' for everyone it is shared with? [y/N] ",
            f"{KB_PATH}/files/fi%205",
        ),
        (
            ["folders", "rm", KB_ID, "资料/旧版"],
            "Delete folder '旧版' and all its subfolders and files from knowledge base '产品资料' "
            "for everyone it is shared with? [y/N] ",
            f"{KB_PATH}/folders/fo%203%3Fx",
        ),
    ],
)
def test_a_unique_name_or_a_path_of_names_deletes_that_entry(
    service: FakeService,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    question: str,
    path: str,
) -> None:
    assert run(monkeypatch, Terminal("y\n"), *argv) == 0
    assert capsys.readouterr().err == question
    assert service.deletes == [path]


def test_a_name_several_files_share_deletes_nothing_and_lists_them(
    service: FakeService, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    service.files["fi_root_copy"] = {
        "id": "fi_root_copy",
        "name": "旧手册.pdf",
        "folder_id": None,
        "status": "available",
    }
    assert run(monkeypatch, Terminal("y\n"), "files", "rm", KB_ID, "旧手册.pdf") == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [
        f"error: 2 files in knowledge base {KB_ID} are named '旧手册.pdf': give the id (or the path) of the "
        "file you mean:",
        "  fi_root_copy  旧手册.pdf",
        f"  {DEEP_FILE_ID}          资料/旧版/旧手册.pdf",
    ]
    assert service.deletes == []


@pytest.mark.parametrize(
    "argv",
    [["kb", "rm", "kb-other"], ["files", "rm", "kb-other", FILE_ID], ["folders", "rm", "kb-other", "f"]],
)
@pytest.mark.parametrize("yes", [[], ["--yes"]])
def test_a_kb_that_is_not_there_is_reported_before_asking(
    service: FakeService,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    yes: list[str],
) -> None:
    terminal = Terminal("y\n")
    assert run(monkeypatch, terminal, *argv, *yes) == 1
    out, err = capsys.readouterr()
    assert (out, err) == ("", NOT_THERE + "\n")
    assert service.deletes == []
    assert terminal.tell() == 0
