"""Sharing a knowledge base read-only: resolve an identifier, grant, list, revoke, leave. No MemOS call.

A KB holds at most ``MAX_READERS`` readers. The cap keeps deleting a KB one DynamoDB transaction (META,
every grant and the cleanup record: at most 100 items).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import NoReturn

from memmy_kb.domain.access import owner_grant, require_member_removal, require_owner
from memmy_kb.domain.directory import normalise_email, normalise_phone
from memmy_kb.domain.knowledge_bases.activity import new_activity
from memmy_kb.domain.ports.activity import RateCounters
from memmy_kb.domain.ports.knowledge_bases import KnowledgeBaseStore
from memmy_kb.domain.ports.profiles import IdentifierKind, ProfileStore
from memmy_kb.domain.sharing.limits import (
    ShareLimits,
    attempt_counter,
    attempt_slot,
    count_share_attempt,
    members_cap,
    members_refused,
)
from memmy_kb.domain.storage import AlreadyExists, ConditionFailed, ItemMissing
from memmy_kb.errors import Conflict, DomainError, InvalidInput, NotFound, kb_not_found
from memmy_kb.records import ActivityKind, GrantRecord, ShareReads, utc_now

MAX_READERS = 50
_PHONE_LIKE = re.compile(r"^\+?[\d\s\-().]{5,}$")


@dataclass(frozen=True)
class MemberView:
    """A member as the owner sees them: the grant and the member's display name."""

    grant: GrantRecord
    display_name: str


@dataclass(frozen=True)
class Identifier:
    """What an identifier the owner typed may name: an email's or phone's lookup, and a user id."""

    lookup: tuple[IdentifierKind, str] | None
    user_id: str | None


def parse_identifier(identifier: str) -> Identifier:
    """An email (lower-cased), a phone (E.164, +86 when no country code is given) or a user id."""
    value = identifier.strip()
    if "@" in value:
        email = normalise_email(value)
        return Identifier(("email", email) if email else None, None)
    if _PHONE_LIKE.match(value):
        phone = normalise_phone(value)
        # Some login providers use numeric ids, so a phone-like value that matched no phone may be an id.
        return Identifier(("phone", phone) if phone else None, value)
    return Identifier(None, value)


def resolve_identifier(reads: ShareReads) -> str | None:
    """The account an identifier names, among accounts that registered a profile: its email's or phone's
    one claimant, else the user id with a profile. An email or phone two accounts hold a verified claim
    on names nobody: 409 ``identifier_ambiguous``, asking for the user id."""
    if len(reads.claimants) > 1:
        raise Conflict(
            "More than one Memmy account has verified this phone or email; share by their user id instead.",
            code="identifier_ambiguous",
        )
    if reads.claimants:
        return next(iter(reads.claimants))
    return reads.profile.user_id if reads.profile is not None else None


@dataclass(frozen=True)
class SharePolicy:
    """What guards a share beyond access: the abuse limits and how long its activity entry is kept."""

    counters: RateCounters
    limits: ShareLimits
    retention_days: int


class _Attempt:
    """One share attempt (an identifier lookup, found or not): counted by the share's transaction when
    it lands, and by one conditional UpdateItem of its own when the share is refused after the lookup."""

    def __init__(self, policy: SharePolicy, owner_id: str, now: datetime, counts: tuple[int, int]) -> None:
        self._policy, self._owner_id, self._now = policy, owner_id, now
        self.slot = attempt_slot(owner_id, policy.limits, now, counts)
        self._counted = False
        if self.slot is None:
            self.count()  # past the limit as read: 429 (the refused attempt counts too)

    def count(self) -> None:
        """Count it now, outside the transaction: TooManyRequests past the limit."""
        if not self._counted:
            self._counted, self.slot = True, None
            count_share_attempt(self._policy.counters, self._owner_id, self._policy.limits, self._now)

    def refuse(self, error: DomainError) -> NoReturn:
        self.count()
        raise error from None


