"""Creating, reading and listing knowledge bases: who owns and who may read what."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from datetime import datetime

from aws_lambda_powertools import Logger

from memmy_kb.errors import Forbidden, UpstreamUnavailable, kb_not_found
from memmy_kb.identity import VerifiedClaims
from memmy_kb.memos import MemosClient, MemosError, MemosQuotaExceeded
from memmy_kb.models import (
    GrantRecord,
    KnowledgeBase,
    KnowledgeBaseList,
    KnowledgeBaseRecord,
    Owner,
    ProfileRecord,
    utc_now,
)
from memmy_kb.repository import Repository

logger = Logger(child=True)


def new_kb_id() -> str:
    return "kb_" + secrets.token_hex(12)


def memos_name_for(kb_id: str) -> str:
    """The name MemOS sees: our id, not the user's title (MemOS needs no user data to index files)."""
    return f"memmy:{kb_id}"


def create_knowledge_base(
    repo: Repository,
    memos: MemosClient,
    *,
    owner: VerifiedClaims,
    name: str,
    clock: Callable[[], datetime] = utc_now,
    new_id: Callable[[], str] = new_kb_id,
) -> KnowledgeBase:
    """Create the MemOS KB, then record META and the owner's grant (recall on) in one transaction.

    MemOS has no way to list a project's KBs, so its id is recorded right away; if our write fails the
    MemOS KB is deleted again rather than left where nothing can find it.
    """
    kb_id = new_id()
    try:
        memos_kb_id = memos.create_knowledge_base(memos_name_for(kb_id))
    except MemosQuotaExceeded as err:
        logger.error("MemOS knowledge-base quota exhausted", extra={"memos_code": err.code})
        raise UpstreamUnavailable(
            "Knowledge bases cannot be created right now.", code="memos_quota_exhausted"
        ) from err
    except MemosError as err:
        logger.error("MemOS create failed", extra={"memos_code": err.code, "error": type(err).__name__})
        raise UpstreamUnavailable("The knowledge engine is unavailable; try again shortly.") from err
    now = clock()
    kb = KnowledgeBaseRecord(
        kb_id=kb_id,
        name=name,
        owner_id=owner.user_id,
        owner_name=owner.name,
        memos_kb_id=memos_kb_id,
        created_at=now,
    )
    grant = GrantRecord(
        user_id=owner.user_id,
        kb_id=kb_id,
        role="owner",
        recall=True,
        memos_kb_id=memos_kb_id,
        owner_id=owner.user_id,
        granted_at=now,
    )
    try:
        repo.create_knowledge_base(kb, grant)
    except Exception:
        _discard_memos_kb(memos, memos_kb_id)
        raise
    return _to_api(kb, grant, owner_name=_owner_name(kb, repo.get_profile(owner.user_id)))


def _discard_memos_kb(memos: MemosClient, memos_kb_id: str) -> None:
    try:
        memos.delete_knowledge_base(memos_kb_id, delete_all=True)
    except MemosError:
        # Nothing references it and MemOS cannot list KBs: this is the one residue to alert on.
        logger.exception("MemOS KB left behind after a failed create", extra={"memos_kb_id": memos_kb_id})


def require_access(repo: Repository, user_id: str, kb_id: str) -> GrantRecord:
    """The caller's grant on a KB (a consistent read); 404 without one, so existence never leaks."""
    grant = repo.get_grant(user_id, kb_id)
    if grant is None:
        raise kb_not_found()
    return grant


def require_owner(repo: Repository, user_id: str, kb_id: str) -> GrantRecord:
    """The caller's owner grant; 404 for strangers, 403 for readers."""
    grant = require_access(repo, user_id, kb_id)
    if grant.role != "owner":
        raise Forbidden("Only the knowledge base's owner may do this.", code="owner_only")
    return grant


def get_knowledge_base(repo: Repository, user_id: str, kb_id: str) -> KnowledgeBase:
    """One KB as the caller sees it; 404 when the caller has no grant (no existence oracle)."""
    grant = require_access(repo, user_id, kb_id)
    kb = repo.get_knowledge_base(kb_id)
    if kb is None:
        raise kb_not_found()
    return _to_api(kb, grant, owner_name=_owner_name(kb, repo.get_profile(kb.owner_id)))


def rename_knowledge_base(repo: Repository, user_id: str, kb_id: str, name: str) -> KnowledgeBase:
    """Rename (owner only). Only our record changes: MemOS knows the KB by id, not by this name."""
    grant = require_owner(repo, user_id, kb_id)
    kb = repo.rename_knowledge_base(kb_id, user_id, name)
    if kb is None:
        raise kb_not_found()
    return _to_api(kb, grant, owner_name=_owner_name(kb, repo.get_profile(kb.owner_id)))


def set_recall(repo: Repository, user_id: str, kb_id: str, enabled: bool) -> KnowledgeBase:
    """Turn the caller's own recall of a KB on or off; owners and readers alike, nobody else's.

    The update is conditioned on the caller's grant existing, so it is also the access check.
    """
    grant = repo.set_recall(user_id, kb_id, enabled)
    kb = repo.get_knowledge_base(kb_id) if grant else None
    if grant is None or kb is None:
        raise kb_not_found()
    return _to_api(kb, grant, owner_name=_owner_name(kb, repo.get_profile(kb.owner_id)))


def list_knowledge_bases(repo: Repository, user_id: str) -> KnowledgeBaseList:
    """The caller's owned and shared KBs, each with the caller's role and recall setting."""
    grants = repo.list_grants(user_id)
    kbs = repo.get_knowledge_bases(g.kb_id for g in grants)
    owners = repo.get_profiles(kb.owner_id for kb in kbs.values())
    items = [
        _to_api(kbs[g.kb_id], g, owner_name=_owner_name(kbs[g.kb_id], owners.get(kbs[g.kb_id].owner_id)))
        for g in grants
        if g.kb_id in kbs
    ]
    items.sort(key=lambda kb: (kb.role != "owner", kb.created_at, kb.id))
    return KnowledgeBaseList(items=items)


def _owner_name(kb: KnowledgeBaseRecord, profile: ProfileRecord | None) -> str | None:
    return profile.display_name if profile else kb.owner_name


def _to_api(kb: KnowledgeBaseRecord, grant: GrantRecord, *, owner_name: str | None) -> KnowledgeBase:
    return KnowledgeBase(
        id=kb.kb_id,
        name=kb.name,
        role=grant.role,
        recall=grant.recall,
        owner=Owner(user_id=kb.owner_id, display_name=owner_name or kb.owner_id),
        created_at=kb.created_at,
    )
