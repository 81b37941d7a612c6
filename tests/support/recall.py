"""Recall as the tests ask for it: one call with the question's fields and the configuration's as keyword
arguments, split into the ``RecallQuestion`` and the ``RecallConfig`` the domain takes."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from memmy_kb.domain.recall import RecallResult, recall
from memmy_kb.domain.recall_config import RecallConfig, RecallQuestion

_QUESTION = {f.name for f in fields(RecallQuestion)}
_CONFIG = {f.name for f in fields(RecallConfig)}


def recall_with(grants: Any, memos: Any, **asked: Any) -> RecallResult:
    """``recall`` with ``user_id``, ``query``, ``limit``... and ``attribution``, ``max_searches``... as
    keywords; ``clock`` and ``governor`` passed on as they are."""
    question = RecallQuestion(**{k: v for k, v in asked.items() if k in _QUESTION})
    config = RecallConfig(**{k: v for k, v in asked.items() if k in _CONFIG})
    rest = {k: v for k, v in asked.items() if k not in _QUESTION | _CONFIG}
    return recall(grants, memos, question, config, **rest)
