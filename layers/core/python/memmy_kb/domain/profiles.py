"""The caller's directory profile, from verified token claims only."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from memmy_kb.adapters.errors import ConditionFailed
from memmy_kb.domain.directory import VerifiedClaims, normalise_email, normalise_phone
from memmy_kb.domain.ports import ProfileStore
from memmy_kb.errors import Conflict
from memmy_kb.records import ProfileRecord, utc_now


def register_profile(
    profiles: ProfileStore, claims: VerifiedClaims, *, clock: Callable[[], datetime] = utc_now
) -> ProfileRecord:
    """Record name, verified email and verified phone so that others can share a KB by them.

    Returns the profile as stored: an identifier another account verified more recently is left out.
    """
    previous = profiles.get_profile(claims.user_id)
    profile = ProfileRecord(
        user_id=claims.user_id,
        display_name=claims.name or (previous.display_name if previous else None) or claims.user_id,
        email=normalise_email(claims.email) if claims.email else None,
        phone=normalise_phone(claims.phone) if claims.phone else None,
        updated_at=clock(),
    )
    try:
        return profiles.put_profile_with_lookups(profile, previous, verified_at=claims.issued_at)
    except ConditionFailed:
        raise Conflict("The profile changed at the same time; try again.", code="profile_conflict") from None