def share_knowledge_base(
    kbs: KnowledgeBaseStore,
    profiles: ProfileStore,
    owner_id: str,
    kb_id: str,
    identifier: str,
    *,
    policy: SharePolicy,
    clock: Callable[[], datetime] = utc_now,
) -> MemberView:
    """Grant read access to the account behind ``identifier``, with recall as the reader chose for new
    shares (on unless they turned it off). A reader who blocked the owner is answered exactly as an
    account that does not exist; a contested email or phone is 409 ``identifier_ambiguous``.

    Round trips (docs/architecture.md, "Share and revoke"): one batched read (the owner's grant, META, the
    lookup or the user id's profile, the attempt counter), the reader's profile when an email or phone
    named them, and one transaction that also counts the attempt. A share refused after the lookup
    counts its attempt with one conditional UpdateItem instead.
    """
    now = clock()
    wanted = parse_identifier(identifier)
    counter = attempt_counter(owner_id, policy.limits, now)
    reads = kbs.read_share(owner_id, kb_id, identifier=wanted.lookup, user_id=wanted.user_id, counter=counter)
    # Without a grant, the caller may still read it through a team: 403 then, as for any reader.
    owner = owner_grant(reads.owner_grant) if reads.owner_grant else require_owner(kbs, owner_id, kb_id)
    # Refuse a full KB before looking at the identifier, so the answer says nothing about who has an
    # account and costs no attempt (the transaction enforces the cap again against concurrent shares).
    if reads.kb is None:
        raise kb_not_found()
    if reads.kb.member_count >= MAX_READERS:
        raise _limit_reached()
    attempt = _Attempt(policy, owner_id, now, reads.attempts)
    try:
        reader_id = resolve_identifier(reads)
    except Conflict as ambiguous:
        attempt.refuse(ambiguous)
    if reader_id is None:
        attempt.refuse(_no_account())
    if reader_id == owner_id:
        attempt.refuse(
            InvalidInput("You cannot share a knowledge base with yourself.", code="cannot_share_with_self")
        )
    profile = reads.profile if reads.profile and reads.profile.user_id == reader_id else profiles.get_profile(reader_id)
    if profile is not None and owner_id in profile.blocked:
        attempt.refuse(_no_account())
    grant = GrantRecord(
        user_id=reader_id,
        kb_id=kb_id,
        role="reader",
        recall=profile.recall_new_shares if profile is not None else True,
        memos_kb_id=owner.memos_kb_id,
        memos_backend=owner.memos_backend,
        owner_id=owner_id,
        granted_at=now,
    )
    daily = members_cap(owner_id, policy.limits, now)
    activity = new_activity("shared", kb_id, owner_id, reader_id, now, policy.retention_days)
    try:
        try:
            kbs.put_reader_grant(
                grant, max_readers=MAX_READERS, daily=daily, activity=activity, attempts=attempt.slot
            )
        except ConditionFailed as err:
            if err.item != "attempts":
                raise
            attempt.count()  # concurrent attempts filled the window since the read: 429, or counted now
            kbs.put_reader_grant(grant, max_readers=MAX_READERS, daily=daily, activity=activity)
    except AlreadyExists:
        attempt.refuse(Conflict("This account already has access.", code="already_member"))
    except ItemMissing:
        attempt.refuse(kb_not_found())
    except ConditionFailed as err:
        if err.item == "blocked":
            attempt.refuse(_no_account())
        if err.item == "daily":
            attempt.refuse(members_refused(policy.limits, now))
        attempt.refuse(_limit_reached())
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
    retention_days: int,
    clock: Callable[[], datetime] = utc_now,
) -> None:
    """Revoke (the owner removes a reader) or leave (a reader removes themself), logged with the removal
    (kept ``retention_days``)."""
    require_member_removal(kbs, caller_id, kb_id, member_id)
    kind: ActivityKind = "left" if member_id == caller_id else "revoked"
    activity = new_activity(kind, kb_id, caller_id, member_id, clock(), retention_days)
    try:
        kbs.delete_reader_grant(kb_id, member_id, activity=activity)
    except ItemMissing:
        if member_id == caller_id:
            raise kb_not_found() from None
        raise NotFound("This account is not a member of the knowledge base.", code="member_not_found") from None
