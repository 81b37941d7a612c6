"""The caller's directory profile, from verified token claims only."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import suppress
from datetime import datetime

from memmy_kb.domain.directory import VerifiedClaims
from memmy_kb.domain.knowledge_bases.activity import new_activity
from memmy_kb.domain.ports.knowledge_bases import KnowledgeBaseStore
from memmy_kb.domain.ports.profiles import ProfileStore
from memmy_kb.domain.sharing.limits import count_block_attempt
from memmy_kb.domain.sharing.shares import SharePolicy
from memmy_kb.domain.storage import ConditionFailed, ItemMissing
from memmy_kb.errors import Conflict, InvalidInput, NotFound
from memmy_kb.records import GrantRecord, ProfileRecord, utc_now


def register_profile(
    profiles: ProfileStore, claims: VerifiedClaims, *, clock: Callable[[], datetime] = utc_now
) -> ProfileRecord:
    """Record name, verified email and verified phone so that others can share a KB by them.

    The profile keeps every identifier the token verified, and the account becomes a claimant of each. An
    email or phone another account also claims is contested: sharing by it names nobody (409
    ``identifier_ambiguous``) until one of the two registers without it.
    """
    previous = profiles.get_profile(claims.user_id)
    email, phone = claims.identifiers()
    profile = ProfileRecord(
        user_id=claims.user_id,
        display_name=claims.name or (previous.display_name if previous else None) or claims.user_id,
        email=email,
        phone=phone,
        updated_at=clock(),
        # The user's own settings are not claims: a re-registration keeps them.
        recall_new_shares=previous.recall_new_shares if previous else True,
        blocked=previous.blocked if previous else frozenset(),
        blocked_names=previous.blocked_names if previous else {},
        blocked_teams=previous.blocked_teams if previous else frozenset(),
    )
    try:
        return profiles.put_profile_with_lookups(profile, previous)
    except ConditionFailed:
        raise Conflict("The profile changed at the same time; try again.", code="profile_conflict") from None


MAX_BLOCKED = 500


def _profile_required() -> NotFound:
    return NotFound("Register your profile first (PUT /me).", code="profile_not_found")


def get_me(profiles: ProfileStore, user_id: str) -> ProfileRecord:
    """The caller's profile with their settings; 404 ``profile_not_found`` before ``PUT /me``."""
    profile = profiles.get_profile(user_id)
    if profile is None:
        raise _profile_required()
    return profile


def update_settings(
    profiles: ProfileStore, user_id: str, *, recall_new_shares: bool, clock: Callable[[], datetime] = utc_now
) -> ProfileRecord:
    """Whether KBs shared with the caller from now on arrive with recall on; existing grants keep theirs."""
    try:
        return profiles.update_profile_settings(user_id, recall_new_shares=recall_new_shares, now=clock())
    except ItemMissing:
        raise _profile_required() from None


def block(
    kbs: KnowledgeBaseStore,
    profiles: ProfileStore,
    user_id: str,
    blocked_id: str,
    *,
    policy: SharePolicy,
    clock: Callable[[], datetime] = utc_now,
) -> ProfileRecord:
    """Block ``blocked_id``: their shares from now on answer as for an account that does not exist, and
    the caller leaves every KB of theirs. Blocking an id with no account is accepted (no oracle).

    Every block counts in the caller's own window of ``policy.limits`` (429 past it), so blocking and
    unblocking ids is no enumeration tool. The name kept with the block is the one the caller already
    sees for the owner of a KB shared with them (``captured_name``), else none: the block list never
    shows a name read from the directory for the id typed.

    The block is written first: from then on the share transaction's condition refuses a new grant, so
    the grants removed here cannot be replaced by a share racing the block. The owner's log shows a
    leave, never a block.
    """
    if blocked_id == user_id:
        raise InvalidInput("You cannot block yourself.", code="cannot_block_self")
    now = clock()
    count_block_attempt(policy.counters, user_id, policy.limits, now)
    name = captured_name(kbs, kbs.query_grants(user_id), blocked_id)
    try:
        profile = profiles.add_blocked(user_id, blocked_id, name=name, max_blocked=MAX_BLOCKED, now=now)
    except ItemMissing:
        raise _profile_required() from None
    except ConditionFailed:
        raise Conflict(f"You can block at most {MAX_BLOCKED} accounts.", code="block_limit_reached") from None
    for grant in kbs.query_grants(user_id):
        if grant.role == "reader" and grant.owner_id == blocked_id:
            activity = new_activity("left", grant.kb_id, user_id, user_id, now, policy.retention_days)
            with suppress(ItemMissing):  # already gone (revoked or left meanwhile)
                kbs.delete_reader_grant(grant.kb_id, user_id, activity=activity)
    return profile


def captured_name(kbs: KnowledgeBaseStore, grants: list[GrantRecord], owner_id: str) -> str | None:
    """The name the caller's KB list shows for ``owner_id`` as the owner of a KB shared with the caller
    (``memmy_kb.domain.knowledge_bases.manage``: the owner's profile, else the KB's ``owner_name``); None when no
    KB of theirs is shared with the caller (then nothing is read)."""
    shared = [g for g in grants if g.role == "reader" and g.owner_id == owner_id]
    if not shared:
        return None
    records, owners = kbs.batch_get_kbs_and_profiles((g.kb_id for g in shared), (owner_id,))
    if owner_id in owners:
        return owners[owner_id].display_name
    return next((r.owner_name for r in records.values() if r.owner_id == owner_id and r.owner_name), None)


def unblock(
    profiles: ProfileStore, user_id: str, blocked_id: str, *, clock: Callable[[], datetime] = utc_now
) -> None:
    """Lift a block (KBs left when blocking are not given back; the owner may share again)."""
    try:
        profiles.remove_blocked(user_id, blocked_id, now=clock())
    except ItemMissing:
        raise _profile_required() from None


def list_blocked(profiles: ProfileStore, user_id: str) -> list[tuple[str, str | None]]:
    """The accounts the caller blocks, by user id, each with the name captured when it was blocked (None
    when the caller knew none): never looked up now, so the list says nothing about who has an account."""
    profile = get_me(profiles, user_id)
    return [(uid, profile.blocked_names.get(uid)) for uid in sorted(profile.blocked)]
