"""The authorization server's store on DynamoDB (memmy_kb.adapters.dynamodb.mcp_auth, on moto's table as
the template provisions it): each one-time step happens once under a race, an expired item is refused
though TTL has not deleted it (moto's TTL never does), a replayed refresh token ends its family, and
registrations are capped per address and in all, per hour."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypeVar

import pytest

from memmy_kb.adapters.dynamodb.keys import mcp_client_key, mcp_registration_key
from memmy_kb.adapters.dynamodb.mcp_auth import DynamoAuthorizationStore
from memmy_kb.domain.ports.mcp_auth import (
    AuthorizationCode,
    ClientRecord,
    PendingAuthorization,
    RefreshRecord,
    RegistrationRefused,
)

NOW = 1_800_000_000  # an hour's start + 0: 1_800_000_000 % 3600 == 0
T = TypeVar("T")


@pytest.fixture
def store(service: Any) -> DynamoAuthorizationStore:
    return DynamoAuthorizationStore(service.stores.table, per_source=3, in_all=5)


def client(n: int = 1, kind: str = "registered") -> ClientRecord:
    return ClientRecord(
        f"mcp-{n}", kind, ("http://127.0.0.1:5000/cb", "https://a.example/cb"), NOW + 0.5, "Agent"
    )


def pending(request_id: str = "r1") -> PendingAuthorization:
    return PendingAuthorization(request_id, "mcp-1", {"redirect_uri": "http://127.0.0.1:5000/cb", "state": "s"},
                                "browser-digest", "verifier", "nonce", NOW, NOW + 600)  # fmt: skip


def code(digest: str = "c" * 64) -> AuthorizationCode:
    return AuthorizationCode(digest, "mcp-1", "http://127.0.0.1:5000/cb", "kb.search", "alice", NOW,
                             "challenge", "https://api.example/mcp", NOW + 300)  # fmt: skip


def refresh(digest: str = "r" * 64, family: str = "fam-1") -> RefreshRecord:
    return RefreshRecord(digest, family, "mcp-1", "Agent", "alice", "kb.search", "https://api.example/mcp", NOW,
                         NOW + 30 * 86400)  # fmt: skip


def race(step: Callable[[], T], times: int = 2) -> list[T]:
    """``step`` run ``times`` at once (released together), its answers."""
    gate, answers = threading.Barrier(times), []

    def run() -> None:
        gate.wait()
        answers.append(step())

    threads = [threading.Thread(target=run) for _ in range(times)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    return answers


def test_a_registered_client_reads_back_and_a_metadata_document_is_cached_ten_minutes(
    store: DynamoAuthorizationStore, service: Any
) -> None:
    store.put_client(client(1), source="192.0.2.1", now=NOW)
    store.put_client(client(2, "metadata_document"), source="192.0.2.1", now=NOW)

    assert store.get_client("mcp-1") == client(1)
    assert store.get_client("mcp-2") == client(2, "metadata_document")
    assert store.get_client("mcp-3") is None
    items = {n: service.stores.table.get(mcp_client_key(f"mcp-{n}"))["expires_at"] for n in (1, 2)}
    assert items == {1: NOW + 365 * 86400, 2: NOW + 600}


def test_registrations_are_capped_per_address_then_in_all_with_the_hours_rest(
    store: DynamoAuthorizationStore,
) -> None:
    for n in range(3):
        store.put_client(client(n), source="192.0.2.1", now=NOW + 100)
    with pytest.raises(RegistrationRefused, match=r"At most 3 clients .* from this address") as refused:
        store.put_client(client(9), source="192.0.2.1", now=NOW + 100)
    assert refused.value.retry_after == 3500
    assert store.get_client("mcp-9") is None  # nothing written

    store.put_client(client(3), source="192.0.2.2", now=NOW + 100)
    store.put_client(client(4), source="192.0.2.3", now=NOW + 100)
    with pytest.raises(RegistrationRefused, match="in all"):
        store.put_client(client(5), source="192.0.2.4", now=NOW + 100)

    store.put_client(client(5), source="192.0.2.1", now=NOW + 3600)  # the next hour


def test_metadata_documents_do_not_count_as_registrations(
    store: DynamoAuthorizationStore, service: Any
) -> None:
    for n in range(6):
        store.put_client(client(n, "metadata_document"), source="192.0.2.1", now=NOW)

    assert service.stores.table.get(mcp_registration_key("*", NOW)) is None


def test_a_sign_in_is_signed_once_and_its_consent_taken_once(store: DynamoAuthorizationStore) -> None:
    store.put_pending(pending())
    assert store.get_pending("r1", NOW) == pending()
    assert store.take_pending("r1", "consent-digest", NOW) is None  # not signed in yet

    assert store.sign_in_pending("r1", "alice", "consent-digest", NOW + 5) is True
    assert store.sign_in_pending("r1", "mallory", "other", NOW + 6) is False
    assert store.take_pending("r1", "wrong-digest", NOW + 7) is None

    taken = race(lambda: store.take_pending("r1", "consent-digest", NOW + 8))

    assert sorted(taken, key=lambda p: p is None) == [
        replace(pending(), user_id="alice", consent="consent-digest", signed_in_at=NOW + 5), None]  # fmt: skip
    assert store.get_pending("r1", NOW + 9) is None


def test_an_expired_sign_in_is_refused_though_still_stored(store: DynamoAuthorizationStore) -> None:
    store.put_pending(pending())

    assert store.get_pending("r1", NOW + 600) is None
    assert store.sign_in_pending("r1", "alice", "d", NOW + 600) is False
    assert store.get_pending("r1", NOW + 599) is not None


def test_a_code_raced_twice_is_taken_once(store: DynamoAuthorizationStore) -> None:
    store.put_code(code())

    taken = race(lambda: store.take_code("c" * 64, NOW + 1), times=4)

    assert [t for t in taken if t is not None] == [code()]
    assert store.take_code("c" * 64, NOW + 2) is None


def test_an_expired_code_is_refused_and_gone(store: DynamoAuthorizationStore) -> None:
    store.put_code(code())

    assert store.take_code("c" * 64, NOW + 300) is None
    assert store.take_code("c" * 64, NOW) is None


def test_a_refresh_token_is_spent_once_and_its_replay_revokes_the_family(
    store: DynamoAuthorizationStore,
) -> None:
    store.put_refresh(refresh())
    store.put_refresh(refresh("n" * 64))  # the family's next token, issued on the first spend

    assert store.spend_refresh("r" * 64, NOW + 1) == replace(refresh(), spent=True)
    assert store.spend_refresh("r" * 64, NOW + 2) is None  # the replay
    assert store.spend_refresh("n" * 64, NOW + 3) is None  # its family is revoked
    found = store.find_refresh("n" * 64, NOW + 3)
    assert found is not None
    assert found.spent is False


def test_a_refresh_token_raced_twice_is_spent_once_and_ends_the_family(
    store: DynamoAuthorizationStore,
) -> None:
    store.put_refresh(refresh())
    store.put_refresh(refresh("n" * 64))

    spent = race(lambda: store.spend_refresh("r" * 64, NOW + 1))

    assert [s for s in spent if s is not None] == [replace(refresh(), spent=True)]
    assert store.spend_refresh("n" * 64, NOW + 2) is None


def test_unknown_expired_and_revoked_refresh_tokens_are_refused(store: DynamoAuthorizationStore) -> None:
    store.put_refresh(refresh())
    store.put_refresh(refresh("o" * 64, family="fam-2"))
    store.revoke_family("fam-2", NOW)

    assert store.spend_refresh("x" * 64, NOW) is None
    assert store.spend_refresh("r" * 64, NOW + 30 * 86400) is None
    assert store.find_refresh("r" * 64, NOW + 30 * 86400) is None
    assert store.spend_refresh("o" * 64, NOW) is None
    assert store.spend_refresh("r" * 64, NOW) is not None  # another family is untouched
