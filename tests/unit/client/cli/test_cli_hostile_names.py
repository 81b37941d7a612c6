"""The CLI's listings print names other people chose (a shared KB's name and its sharer, file, folder and
member names, a failure's reason) each on its own line: a line break in one cannot forge another line,
and controls show as escapes, while Chinese and emoji stay as they are."""

from __future__ import annotations

import pytest

from memmy_kb_client.cli.rendering import progress_bar, render_list, render_listing, render_members
from memmy_kb_client.cli.terminal import one_line, printable

FORGED = "x\n  kb_fake  recall on   我的资料\x1b[2J\u202e"


def test_kb_list_member_and_file_names_cannot_forge_lines():
    kbs = [
        {"id": "kb_1", "name": "我的资料 📚", "role": "owner", "recall": True},
        {"id": "kb_2", "name": FORGED, "role": "reader", "recall": True, "owner": {"display_name": FORGED}},
    ]
    listed = printable(render_list(kbs))
    assert listed.splitlines() == [
        "My knowledge bases:",
        "  kb_1  recall on  我的资料 📚",
        "Shared with me:",
        "  kb_2  recall on  x\\u000a  kb_fake  recall on   我的资料\\u001b[2J\\u202e"
        "  (from x\\u000a  kb_fake  recall on   我的资料\\u001b[2J\\u202e)",
    ]
    members = printable(render_members([{"user_id": "u1", "role": "reader", "display_name": FORGED}]))
    assert len(members.splitlines()) == 1
    listing = {
        "folders": [{"id": "f1", "name": FORGED}],
        "files": [{"id": "d1", "name": FORGED, "status": "failed", "reason": FORGED}],
    }
    assert len(printable(render_listing(listing)).splitlines()) == 2


def test_one_line_keeps_ordinary_text():
    assert one_line("产品资料 😀 v2") == "产品资料 😀 v2"
    assert one_line("a\tb\nc") == "a\\u0009b\\u000ac"


def test_the_progress_bar_shows_a_file_name_inert(capsys: pytest.CaptureFixture[str]):
    progress_bar("报告\x1b]0;pwned\x07\u202e.md")(1, 1)
    shown = capsys.readouterr().err
    assert "\x1b" not in shown
    assert "\x07" not in shown
    assert "\u202e" not in shown
    assert shown.startswith("\r报告\\u001b]0;pwned\\u0007\\u202e.md")


def test_kb_list_names_a_sharer_with_the_masked_contact():
    """A display name alone could pose as someone else: the list shows the sharer's masked contact too."""
    kbs = [
        {
            "id": "kb_2",
            "name": "销售资料",
            "role": "reader",
            "recall": False,
            "owner": {"display_name": "老板"},
        },
        {
            "id": "kb_3",
            "name": "产品资料",
            "role": "reader",
            "recall": True,
            "owner": {"display_name": "老板", "contact": "138****8000"},
        },
    ]
    assert render_list(kbs).splitlines()[-2:] == [
        "  kb_2  recall off  销售资料  (from 老板)",
        "  kb_3  recall on   产品资料  (from 老板, 138****8000)",
    ]
