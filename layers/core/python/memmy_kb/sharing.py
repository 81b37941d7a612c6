"""Sharing a knowledge base read-only: resolve an identifier, grant, list, revoke, leave. No MemOS call.

A KB holds at most ``MAX_READERS`` readers. The cap keeps deleting a KB one DynamoDB transaction (META,
every grant and the cleanup record: at most 100 items).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime

from memmy_kb.directory import normalise_email, normalise_phone
from memmy_kb.errors import Conflict, Forbidden, InvalidInput, NotFound, kb_not_found
from memmy_kb.knowledge_bases import require_access, require_owner
from memmy_kb.models import GrantRecord, Member, MemberList, utc_now
from memmy_kb.repository import AlreadyMember, KbUnavailable, MemberLimitReached, Repository

MAX_READERS = 50
_PHONE_LIKE = re.compile(r"^\+?[\d\s\-().]{5,}$")


def resolve_identifier(repo: Repository, identifier: str) -> str | None:
    """The user id behind a user id, phone or email, among accounts that registered a profile."""
    value = identifier.strip()
    if "@" in value:
        email = normalise_email(value)
        return repo.find_user_by("email", email) if email else None
    if _PHONE_LIKE.match(value):
        phone = normalise_phone(value)
        user_id = repo.find_user_by("phone", phone) if phone else None
        if user_id:
            return user_id
    # Some login providers use numeric ids, so a phone-like value that matched no phone may be an id.
    return value if repo.get_profile(value) else None


def share_knowledge_base(
    repo: Repository,
    owner_id: str,
    kb_id: str,
    identifier: str,
    *,
    clock: Callable[[], datetime] = utc_now,
) -> Member:
    """Grant read access (recall on) to the account behind ``identifier``."""
    owner_grant = require_owner(repo, owner_id, kb_id)
    # Refuse a full KB before looking the identifier up, so the answer says nothing about who has an
    # account (the transaction below enforces the cap again against concurrent shares).
    kb = repo.get_knowledge_base(kb_id)
    if kb is None:
        raise kb_not_found()
    if kb.member_count >= MAX_READERS:
        raise _limit_reached()
    reader_id = resolve_identifier(repo, identifier)
    if reader_id is None:
        raise NotFound("No Memmy account has this user id, phone or email.", code="account_not_found")
    if reader_id == owner_id:
        raise InvalidInput("You cannot share a knowledge base with yourself.", code="cannot_share_with_self")
    grant = GrantRecord(
        user_id=reader_id,
        kb_id=kb_id,
        role="reader",
        recall=True,
        memos_kb_id=owner_grant.memos_kb_id,
        owner_id=owner_id,
        granted_at=clock(),
    )
    try:
        repo.add_reader(grant, max_readers=MAX_READERS)
    except AlreadyMember:
        raise Conflict("This account already has access.", code="already_member") from None
    except KbUnavailable:
        raise kb_not_found() from None
    except MemberLimitReached:
        raise _limit_reached() from None
    profile = repo.get_profile(reader_id)
    return Member(
        user_id=reader_id,
        display_name=profile.display_name if profile else reader_id,
        role="reader",
        shared_at=grant.granted_at,
    )


def _limit_reached() -> Conflict:
    return Conflict(
        f"A knowledge base can be shared with at most {MAX_READERS} people.", code="member_limit_reached"
    )


def list_members(repo: Repository, owner_id: str, kb_id: str) -> MemberList:
    """The owner and the readers of a KB (owner only)."""
    require_owner(repo, owner_id, kb_id)
    grants = repo.list_members(kb_id)
    profiles = repo.get_profiles(g.user_id for g in grants)
    items = [
        Member(
            user_id=g.user_id,
            display_name=profiles[g.user_id].display_name if g.user_id in profiles else g.user_id,
            role=g.role,
            shared_at=g.granted_at,
        )
        for g in grants
    ]
    items.sort(key=lambda m: (m.role != "owner", m.shared_at, m.user_id))
    return MemberList(items=items)


def remove_member(repo: Repository, caller_id: str, kb_id: str, member_id: str) -> None:
    """Revoke (the owner removes a reader) or leave (a reader removes themself)."""
    grant = require_access(repo, caller_id, kb_id)
    if grant.role == "owner":
        if member_id == caller_id:
            raise InvalidInput(
                "The owner cannot leave their own knowledge base; delete it instead.",
                code="owner_cannot_leave",
            )
    elif member_id != caller_id:
        raise Forbidden("Only the knowledge base's owner may remove other members.", code="owner_only")
    if not repo.remove_reader(kb_id, member_id):
        if member_id == caller_id:
            raise kb_not_found()
        raise NotFound("This account is not a member of the knowledge base.", code="member_not_found")
