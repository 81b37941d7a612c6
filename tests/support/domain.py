"""Helpers the domain unit tests share: what a refused action would answer, and a profile registered with
its lookups."""

from __future__ import annotations

from collections.abc import Callable
from http import HTTPStatus

import pytest

from memmy_kb.errors import DomainError
from memmy_kb.records import ProfileRecord
from tests.support.fakes import FakeStores


def refused(action: Callable[[], object]) -> tuple[HTTPStatus, str]:
    """Run ``action``, which must be refused, and return what the API would answer: status and code."""
    with pytest.raises(DomainError) as err:
        action()
    return err.value.status, err.value.code


def register(stores: FakeStores, profile: ProfileRecord) -> None:
    """Store ``profile`` with its phone and email lookups, as a login's ``PUT /me`` does."""
    stores.profiles.put_profile_with_lookups(profile, stores.profiles.get_profile(profile.user_id))
