"""Which prompts the local service answers without a search: slash commands and acknowledgements, by a
closed list, never a short question."""

from __future__ import annotations

import pytest

from memmy_kb_client.desktop.trivial import is_trivial_prompt


@pytest.mark.parametrize(
    "prompt",
    [
        "/clear",
        "/model opus",
        "/compact keep the pricing part",
        "  /help",
        "ok",
        "OK!",
        "Okay.",
        "  thanks 🙏",
        "Thank you!",
        "go on",
        "LGTM",
        "y",
        "继续",
        "好的。",
        "嗯嗯",
        "谢谢！",
        "可以，",
        "ＯＫ",  # full width, NFKC makes it "OK"
        "?",
        "...",
        "👍",
        "",
        "   ",
    ],
)
def test_nothing_to_search(prompt):
    assert is_trivial_prompt(prompt)


@pytest.mark.parametrize(
    "prompt",
    [
        "pricing",
        "报价",
        "发票",
        "ok, what does the travel policy say about hotels?",
        "继续说说报销流程",
        "/etc/hosts is empty, why?",
        "/ what",
        "no idea what 差旅标准 means",
        "2024",
        "okay " * 10,
        "thanks for the summary, now compare the two plans",
    ],
)
def test_a_question_is_searched(prompt):
    assert not is_trivial_prompt(prompt)
