"""Every authorization decision of the service, in one place (docs/architecture.md, "Access").

The caller's grant item is the only authority: read with a strongly consistent GetItem, never from an
index. The rules, from the product's permission table:

* anyone without a grant on a KB gets 404, exactly as for a KB that does not exist (no existence oracle);
* a reader may see the KB and its files, turn their own recall on or off, and leave;
* everything else (rename, share, revoke, upload, organise) is the owner's; a reader trying it gets 403;
* an upload is taken into MemOS only while its uploader still owns the KB;
* recall searches exactly the KBs the caller holds a grant on and has turned recall on for.

Turning one's own recall on or off needs no read: the write is conditioned on the caller's own grant
existing, the same rule as ``require_access``. Writes that act on a decision made here re-check it in
their own conditions (the KB still exists and is still the owner's), so a decision cannot go stale
between the read and the write.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from memmy_kb.errors import InvalidInput, kb_not_found, owner_only

if TYPE_CHECKING:
    # Signatures only: every handler's requests come through here, recall's on each agent turn, and
    # none of them needs the record models or the ports to be imported for it.
    from memmy_kb.domain.ports import GrantReader
    from memmy_kb.records import GrantRecord


def require_access(grants: GrantReader, user_id: str, kb_id: str) -> GrantRecord:
    """The caller's grant on a KB (a consistent read); 404 without one, so existence never leaks."""
    grant = grants.get_grant(user_id, kb_id)
    if grant is None:
        raise kb_not_found()
    return grant


def require_owner(grants: GrantReader, user_id: str, kb_id: str) -> GrantRecord:
    """The caller's owner grant; 404 for strangers, 403 for readers."""
    return owner_grant(grants.get_grant(user_id, kb_id))


def owner_grant(grant: GrantRecord | None) -> GrantRecord:
    """``require_owner`` on a grant already read (consistently) with other items."""
    if grant is None:
        raise kb_not_found()
    if grant.role != "owner":
        raise owner_only()
    return grant


def require_member_removal(grants: GrantReader, caller_id: str, kb_id: str, member_id: str) -> GrantRecord:
    """May ``caller_id`` remove ``member_id`` from the KB? The owner revokes readers; a reader leaves.

    The owner cannot leave their own KB (422: delete it instead); a reader removing anyone else is 403.
    """
    grant = require_access(grants, caller_id, kb_id)
    if grant.role == "owner":
        if member_id == caller_id:
            raise InvalidInput(
                "The owner cannot leave their own knowledge base; delete it instead.",
                code="owner_cannot_leave",
            )
    elif member_id != caller_id:
        raise owner_only("Only the knowledge base's owner may remove other members.")
    return grant


@dataclass(frozen=True)
class ScopeEntry:
    kb_id: str
    memos_kb_id: str


def recall_grants(grants: GrantReader, user_id: str) -> list[GrantRecord]:
    """The user's grants with recall on (owned or shared), from one consistent Query of the user's grants:
    its cost follows the user's grants, not the table."""
    return [g for g in grants.query_grants(user_id) if g.recall]


def compute_recall_scope(grants: GrantReader, user_id: str) -> frozenset[ScopeEntry]:
    """Owned or shared KBs with the user's recall on, as (KB id, MemOS id): ``recall_grants``."""
    return scope_of(recall_grants(grants, user_id))


def scope_of(grants: list[GrantRecord]) -> frozenset[ScopeEntry]:
    return frozenset(ScopeEntry(g.kb_id, g.memos_kb_id) for g in grants)
