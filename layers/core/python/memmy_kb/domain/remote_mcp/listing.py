"""The ``list_knowledge_bases`` tool: the KBs the caller reads, those in their recall scope first."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memmy_kb.domain.directory import masked_contact
from memmy_kb.domain.knowledge_bases.team_reads import readable_grants
from memmy_kb.domain.recall.context_block import sanitise_label

if TYPE_CHECKING:
    from memmy_kb.domain.ports.knowledge_bases import KnowledgeBaseStore
    from memmy_kb.records import GrantRecord, KnowledgeBaseRecord, ProfileRecord


def _entry(kb: KnowledgeBaseRecord, grant: GrantRecord, owner: ProfileRecord | None) -> dict[str, Any]:
    sharer = None
    if grant.role != "owner":
        name = (owner.display_name if owner else None) or kb.owner_name or kb.owner_id
        contact = masked_contact(owner.phone, owner.email) if owner else None
        sharer = {"name": sanitise_label(name), "contact": contact}
    teams = getattr(grant, "teams", ())  # a KB read only through teams (``TeamGrant``)
    team = {"id": teams[0][0], "name": sanitise_label(teams[0][1])} if teams else None
    return {"id": kb.kb_id, "name": sanitise_label(kb.name), "owner": sharer, "team": team}


def list_knowledge_bases(kbs: KnowledgeBaseStore, user_id: str) -> dict[str, Any]:
    """``{"in_recall": [...], "not_in_recall": [...]}``: each KB's id and name, its owner when it is shared
    with the caller (name and masked contact) and the team it is read through when only through one."""
    grants = readable_grants(kbs, user_id)
    records, owners = kbs.batch_get_kbs_and_profiles((g.kb_id for g in grants), (g.owner_id for g in grants))
    listed: dict[str, list[dict[str, Any]]] = {"in_recall": [], "not_in_recall": []}
    for grant in grants:
        kb = records.get(grant.kb_id)
        if kb is None:
            continue
        entry = _entry(kb, grant, owners.get(kb.owner_id))
        listed["in_recall" if grant.recall else "not_in_recall"].append(entry)
    return listed
