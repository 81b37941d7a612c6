"""Each test's own keyring (tests/support/keychain.py): what one test keeps in it, or the backend it chose,
never reaches the next, whatever the order, and a test's ``PYTHON_KEYRING_BACKEND`` is honoured."""

from __future__ import annotations

import keyring
import keyring.core
import pytest
from keyring.backends import fail

from tests.support.keychain import MemoryKeyring, isolate_keyring


def test_a_test_starts_with_an_empty_keyring_of_its_own_whatever_the_last_one_chose():
    with pytest.MonkeyPatch.context() as earlier_test:
        isolate_keyring(earlier_test)
        earlier_test.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
        assert isinstance(keyring.get_keyring(), fail.Keyring)
    with pytest.MonkeyPatch.context() as another_test:
        isolate_keyring(another_test)
        keyring.set_password("memmy-kb", "login", "secret")
    with pytest.MonkeyPatch.context() as this_test:
        isolate_keyring(this_test)
        backend = keyring.get_keyring()
        assert isinstance(backend, MemoryKeyring)
        assert keyring.get_password("memmy-kb", "login") is None


def test_the_backend_a_test_names_in_the_environment_is_the_one_it_gets(monkeypatch):
    assert keyring.core._keyring_backend is None  # tests/conftest.py forgot the last test's choice
    keyring.get_keyring()  # as if something earlier in this test had asked
    isolate_keyring(monkeypatch)
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    assert isinstance(keyring.get_keyring(), fail.Keyring)


def test_the_memory_keyring_keeps_and_forgets_entries():
    backend = MemoryKeyring()
    backend.set_password("service", "user", "secret")
    assert backend.get_password("service", "user") == "secret"
    backend.delete_password("service", "user")
    assert backend.get_password("service", "user") is None
    with pytest.raises(keyring.errors.PasswordDeleteError):
        backend.delete_password("service", "user")
