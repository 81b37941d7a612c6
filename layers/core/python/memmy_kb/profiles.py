"""The caller's directory profile, from verified token claims only."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from memmy_kb.directory import normalise_email, normalise_phone
from memmy_kb.identity import VerifiedClaims
from memmy_kb.models import Me, ProfileRecord, utc_now
from memmy_kb.repository import Repository


def register_profile(
    repo: Repository, claims: VerifiedClaims, *, clock: Callable[[], datetime] = utc_now
) -> Me:
    """Record name, verified email and verified phone so that others can share a KB by them."""
    previous = repo.get_profile(claims.user_id)
    profile = ProfileRecord(
        user_id=claims.user_id,
        display_name=claims.name or (previous.display_name if previous else None) or claims.user_id,
        email=normalise_email(claims.email) if claims.email else None,
        phone=normalise_phone(claims.phone) if claims.phone else None,
        updated_at=clock(),
    )
    profile = repo.save_profile(profile, previous, verified_at=claims.issued_at)
    return Me(
        user_id=profile.user_id, display_name=profile.display_name, email=profile.email, phone=profile.phone
    )
