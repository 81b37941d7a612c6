"""Counts the CLI prints take the singular for one: "1 prompt", "delete 1 file"."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from memmy_kb_client.cli import delete_prompts, desktop_commands, sync_commands


@pytest.mark.parametrize(("count", "said"), [(1, "skipped:  1 prompt with"), (2, "skipped:  2 prompts with")])
def test_desktop_status_counts_skipped_prompts(capsys, count, said):
    desktop_commands._print_status({"login": {"state": "logged_in"}, "skipped_prompts": count}, False)
    assert said in capsys.readouterr().out


@pytest.mark.parametrize(
    ("count", "said"), [(1, "delete the 1 file this folder's"), (3, "delete the 3 files this folder's")]
)
def test_a_sync_asking_to_delete_counts_the_files(monkeypatch, count, said):
    asked: list[str] = []
    monkeypatch.setattr(delete_prompts, "stdin_is_terminal", lambda: True)
    monkeypatch.setattr(delete_prompts, "confirmed", lambda question: asked.append(question) or False)
    monkeypatch.setattr(sync_commands, "plan_lines", lambda plan: [])
    plan = SimpleNamespace(deletes=[object()] * count, confirm="the folder is empty")
    assert sync_commands._ask(plan) is False
    assert said in asked[0]
