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


@pytest.mark.parametrize(
    "prompt",
    [
        "/tmp is full, why?",  # a top-level directory is a path, not a command
        "/tmp is full",
        "/home has no space left",
        "/Users/me is slow",
        "/var/log grows every day",
        "/api returns 500 after the deploy, why?",  # a question about a route
        "/ask what is our refund policy?",  # a command whose argument is a question
        "/review 报价流程为什么这么慢？",  # full-width question mark
    ],
)
def test_a_path_or_a_question_after_a_slash_is_searched(prompt):
    assert not is_trivial_prompt(prompt)


@pytest.mark.parametrize("prompt", ["🙏" * 30, "?" * 40, "。。。" * 10, " \n\t " * 20])
def test_no_letter_or_digit_is_nothing_to_search_at_any_length(prompt):
    assert is_trivial_prompt(prompt)


# The same acknowledgement in both languages: one is skipped only if the other is.
SAME_IN_BOTH = [
    ("ok", "好的"),
    ("thanks", "谢谢"),
    ("thank you", "谢谢你"),
    ("hello", "你好"),
    ("hi", "嗨"),
    ("continue", "继续"),
    ("start", "开始"),
    ("confirm", "确认"),
    ("no problem", "没问题"),
    ("good", "很好"),
    ("nice", "不错"),
    ("great", "太好了"),
    ("correct", "正确"),
    ("sure", "当然"),
    ("again", "再来"),
    ("undo", "撤销"),
    ("cancel", "取消"),
    ("stop", "停止"),
    ("retry", "重试"),
    ("done", "完成"),
    ("next", "下一步"),
    ("agreed", "同意"),
]


@pytest.mark.parametrize(("english", "chinese"), SAME_IN_BOTH)
def test_the_closed_list_says_the_same_in_both_languages(english, chinese):
    assert is_trivial_prompt(english)
    assert is_trivial_prompt(chinese)
