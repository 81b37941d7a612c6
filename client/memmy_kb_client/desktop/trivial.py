"""Which prompts have nothing to search (a slash command, an acknowledgement, by a closed list, never by
length): the local service answers them without calling the cloud (docs/desktop.md, "The hooks")."""

from __future__ import annotations

import re
import unicodedata
from typing import Final

__all__ = ["is_trivial_prompt"]

# An agent's command: a slash, a name, then anything ("/model opus"). "/etc/hosts is empty" is a path,
# not a command: its first word holds a second slash. So is "/tmp is full": a top-level directory of
# Linux or macOS is never taken for a command. And a question mark anywhere makes it a question
# ("/api returns 500, why?", "/ask what is the refund policy?"): searching it costs one call, skipping
# it would leave a real question without excerpts.
_SLASH_COMMAND: Final = re.compile(r"/([A-Za-z][\w:.-]*)(?:\s|$)")
_PATH_ROOTS: Final = frozenset(
    {
        "bin", "boot", "dev", "etc", "home", "lib", "lib32", "lib64", "libx32", "media", "mnt", "opt",
        "proc", "root", "run", "sbin", "snap", "srv", "sys", "tmp", "usr", "var",
        "applications", "cores", "library", "private", "system", "users", "volumes",
    }
)  # fmt: skip

# Acknowledgements and go-aheads in English and Chinese, compared after case folding and with
# punctuation, symbols and spaces taken out ("OK!" -> "ok", "好的。" -> "好的", "go on" -> "goon").
_TRIVIAL_WORDS: Final = frozenset(
    {
        # English
        "ok", "okay", "k", "kk", "yes", "y", "yep", "yeah", "yup", "no", "n", "nope", "sure", "fine",
        "thanks", "thankyou", "thx", "ty", "cool", "great", "nice", "good", "done", "next", "continue",
        "goon", "goahead", "proceed", "retry", "tryagain", "again", "doit", "lgtm", "soundsgood", "agreed", "right", "correct", "stop", "cancel", "undo", "hi", "hello", "hey",
        "start", "begin", "confirm", "confirmed", "noproblem", "alright", "exactly", "dont",
        # Chinese
        "好", "好的", "好吧", "行", "可以", "嗯", "嗯嗯", "对", "对的", "是", "是的", "没错", "不", "不用",
        "不是", "不要", "谢谢", "多谢", "感谢", "继续", "接着", "下一步", "重试", "再试", "再试一次", "确认",
        "确定", "同意", "没问题", "完成", "停", "停止", "取消", "你好", "开始",
        "谢谢你", "谢谢您", "您好", "嗨", "很好", "不错", "太好了", "正确", "当然", "再来", "再来一次", "撤销",
        "执行",
    }
)  # fmt: skip

# Past this many characters a prompt is a sentence, whatever it starts with.
_MAX_ACK_CHARS: Final = 24


def is_trivial_prompt(prompt: str) -> bool:
    """True when ``prompt`` is a slash command, an acknowledgement, or has no letter or digit at all."""
    text = unicodedata.normalize("NFKC", prompt).strip()
    command = _SLASH_COMMAND.match(text)
    if command and command.group(1).casefold() not in _PATH_ROOTS and "?" not in text:
        return True  # NFKC has made a full-width "？" a "?"
    # Letters and digits only: punctuation, symbols (emoji), spaces and marks go.
    core = "".join(ch for ch in text.casefold() if unicodedata.category(ch)[0] in "LN")
    if not core:
        return True  # at any length: a row of emoji or dots holds nothing to search
    return len(text) <= _MAX_ACK_CHARS and core in _TRIVIAL_WORDS
