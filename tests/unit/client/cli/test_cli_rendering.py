"""What the CLI prints for people lines up on a terminal whatever the names: every table (``kb ls``,
``kb members``, ``files ls``) pads its columns in terminal columns (a Chinese character takes two), and
an upload's bar prints once, its name in a column of its own width."""

from __future__ import annotations

import io
from typing import Any

import pytest
from wcwidth import width

from memmy_kb_client.cli import rendering
from memmy_kb_client.cli.rendering import (
    bar_name_columns,
    progress_bar,
    render_list,
    render_listing,
    render_me,
    render_members,
)
from memmy_kb_client.cli.terminal import fit, table
from memmy_kb_client.storage_post import _ProgressReader


def _column_of(line: str, text: str) -> int:
    """Where ``text`` starts on ``line``, in terminal columns."""
    return width(line[: line.index(text)])


def test_a_table_pads_its_columns_in_terminal_columns():
    lines = table([["销售小王", "reader", "x"], ["bob", "owner", "y"], ["only"]], indent="  ")
    assert lines == ["  销售小王  reader  x", "  bob       owner   y", "  only"]


def test_members_line_up_whatever_the_ids_and_names():
    members = [
        {"user_id": "auth0|65f0c2a1b", "role": "owner", "display_name": "老板"},
        {"user_id": "alice", "role": "reader", "display_name": "Alice"},
        {"user_id": "销售", "role": "reader", "display_name": "销售小王"},
    ]
    lines = render_members(members).splitlines()
    assert {
        _column_of(line, role) for line, role in zip(lines, ["owner", "reader", "reader"], strict=True)
    } == {17}
    assert {_column_of(line, m["display_name"]) for line, m in zip(lines, members, strict=True)} == {25}


def test_shared_knowledge_bases_line_up_their_sharers():
    kbs = [
        {"id": "kb_1", "name": "Notes", "role": "owner", "recall": True},
        {
            "id": "kb_2",
            "name": "产品资料",
            "role": "reader",
            "recall": True,
            "owner": {"display_name": "老板"},
        },
        {
            "id": "kb_3",
            "name": "Sales deck",
            "role": "reader",
            "recall": False,
            "owner": {"display_name": "Bo"},
        },
    ]
    lines = render_list(kbs).splitlines()
    assert lines[1] == "  kb_1  recall on   Notes"
    assert _column_of(lines[3], "(from 老板)") == _column_of(lines[4], "(from Bo)")


def test_a_listing_lines_up_folders_and_files():
    listing = {
        "folders": [{"id": "fo_1", "name": "产品"}],
        "files": [
            {"id": "fi_22", "name": "手册.pdf", "status": "available", "version": 3},
            {"id": "up_1", "name": "价目表.md", "status": "uploading"},
        ],
    }
    lines = render_listing(listing).splitlines()
    assert lines == [
        "folder     fo_1       产品",
        "available  fi_22  v3  手册.pdf",
        "uploading  up_1   -   价目表.md",
    ]


def test_fit_pads_or_cuts_to_exact_terminal_columns():
    assert fit("产品", 6) == "产品  "
    assert width(fit("产品资料手册说明", 7)) == 7
    assert fit("产品资料手册说明", 7).endswith("…")
    assert fit("report.md", 6) == "repor…"


def _bars(monkeypatch: pytest.MonkeyPatch, terminal: bool) -> io.StringIO:
    stream = io.StringIO()
    stream.isatty = lambda: terminal  # type: ignore[method-assign]
    monkeypatch.setattr(rendering.sys, "stderr", stream)
    return stream


@pytest.mark.parametrize("terminal", [True, False])
def test_an_upload_bar_ends_once(monkeypatch: pytest.MonkeyPatch, terminal: bool):
    stream = _bars(monkeypatch, terminal)
    show = progress_bar("手册.pdf", 10)
    for sent in (0, 10, 50, 51, 100, 100, 100):
        show(sent, 100)
    written = stream.getvalue()
    assert written.count("\n") == 1
    assert written.count("100%") == 1
    assert written.endswith("] 100%\n")
    # On a terminal the bar is redrawn as it moves; in a log, only its end is written.
    assert written.count("\r") == (5 if terminal else 1)


def test_upload_bars_of_chinese_and_latin_names_line_up(monkeypatch: pytest.MonkeyPatch):
    stream = _bars(monkeypatch, False)
    names = ["MemOS产品介绍.md", "a.pdf", "一个非常非常非常非常非常非常非常非常长的文件名字.docx"]
    columns = bar_name_columns(names)
    assert columns == 40
    for name in names:
        progress_bar(name, columns)(5, 5)
    lines = stream.getvalue().replace("\r", "").splitlines()
    assert len(lines) == 3
    assert {_column_of(line, "[") for line in lines} == {41}
    assert bar_name_columns(["产品.md", "a.pdf"]) == 7


def test_the_sdk_reports_an_upload_s_end_once():
    seen: list[Any] = []
    reader = _ProgressReader(io.BytesIO(b"x" * 100), 100, lambda sent, total: seen.append((sent, total)))
    while reader.read(64):
        pass
    reader.read(64)
    assert seen == [(64, 100), (100, 100)]
    empty: list[Any] = []
    reader = _ProgressReader(io.BytesIO(b""), 0, lambda sent, total: empty.append((sent, total)))
    reader.read(64)
    assert empty == [(0, 0)]


def test_me_is_told_in_words():
    me = {
        "user_id": "u1",
        "display_name": "销售小王",
        "email": None,
        "phone": "138****8000",
        "recall_new_shares": True,
    }
    assert render_me(me).splitlines() == [
        "Name:                    销售小王",
        "User id:                 u1",
        "Email:                   (none)",
        "Phone:                   138****8000",
        "New shares join recall:  yes",
    ]
    assert render_me({**me, "recall_new_shares": False}).endswith("New shares join recall:  no")
