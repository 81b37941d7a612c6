"""``memmy-kb sync DIR KB`` as a command (``memmy_kb_client.cli.sync_commands``), against an in-memory KB or an
unreachable cloud: a cloud that does not answer is an error line, not a traceback, and an error while
``--wait`` waits still tells what the pass did; and ``desktop links``' lines, whose names start no line of
their own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memmy_kb_client.cli import main as cli
from memmy_kb_client.cli import transfer_commands
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
