"""``memmy-kb sync DIR KB`` as a command (``memmy_kb_client.cli.sync_commands``), against an in-memory KB or an
unreachable cloud: a cloud that does not answer is an error line, not a traceback, and an error while
``--wait`` waits still tells what the pass did, damaged sync records are a sentence with the way out, a
failed version and files waiting for room are told (exit 1); a path that is no folder is a sentence and
exit 1 (a synced folder gone missing pauses instead); a pass that changes nothing sums its skips up in one
line. And the ``desktop`` link commands: ``link`` of a missing folder, what ``unlink`` did, and ``links``'
lines, whose names start no line of their own, with what a link's last pass has to tell."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memmy_kb_client.cli import desktop_commands, transfer_commands
from memmy_kb_client.cli import main as cli
from memmy_kb_client.http_client import HttpClient
from memmy_kb_client.sdk import ClientConfig, MemmyApiError, MemmyClient
from memmy_kb_client.sync import execute, run
from tests.support.cli_service import Opened
from tests.support.fake_kb import FakeKb


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MEMMY_KB_HOME", str(tmp_path / "home"))
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("a", encoding="utf-8")
    return tmp_path


def test_a_cloud_that_does_not_answer_is_an_error_line(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    class Refused(HttpClient):
        def send_json(self, *args: Any, **kwargs: Any) -> Any:
            raise ConnectionRefusedError("Connection refused")

    http = Refused("http://127.0.0.1:9", timeout=1.0)
    client = MemmyClient(ClientConfig(endpoint="http://127.0.0.1:9", token="t"), http=http)
    monkeypatch.setattr(transfer_commands, "client_for", lambda args: Opened(client))

    assert cli.main(["sync", str(home / "docs"), "kb_1"]) == 1

    assert (
        capsys.readouterr().err
        == "error: the cloud did not answer (ConnectionRefusedError: Connection refused)\n"
    )


def test_an_error_while_waiting_still_tells_what_the_pass_did(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    kb = FakeKb()
    monkeypatch.setattr(transfer_commands, "client_for", lambda args: Opened(kb))
    monkeypatch.setattr(execute, "post_upload_from", kb.send)

    def throttled(*args: Any, **kwargs: Any) -> Any:
        raise MemmyApiError(429, "rate_limited", "Too many requests.")

    monkeypatch.setattr(run, "wait_until_ready", throttled)

    assert cli.main(["sync", str(home / "docs"), "kb_1", "--wait"]) == 1

    printed = capsys.readouterr()
    assert printed.out.splitlines()[0] == "uploaded   a.md"
    assert printed.err == "error while waiting: Too many requests. (429 rate_limited)\n"


def test_a_line_break_in_a_linked_folders_name_or_error_starts_no_line() -> None:
    from memmy_kb_client.cli.link_commands import link_lines

    forged = {"dir": "/docs\nlinked:   /home -> kb_x: idle", "kb_id": "kb_1", "state": "error"}
    lines = link_lines([{**forged, "error": "a.md\nlinked:   /etc -> kb_y: idle: rejected"}])
    assert len(lines) == 1
    assert "\n" not in lines[0]
    assert lines[0].startswith("/docs\\u000alinked:")


def test_damaged_sync_records_are_a_sentence_with_the_way_out(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    records = run.store_dir() / "sync.sqlite3"
    records.parent.mkdir(parents=True)
    records.write_bytes(b"not a database at all, whatever it was" * 200)
    monkeypatch.setattr(transfer_commands, "client_for", lambda args: Opened(FakeKb()))

    assert cli.main(["sync", str(home / "docs"), "kb_1"]) == 1

    err = capsys.readouterr().err
    assert err.startswith(f"error: the sync records ({records}) are damaged")
    assert f"mv {records} {records}.broken" in err
    assert "Traceback" not in err


def test_a_failed_version_and_files_waiting_for_room_are_told_and_exit_1(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a.md synced, then its edit failed by the knowledge engine twice; and b.md refused for want of room
    kb = FakeKb()
    monkeypatch.setattr(transfer_commands, "client_for", lambda args: Opened(kb))
    monkeypatch.setattr(execute, "post_upload_from", kb.send)
    docs = home / "docs"
    for _ in range(2):
        cli.main(["sync", str(docs), "kb_1"])
        kb.ingest()
    (docs / "a.md").write_text("edited", encoding="utf-8")
    (docs / "b.md").write_text("b", encoding="utf-8")
    kb.refuse["b.md"] = (409, "kb_file_limit_reached", "A knowledge base can hold at most 1 files.")
    for _ in range(2):
        cli.main(["sync", str(docs), "kb_1"])
        kb.ingest()
        kb.engine_fails.add(kb.paths()["a.md"][1])
    capsys.readouterr()

    # When the next pass runs
    code = cli.main(["sync", str(docs), "kb_1"])

    # Then it says which file failed and why, and how many wait for room
    out = capsys.readouterr().out.splitlines()
    assert code == 1
    assert "failed     a.md  (The knowledge engine could not process this version; the previous version" in "\n".join(out)
    assert out[-2].startswith("1 file waits for room in the knowledge base")


def test_a_links_last_pass_tells_failed_versions_room_and_deletions_since_the_last_confirmation() -> None:
    from memmy_kb_client.cli.link_commands import link_lines

    link = {
        "dir": "/docs",
        "kb_id": "kb_1",
        "state": "idle",
        "failed": [{"path": "a.md", "reason": "The engine failed it."}],
        "failed_count": 1,
        "wait_for_room": 3,
        "deleted_since_confirmation": 4,
        "brought_in": 20,
    }
    assert link_lines([link])[1:] == [
        "  failed: a.md (The engine failed it.)",
        "  3 files wait for room in the knowledge base",
        "  deleted since the last confirmation: 4 of the 20 files its sync brought in",
    ]
    unreadable = {"dir": None, "kb_id": None, "state": "unreadable", "error": "the sync records are damaged"}
    assert link_lines([unreadable]) == ["the linked folders could not be read: the sync records are damaged"]


def test_a_sync_of_the_whole_disk_is_refused_with_a_sentence_and_one_too_large_asks_for_yes(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from memmy_kb_client.sync import roots

    kb = FakeKb()
    monkeypatch.setattr(transfer_commands, "client_for", lambda args: Opened(kb))
    monkeypatch.setattr(execute, "post_upload_from", kb.send)

    assert cli.main(["sync", "/", "kb_1"]) == 1
    assert capsys.readouterr().err == (
        "error: / is a whole disk, not a folder of documents: sync or link a folder in it\n"
    )

    monkeypatch.setattr(roots, "MAX_FILES_WITHOUT_YES", 0)
    assert cli.main(["sync", str(home / "docs"), "kb_1"]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == (
        "nothing was changed: it would send 1 files (0.0 MB), more than 0 at once: check that this is the"
        " folder you mean; run again with --yes to send them"
    )
    assert kb.paths() == {}


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("docz", "error: there is no folder {path}: check the path (a typo, or a disk not mounted?)\n"),
        (
            "docs/a.md",
            "error: {path} is not a folder: give the folder itself, whose files are to be synced\n",
        ),
    ],
)
def test_a_path_that_is_no_folder_fails_with_a_sentence_and_sends_nothing(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], given: str, said: str
) -> None:
    kb = FakeKb()
    monkeypatch.setattr(transfer_commands, "client_for", lambda args: Opened(kb))
    path = str(home / given)

    assert cli.main(["sync", path, "KB"]) == 1

    printed = capsys.readouterr()
    assert (printed.out, printed.err) == ("", said.format(path=path))
    assert kb.calls["list_files"] == 0


def test_a_synced_folder_gone_missing_pauses_instead_of_failing(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    kb = FakeKb()
    monkeypatch.setattr(transfer_commands, "client_for", lambda args: Opened(kb))
    monkeypatch.setattr(execute, "post_upload_from", kb.send)
    assert cli.main(["sync", str(home / "docs"), "KB"]) == 0
    kb.ingest()
    (home / "docs" / "a.md").unlink()
    (home / "docs").rmdir()
    capsys.readouterr()

    assert cli.main(["sync", str(home / "docs"), "KB"]) == 1

    assert "run again with --yes to delete them" in capsys.readouterr().out
    assert len(kb.files) == 1


def test_a_pass_that_changes_nothing_sums_its_skips_up_in_one_line(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    kb = FakeKb()
    monkeypatch.setattr(transfer_commands, "client_for", lambda args: Opened(kb))
    monkeypatch.setattr(execute, "post_upload_from", kb.send)
    for name in ("a.png", "b.png", "c.mp3"):
        (home / "docs" / name).write_bytes(b"\x89PNG")
    (home / "docs" / "empty.md").write_text("", encoding="utf-8")
    assert cli.main(["sync", str(home / "docs"), "KB"]) == 0
    assert sum(line.startswith("skipped ") for line in capsys.readouterr().out.splitlines()) == 4
    kb.ingest()

    assert cli.main(["sync", str(home / "docs"), "KB"]) == 0

    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == (
        "skipped    4 files (3 unsupported type, 1 empty file): --dry-run lists each with its reason"
    )
    assert lines[1].startswith(f"synced {home / 'docs'} -> kb_1: uploaded 0")
    assert len(lines) == 2


class _Control:
    """The desktop service's control routes, each request recorded; unlink answers the links left."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str]] = []

    def __call__(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        self.asked.append((method, path))
        return {"links": []}


def test_desktop_link_of_a_missing_folder_fails_with_a_sentence(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    control = _Control()
    monkeypatch.setattr(desktop_commands, "_control", control)
    missing = str(home / "docz")

    assert cli.main(["desktop", "link", missing, "KB"]) == 1

    assert control.asked == []
    assert (
        capsys.readouterr().err
        == f"error: there is no folder {missing}: check the path (a typo, or a disk not mounted?)\n"
    )


def test_desktop_unlink_says_what_it_did(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    control = _Control()
    monkeypatch.setattr(desktop_commands, "_control", control)

    assert cli.main(["desktop", "unlink", str(home / "docs")]) == 0

    assert control.asked == [("POST", "/control/links/unlink")]
    assert capsys.readouterr().out == (
        f"unlinked {home / 'docs'}: it is no longer synced; its files stay in the knowledge base\n"
    )


def test_a_paused_links_advice_names_its_own_folder_not_DIR() -> None:
    from memmy_kb_client.cli.link_commands import link_lines

    [line] = link_lines(
        [{"dir": "/home/me/产品 资料", "kb_id": "kb_1", "state": "paused", "paused": "folder missing"}]
    )

    assert "desktop confirm '/home/me/产品 资料'`" in line
    assert "DIR" not in line
