"""``memmy-kb sync DIR KB`` as a command (``memmy_kb_client.cli.sync_commands``), against an in-memory KB or an
unreachable cloud: a cloud that does not answer is an error line, not a traceback, and an error while
``--wait`` waits still tells what the pass did; a path that is no folder is a sentence and exit 1 (a synced
folder gone missing pauses instead); a pass that changes nothing sums its skips up in one line. And the
``desktop`` link commands: ``link`` of a missing folder, what ``unlink`` did, and ``links``' lines, whose
names start no line of their own and whose advice names the folder."""

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
    monkeypatch.setattr(execute, "post_upload", kb.send)

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
    monkeypatch.setattr(execute, "post_upload", kb.send)
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
    monkeypatch.setattr(execute, "post_upload", kb.send)
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

    assert "`memmy-kb desktop confirm '/home/me/产品 资料'`" in line
    assert "DIR" not in line
