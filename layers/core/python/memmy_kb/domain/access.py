"""Every authorization decision of the service, in one place (docs/architecture.md, "Access").

The caller's grant item is the first authority: read with a strongly consistent GetItem, never from an
index; without one, the caller's team memberships are (docs/teams.md): a team the caller is a member of
whose META lists the KB gives reader rights (``memmy_kb.domain.team_reach``). The rules, from the
product's permission table:

* anyone without a grant on a KB or a team that lists it gets 404, exactly as for a KB that does not exist
  (no existence oracle);
* a reader may see the KB and its files, turn their own recall on or off, and leave;
* everything else (rename, share, revoke, upload, organise) is the owner's; a reader trying it gets 403;
* an upload is taken into MemOS only while its uploader still owns the KB;
* recall searches exactly the KBs the caller holds a grant on and has turned recall on for, and the KBs
  of their teams whose recall the member has on; a request may narrow that to some of them
  (``narrow_recall_grants``), never widen it.

Turning one's own recall on or off is conditioned on the caller's own grant or membership existing.
Writes that act on a decision made here re-check it in their own conditions (the KB still exists and
is still the owner's), so a decision cannot go stale between the read and the write.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from memmy_kb.errors import InvalidInput, kb_not_found, owner_only

if TYPE_CHECKING:
    from collections.abc import Sequence

    # Signatures only: every handler's requests come through here, recall's on each agent turn, and
    # none of them needs the record models or the ports to be imported for it.
    from memmy_kb.domain.ports.knowledge_bases import GrantReader
    from memmy_kb.records import GrantRecord


def require_access(grants: GrantReader, user_id: str, kb_id: str) -> GrantRecord:
    """The caller's grant on a KB (a consistent read), else their reader access through a team (a
    ``TeamGrant``: the memberships' Query and the teams' BatchGetItem, both consistent, read only then);
    404 without either, so existence never leaks."""
    grant = grants.get_grant(user_id, kb_id) or _through_a_team(grants, user_id, kb_id)
    if grant is None:
        raise kb_not_found()
    return grant


def _through_a_team(grants: GrantReader, user_id: str, kb_id: str) -> GrantRecord | None:
    from memmy_kb.domain.team_reach import team_grants

    return team_grants(grants.read_reach(user_id, with_grants=False), user_id).get(kb_id)


def require_owner(grants: GrantReader, user_id: str, kb_id: str) -> GrantRecord:
    """The caller's owner grant; 404 for strangers, 403 for readers (a team's members among them)."""
    # The teams are read only when there is no grant: 403 for a team's reader, else the 404.
    return owner_grant(grants.get_grant(user_id, kb_id) or _through_a_team(grants, user_id, kb_id))


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
    grant = grants.get_grant(caller_id, kb_id)  # a team's reader leaves the team, not the KB
    if grant is None:
        raise kb_not_found()
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
    """The user's grants with recall on (owned or shared) and the KBs of their teams with their recall on,
    one entry a KB: one consistent Query of the user's partition (grants, profile, memberships) and, only
    when they are a member of a team, one consistent BatchGetItem of the teams' META. Its cost follows the
    user, not the table: two reads with teams, whatever their number, one without."""
    from memmy_kb.domain.team_reach import recall_reach

    return recall_reach(grants.read_reach(user_id, with_grants=True), user_id)


def compute_recall_scope(grants: GrantReader, user_id: str) -> frozenset[ScopeEntry]:
    """The KBs in the user's recall scope, as (KB id, MemOS id): ``recall_grants``, read again."""
    return scope_of(recall_grants(grants, user_id))


def scope_of(grants: list[GrantRecord]) -> frozenset[ScopeEntry]:
    return frozenset(ScopeEntry(g.kb_id, g.memos_kb_id) for g in grants)


def narrow_recall_grants(scope_grants: list[GrantRecord], kb_ids: Sequence[str] | None) -> list[GrantRecord]:
    """The recall scope narrowed to ``kb_ids`` (None: the whole scope): scope ∩ ids, never wider.

    An id outside the scope is a 422 ``knowledge_base_not_in_scope``, the same answer whether the KB is
    unknown, not the caller's to read, or has the caller's recall off: no existence oracle.
    """
    if kb_ids is None:
        return scope_grants
    in_scope = {g.kb_id for g in scope_grants}
    outside = [kb_id for kb_id in kb_ids if kb_id not in in_scope]
    if outside:
        raise InvalidInput(
            "Some knowledge bases are not in your recall scope (unknown, not shared with you, or recall off).",
            code="knowledge_base_not_in_scope",
            details={"knowledge_base_ids": outside},
        )
    wanted = set(kb_ids)
    return [g for g in scope_grants if g.kb_id in wanted]


def narrow_scope(scope: frozenset[ScopeEntry], kb_ids: Sequence[str] | None) -> frozenset[ScopeEntry]:
    """A scope (read again after a search) kept to ``kb_ids`` (None: all of it), for the re-check."""
    if kb_ids is None:
        return scope
    wanted = set(kb_ids)
    return frozenset(entry for entry in scope if entry.kb_id in wanted)
