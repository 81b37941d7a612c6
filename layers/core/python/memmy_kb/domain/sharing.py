"""Sharing a knowledge base read-only: resolve an identifier, grant, list, revoke, leave. No MemOS call.

A KB holds at most ``MAX_READERS`` readers. The cap keeps deleting a KB one DynamoDB transaction (META,
every grant and the cleanup record: at most 100 items).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from memmy_kb.adapters.errors import AlreadyExists, ConditionFailed, ItemMissing
from memmy_kb.domain.access import require_member_removal, require_owner
from memmy_kb.domain.activity import new_activity
from memmy_kb.domain.directory import normalise_email, normalise_phone
from memmy_kb.domain.limits import ShareLimits, count_share_attempt, members_cap, members_refused
from memmy_kb.domain.ports import KnowledgeBaseStore, ProfileStore, RateCounters
from memmy_kb.errors import Conflict, InvalidInput, NotFound, kb_not_found
from memmy_kb.records import ActivityKind, GrantRecord, utc_now

MAX_READERS = 50
_PHONE_LIKE = re.compile(r"^\+?[\d\s\-().]{5,}$")


@dataclass(frozen=True)
class MemberView:
    """A member as the owner sees them: the grant and the member's display name."""

    grant: GrantRecord
    display_name: str


def resolve_identifier(profiles: ProfileStore, identifier: str) -> str | None:
    """The user id behind a user id, phone or email, among accounts that registered a profile."""
    value = identifier.strip()
    if "@" in value:
        email = normalise_email(value)
        return profiles.get_lookup_user("email", email) if email else None
    if _PHONE_LIKE.match(value):
        phone = normalise_phone(value)
        user_id = profiles.get_lookup_user("phone", phone) if phone else None
        if user_id:
            return user_id
    # Some login providers use numeric ids, so a phone-like value that matched no phone may be an id.
    return value if profiles.get_profile(value) else None


@dataclass(frozen=True)
class SharePolicy:
    """What guards a share beyond access: the abuse limits and where the activity log goes.

    Without a policy (the domain's unit tests) a share is neither limited nor logged.
    """

    counters: RateCounters
    limits: ShareLimits
    retention_days: int


def share_knowledge_base(
    kbs: KnowledgeBaseStore,
    profiles: ProfileStore,
    owner_id: str,
    kb_id: str,
    identifier: str,
    *,
    clock: Callable[[], datetime] = utc_now,
    policy: SharePolicy | None = None,
) -> MemberView:
    """Grant read access to the account behind ``identifier``, with recall as the reader chose for new
    shares (on unless they turned it off). A reader who blocked the owner is answered exactly as an
    account that does not exist."""
    owner_grant = require_owner(kbs, owner_id, kb_id)
    # Refuse a full KB before looking the identifier up, so the answer says nothing about who has an
    # account (the transaction below enforces the cap again against concurrent shares).
    kb = kbs.get_kb(kb_id)
    if kb is None:
        raise kb_not_found()
    if kb.member_count >= MAX_READERS:
        raise _limit_reached()
    now = clock()
    if policy is not None:
        count_share_attempt(policy.counters, owner_id, policy.limits, now)
    reader_id = resolve_identifier(profiles, identifier)
    if reader_id is None:
        raise _no_account()
    if reader_id == owner_id:
        raise InvalidInput("You cannot share a knowledge base with yourself.", code="cannot_share_with_self")
    profile = profiles.get_profile(reader_id)
    if profile is not None and owner_id in profile.blocked:
        raise _no_account()
    grant = GrantRecord(
        user_id=reader_id,
        kb_id=kb_id,
        role="reader",
        recall=profile.recall_new_shares if profile is not None else True,
        memos_kb_id=owner_grant.memos_kb_id,
        owner_id=owner_id,
        granted_at=now,
    )
    daily = members_cap(owner_id, policy.limits, now) if policy is not None else None
    activity = (
        new_activity("shared", kb_id, owner_id, reader_id, now, policy.retention_days) if policy is not None else None
    )
    try:
        kbs.put_reader_grant(grant, max_readers=MAX_READERS, daily=daily, activity=activity)
    except AlreadyExists:
        raise Conflict("This account already has access.", code="already_member") from None
    except ItemMissing:
        raise kb_not_found() from None
    except ConditionFailed as err:
        if err.item == "blocked":
            raise _no_account() from None
        if err.item == "daily" and policy is not None:
            raise members_refused(policy.limits, now) from None
        raise _limit_reached() from None
    return MemberView(grant=grant, display_name=profile.display_name if profile else reader_id)


def _no_account() -> NotFound:
    return NotFound("No Memmy account has this user id, phone or email.", code="account_not_found")


def _limit_reached() -> Conflict:
    return Conflict(
        f"A knowledge base can be shared with at most {MAX_READERS} people.", code="member_limit_reached"
    )


def list_members(kbs: KnowledgeBaseStore, profiles: ProfileStore, owner_id: str, kb_id: str) -> list[MemberView]:
    """The owner and the readers of a KB (owner only): the owner first, then by when they were added."""
    require_owner(kbs, owner_id, kb_id)
    grants = kbs.query_kb_members(kb_id)
    names = profiles.batch_get_profiles(g.user_id for g in grants)
    members = [
        MemberView(grant=g, display_name=names[g.user_id].display_name if g.user_id in names else g.user_id)
        for g in grants
    ]
    members.sort(key=lambda m: (m.grant.role != "owner", m.grant.granted_at, m.grant.user_id))
    return members


def remove_member(
    kbs: KnowledgeBaseStore,
    caller_id: str,
    kb_id: str,
    member_id: str,
    *,
    retention_days: int | None = None,
    clock: Callable[[], datetime] = utc_now,
) -> None:
    """Revoke (the owner removes a reader) or leave (a reader removes themself); logged with the removal
    when ``retention_days`` is given."""
    require_member_removal(kbs, caller_id, kb_id, member_id)
    kind: ActivityKind = "left" if member_id == caller_id else "revoked"
    activity = (
        new_activity(kind, kb_id, caller_id, member_id, clock(), retention_days) if retention_days else None
    )
    try:
        kbs.delete_reader_grant(kb_id, member_id, activity=activity)
    except ItemMissing:
        if member_id == caller_id:
            raise kb_not_found() from None
        raise NotFound("This account is not a member of the knowledge base.", code="member_not_found") from None
