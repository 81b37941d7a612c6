"""The recall scope: the KBs a user may read AND has turned on, from one consistent Query."""

from __future__ import annotations

from dataclasses import dataclass

from memmy_kb.repository import Repository


@dataclass(frozen=True)
class ScopeEntry:
    kb_id: str
    memos_kb_id: str


def compute_recall_scope(repo: Repository, user_id: str) -> frozenset[ScopeEntry]:
    """Owned or shared KBs with the user's recall on; its cost follows the user's grants, not the table."""
    return frozenset(ScopeEntry(g.kb_id, g.memos_kb_id) for g in repo.list_grants(user_id) if g.recall)
