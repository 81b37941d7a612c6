"""Where the local service keeps the cloud login: the OS keychain through keyring when a backend exists
(tested with an in-memory backend), else a 0600 file (the path this headless machine takes)."""

from __future__ import annotations

import base64
import json
import os
import stat
import time
from pathlib import Path

import keyring
import pytest

from memmy_kb_client.home import credentials
from memmy_kb_client.home.credentials import CloudLogin, FileStore, KeyringStore, open_store
from tests.support.keychain import MemoryKeyring


def jwt(**claims: object) -> str:
    def part(value: object) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    return f"{part({'alg': 'RS256'})}.{part(claims)}.signature"


def test_the_file_store_is_0600_and_round_trips(tmp_path: Path):
    store = FileStore(str(tmp_path))
    assert store.load() is None
    store.save(CloudLogin("https://api.example", "tok"))
    path = tmp_path / "cloud-login.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert store.load() == CloudLogin("https://api.example", "tok")
    store.clear()
    assert not path.exists()
    store.clear()  # clearing nothing is fine


def test_a_corrupt_file_is_no_login(tmp_path: Path):
    (tmp_path / "cloud-login.json").write_text("{broken")
    assert FileStore(str(tmp_path)).load() is None


def test_the_keyring_store_keeps_the_login_in_the_keychain_only(tmp_path: Path):
    backend = MemoryKeyring()
    store = open_store(str(tmp_path), backend)
    assert isinstance(store, KeyringStore)
    store.save(CloudLogin("https://api.example", "tok"))
    ((service, username),) = backend.entries
    assert service == credentials.KEYRING_SERVICE
    assert username == f"cloud-login:{tmp_path}"
    assert list(tmp_path.iterdir()) == []
    assert store.load() == CloudLogin("https://api.example", "tok")
    store.clear()
    assert backend.entries == {}
    store.clear()  # nothing to delete: no error


def test_two_state_dirs_get_two_keychain_entries(tmp_path: Path):
    backend = MemoryKeyring()
    open_store(str(tmp_path / "a"), backend).save(CloudLogin("c", "a"))
    open_store(str(tmp_path / "b"), backend).save(CloudLogin("c", "b"))
    assert len(backend.entries) == 2


def test_the_fail_backend_means_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(keyring, "get_keyring", lambda: keyring.backends.fail.Keyring())
    assert credentials.usable_keyring() is None
    assert isinstance(open_store(str(tmp_path)), FileStore)


def test_a_real_backend_is_used_when_keyring_finds_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    backend = MemoryKeyring()
    monkeypatch.setattr(keyring, "get_keyring", lambda: backend)
    assert credentials.usable_keyring() is backend
    assert isinstance(open_store(str(tmp_path)), KeyringStore)


def test_the_login_claims_are_read_without_verifying():
    now = time.time()
    live = CloudLogin("c", jwt(sub="alice", exp=int(now) + 60))
    assert live.claims()["sub"] == "alice"
    assert not live.expired(now)
    assert CloudLogin("c", jwt(sub="alice", exp=int(now) - 1)).expired(now)
    assert CloudLogin("c", "not-a-jwt").claims() == {}
    assert not CloudLogin("c", "not-a-jwt").expired(now)


def test_files_are_written_0600_even_under_a_lax_umask(tmp_path: Path):
    from memmy_kb_client.home import paths

    old = os.umask(0)
    try:
        paths.write_private(str(tmp_path / "secret"), b"x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "secret").stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["secret"]


def test_a_link_planted_at_the_temporary_files_name_is_left_alone(tmp_path: Path):
    """Whoever can write ``desktop/`` (an agent's sandbox allows it) may plant a hard link to another file
    of the user's where a write's temporary file will be: ``hook-token`` and ``service.json`` are written
    there by the service, each hook's run record by the hook. The file linked to is neither truncated,
    rewritten nor narrowed to 0600, and the write still lands."""
    from memmy_kb_client.home import paths

    victim = tmp_path / "the-users-file"
    victim.write_bytes(b"the user's own text")
    victim.chmod(0o644)
    desktop = tmp_path / "desktop"
    desktop.mkdir()
    os.link(victim, desktop / f".hook-token.{os.getpid()}.tmp")  # the name a temporary file had
    paths.write_private(str(desktop / "hook-token"), b"mkh_new")
    assert victim.read_bytes() == b"the user's own text"
    assert stat.S_IMODE(victim.stat().st_mode) == 0o644
    assert (desktop / "hook-token").read_bytes() == b"mkh_new"
    assert stat.S_IMODE((desktop / "hook-token").stat().st_mode) == 0o600
