"""A keychain for tests: an in-memory ``keyring`` backend, and each test's own keyring.

``keyring`` picks its backend once per process, on first use, and keeps it: from ``PYTHON_KEYRING_BACKEND``,
else the highest priority of every backend class defined so far, ``MemoryKeyring`` included once a test
module defines or imports it. Left alone, the first test to touch the keyring would choose for every test
after it in that process, so a test's login could land in another test's keychain, or the developer's
own. ``isolate_keyring`` (an autouse fixture of tests/conftest.py) forgets the choice before each test and
makes it again on the test's first use: ``PYTHON_KEYRING_BACKEND`` if the test set it (the fail backend:
no keychain, the files in the private directory, as on a headless machine), else a new, empty
``MemoryKeyring`` of the test's own; never the machine's keychain.
"""

from __future__ import annotations

import keyring.core
import pytest
from keyring.backend import KeyringBackend
from keyring.errors import PasswordDeleteError


class MemoryKeyring(KeyringBackend):
    """A keyring backend that keeps entries in a dict, as a real keychain would keep them."""

    priority = 1

    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.entries: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.entries.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.entries[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        if self.entries.pop((service, username), None) is None:
            raise PasswordDeleteError("no such entry")


def _choose_for_this_test(limit: object = None) -> None:
    keyring.core.set_keyring(keyring.core.load_env() or MemoryKeyring())


def isolate_keyring(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forget ``keyring``'s backend for one test and choose it again on first use (the module's docstring);
    ``monkeypatch`` puts back whatever was there after the test."""
    monkeypatch.setattr(keyring.core, "_keyring_backend", None)
    monkeypatch.setattr(keyring.core, "init_backend", _choose_for_this_test)
