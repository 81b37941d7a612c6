"""The dev identity provider's MCP clients in ``IdentityState``: kept with the refresh tokens in the state
file (0600) across a restart, capped in number (the oldest client no refresh token uses makes room), and
the hourly cap on registrations."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import pytest

from memmy_kb.domain.mcp_auth.clients import METADATA_DOCUMENT, REGISTERED, ClientRecord
from memmy_local.identity import state
from memmy_local.identity.records import Identity
from memmy_local.identity.state import IdentityState, RegistrationRefused
from tests.support.clock import FakeClock


def client(n: int, created_at: float = 0.0) -> ClientRecord:
    return ClientRecord(f"mcp-{n}", REGISTERED, ("http://127.0.0.1:5000/cb",), created_at, f"Agent {n}")


def test_clients_and_their_refresh_tokens_outlive_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "identity.json"
    before = IdentityState(path=path)
    before.register_client(client(1))
    before.add_refresh("rt", client_id="mcp-1", scope="kb.search", identity=Identity("alice", auth_time=7),
                       resource="http://127.0.0.1:8080/mcp")  # fmt: skip

    after = IdentityState(path=path)

    assert after.client("mcp-1") == client(1)
    record = after.claim_refresh("rt")
    assert record is not None
    assert (record.resource, record.identity.auth_time) == ("http://127.0.0.1:8080/mcp", 7)
    assert path.stat().st_mode & 0o777 == 0o600


def test_a_state_file_written_before_mcp_clients_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "identity.json"
    record = {"token_hash": hashlib.sha256(b"old").hexdigest(), "family": "f", "client_id": "memmy-desktop", "scope": "openid",
              "identity": {"user_id": "alice"}, "issued_at": time.time(), "state": "active"}  # fmt: skip
    path.write_text(json.dumps({"version": 1, "refresh_tokens": [record]}))

    loaded = IdentityState(path=path)

    old = loaded.find_refresh("old")
    assert old is not None
    assert old.resource is None  # the desktop's
    assert loaded.client("mcp-1") is None


@pytest.fixture
def three_clients_at_most(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(state, "MAX_CLIENTS", 3)


@pytest.mark.usefixtures("three_clients_at_most")
def test_a_full_registry_forgets_its_oldest_client_that_no_refresh_token_uses() -> None:
    registry = IdentityState()
    for n in range(3):
        registry.register_client(client(n, created_at=n))
    registry.add_refresh("rt", client_id="mcp-0", scope="kb.search", identity=Identity("alice"))

    registry.register_client(client(3, created_at=3))

    assert registry.client("mcp-0") is not None  # signed in: kept
    assert registry.client("mcp-1") is None  # the oldest unused
    assert registry.client("mcp-3") is not None


@pytest.mark.usefixtures("three_clients_at_most")
def test_a_registry_full_of_signed_in_clients_refuses_a_new_one() -> None:
    registry = IdentityState()
    for n in range(3):
        registry.register_client(client(n))
        registry.add_refresh(f"rt{n}", client_id=f"mcp-{n}", scope="kb.search", identity=Identity("alice"))

    with pytest.raises(RegistrationRefused, match="already keeps 3 clients"):
        registry.register_client(client(3))


def test_the_hourly_cap_counts_registrations_not_metadata_documents() -> None:
    clock = FakeClock()
    registry = IdentityState(clock=clock.now)
    for n in range(state.REGISTRATIONS_PER_HOUR):
        registry.register_client(client(n))
    registry.remember_client(
        ClientRecord("https://a.example/c.json", METADATA_DOCUMENT, ("https://a.example/cb",), 0)
    )

    with pytest.raises(RegistrationRefused) as refused:
        registry.register_client(client(1000))
    assert refused.value.retry_after == 3600
    clock.advance(3600)
    registry.register_client(client(1000))
