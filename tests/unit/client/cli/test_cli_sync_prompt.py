"""The question ``memmy-kb sync`` asks on a terminal when a pass waits for a confirmation: its reason first,
the number of files that would go said once (by the reason when the share decided, by the question when
the folder is missing or empty), and nothing deleted on a no."""

from __future__ import annotations

import io
import re
import shutil
from pathlib import Path

import pytest

from memmy_kb_client.cli import delete_prompts, transfer_commands
from memmy_kb_client.cli import main as cli
from memmy_kb_client.cli.sync_commands import question
from memmy_kb_client.sync import execute
from memmy_kb_client.sync.plan import Plan, Step
from tests.support.cli_service import Opened
from tests.support.fake_kb import FakeKb

NAMES = ("a.md", "b.md", "c.md", "d.md")


@pytest.fixture
def synced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, FakeKb]:
    """A folder of four files, synced once into a fake KB; stdin a terminal from here on."""
    monkeypatch.setenv("MEMMY_KB_HOME", str(tmp_path / "home"))
    folder = tmp_path / "docs"
    folder.mkdir()
    for name in NAMES:
        (folder / name).write_text(f"# {name}\n", encoding="utf-8")
    kb = FakeKb()
    monkeypatch.setattr(transfer_commands, "client_for", lambda args: Opened(kb))
    monkeypatch.setattr(execute, "post_upload_from", kb.send)
    assert cli.main(["sync", str(folder), "kb_1"]) == 0
    kb.ingest()
    monkeypatch.setattr(delete_prompts, "stdin_is_terminal", lambda: True)
    return folder, kb


def _asked(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], folder: Path) -> str:
    """The question a pass asks (answered no), after the plan it prints; the pass exits 1 (stopped)."""
    capsys.readouterr()
    monkeypatch.setattr("sys.stdin", io.StringIO("n\n"))
    assert cli.main(["sync", str(folder), "kb_1"]) == 1
    return capsys.readouterr().err.splitlines()[-1]


def test_the_share_question_says_how_many_once_and_a_no_deletes_nothing(
    synced: tuple[Path, FakeKb], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    folder, kb = synced
    for name in NAMES[:3]:
        (folder / name).unlink()

    asked = _asked(monkeypatch, capsys, folder)

    assert asked == "It would delete 3 of the 4 files this folder's sync brought in: delete them? [y/N] "
    assert len(re.findall(r"\b3\b", asked)) == 1
    assert sorted(kb.paths()) == list(NAMES)


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (shutil.rmtree, "The folder is missing (an unmounted disk?)"),
        (lambda folder: [p.unlink() for p in folder.iterdir()], "The folder is empty"),
    ],
    ids=["missing", "empty"],
)
def test_a_missing_or_empty_folder_is_asked_about_with_the_number_once(
    synced: tuple[Path, FakeKb],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    change: object,
    reason: str,
) -> None:
    folder, kb = synced
    change(folder)  # type: ignore[operator]

    asked = _asked(monkeypatch, capsys, folder)

    assert asked == f"{reason}: delete the 4 files this folder's sync brought in? [y/N] "
    assert sorted(kb.paths()) == list(NAMES)


def test_one_file_is_it() -> None:
    plan = Plan(deletes=[Step("delete", "a.md")], synced_count=2, confirm="it would delete 1 of the 2 files")

    assert question(plan, str(plan.confirm)) == "It would delete 1 of the 2 files: delete it?"
