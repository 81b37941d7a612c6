"""People and shares through the ``service`` fixture, for the sharing and trust API tests."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from tests.support.aws import Reply, Service
from tests.support.events import claims_for

ALICE_PHONE = "+8613800138000"
BOB_PHONE = "+8613900139000"


def register(service: Service, user: str, name: str, **claims: Any) -> None:
    """``user`` signed in and their profile stored (``PUT /me``) under ``name`` and the ``claims`` given."""
    assert service.call("PUT", "/me", claims=claims_for(user, name=name, **claims)).status == HTTPStatus.OK


def share(service: Service, kb_id: str, identifier: str, user: str = "alice") -> Reply:
    """``user`` shares ``kb_id`` with whoever ``identifier`` names (``POST .../members``)."""
    return service.call("POST", f"/knowledge-bases/{kb_id}/members", user, body={"identifier": identifier})
