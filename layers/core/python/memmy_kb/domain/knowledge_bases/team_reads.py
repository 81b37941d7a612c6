"""The KB list and the recall toggle for KBs read through teams (docs/teams.md): the caller's grants and
the KBs their teams share with them, each as the caller reads it (``memmy_kb.domain.team_reach``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memmy_kb.domain.storage import ItemMissing
from memmy_kb.domain.team_reach import readable, recall_reach, team_grants
from memmy_kb.errors import kb_not_found

if TYPE_CHECKING:
    from memmy_kb.domain.ports.knowledge_bases import KnowledgeBaseStore
    from memmy_kb.records import GrantRecord


def readable_grants(kbs: KnowledgeBaseStore, user_id: str) -> list[GrantRecord]:
    """Every KB the caller reads (grants first, then those read only through teams), ``recall`` on when
    the KB is in their recall scope: one consistent Query of their partition and, with teams, one
    BatchGetItem of the teams' META."""
    reach = kbs.read_reach(user_id, with_grants=True)
    recalled = {g.kb_id for g in recall_reach(reach, user_id)}
    return [g.model_copy(update={"recall": g.kb_id in recalled}) for g in readable(reach, user_id)]


def set_team_recall(
    kbs: KnowledgeBaseStore, user_id: str, kb_id: str, enabled: bool, *, direct: GrantRecord | None
) -> GrantRecord:
    """Set the member's recall choice for ``kb_id`` on each membership through which they read it; the
    grant that now answers for the KB (``direct``, the caller's grant already updated, else the team
    reader's). 404 when the caller reads it neither way."""
    through = team_grants(kbs.read_reach(user_id, with_grants=False), user_id).get(kb_id)
    if through is not None:
        for team_id, _ in through.teams:
            try:
                kbs.update_membership_recall(user_id, team_id, kb_id, enabled)
            except ItemMissing:
                continue  # left or removed meanwhile: that team no longer counts
    if direct is not None:
        return direct
    if through is None:
        raise kb_not_found()
    return through.model_copy(update={"recall": enabled})
