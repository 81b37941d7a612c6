"""The cloud login the local service holds: in the OS keychain through ``keyring``, else a 0600 file.

Only the service reads or writes it; the hooks never import this module. ``open_store`` picks the
keychain when ``keyring`` finds a real backend (macOS Keychain, Windows Credential Locker, the Secret
Service...), and the file ``cloud-login.json`` in the state directory when there is none (``keyring``
not installed, or only its ``fail``/``null`` backends, as on a headless Linux box). A keychain that
refuses a write at login time (locked, no D-Bus session) falls back to the file too; ``status`` says
which store holds the login.
"""

from __future__ import annotations

import base64
import json
import os
import time
from dataclasses import dataclass
from typing import Any, Protocol

from memmy_kb_client.desktop import paths

KEYRING_SERVICE = "memmy-kb-desktop"


@dataclass(frozen=True)
class CloudLogin:
    """A cloud login token and the cloud it is for (it is never sent to any other)."""

    cloud: str
    token: str

    def claims(self) -> dict[str, Any]:
        """The token's claims, read without verifying (the cloud verifies); {} when it is no JWT."""
        try:
            payload = self.token.split(".")[1]
            claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        except (IndexError, ValueError):
            return {}
        return claims if isinstance(claims, dict) else {}

    def expires_at(self) -> float | None:
        exp = self.claims().get("exp")
        return float(exp) if isinstance(exp, int | float) and not isinstance(exp, bool) else None

    def expired(self, now: float | None = None) -> bool:
        expires = self.expires_at()
        return expires is not None and expires <= (time.time() if now is None else now)

    def to_json(self) -> str:
        return json.dumps({"cloud": self.cloud, "token": self.token})

    @classmethod
    def from_json(cls, raw: str) -> CloudLogin | None:
        try:
            value = json.loads(raw)
        except ValueError:
            return None
        if not isinstance(value, dict):
            return None
        cloud, token = value.get("cloud"), value.get("token")
        if isinstance(cloud, str) and isinstance(token, str) and cloud and token:
            return cls(cloud, token)
        return None


class LoginStore(Protocol):
    """Where the cloud login is kept. ``description`` is shown by ``desktop status``."""

    @property
    def description(self) -> str: ...

    def load(self) -> CloudLogin | None: ...

    def save(self, login: CloudLogin) -> None: ...

    def clear(self) -> None: ...


class FileStore:
    """``cloud-login.json`` in the state directory, mode 0600."""

    def __init__(self, state_dir: str) -> None:
        self.path = os.path.join(state_dir, paths.LOGIN_FILE)

    @property
    def description(self) -> str:
        return f"file {self.path} (0600; no OS keychain available)"

    def load(self) -> CloudLogin | None:
        try:
            with open(self.path, encoding="utf-8") as handle:
                return CloudLogin.from_json(handle.read(64 * 1024))
        except OSError:
            return None

    def save(self, login: CloudLogin) -> None:
        paths.write_private(self.path, login.to_json().encode("utf-8"))

    def clear(self) -> None:
        paths.remove(self.path)


class KeyringStore:
    """One entry in the OS keychain, named after the state directory (two homes never share it)."""

    def __init__(self, backend: Any, state_dir: str) -> None:
        self.backend = backend
        self.username = f"cloud-login:{os.path.abspath(state_dir)}"

    @property
    def description(self) -> str:
        return f"OS keychain ({type(self.backend).__module__}.{type(self.backend).__name__})"

    def load(self) -> CloudLogin | None:
        raw = self.backend.get_password(KEYRING_SERVICE, self.username)
        return CloudLogin.from_json(raw) if isinstance(raw, str) else None

    def save(self, login: CloudLogin) -> None:
        self.backend.set_password(KEYRING_SERVICE, self.username, login.to_json())

    def clear(self) -> None:
        try:
            self.backend.delete_password(KEYRING_SERVICE, self.username)
        except Exception as err:  # keyring.errors.PasswordDeleteError: nothing was there
            if type(err).__name__ != "PasswordDeleteError":
                raise


def usable_keyring() -> Any | None:
    """The keyring backend ``keyring`` chose, unless it is none at all (not installed, fail, null)."""
    try:
        import keyring
        from keyring.backends import chainer, fail, null
    except ImportError:
        return None
    try:
        backend = keyring.get_keyring()
    except Exception:
        return None
    if isinstance(backend, fail.Keyring | null.Keyring):
        return None
    if isinstance(backend, chainer.ChainerBackend) and not backend.backends:
        return None
    return backend


def open_store(state_dir: str, keyring_backend: Any | None = None) -> LoginStore:
    """The keychain store when a keyring backend is usable (or given), else the 0600 file."""
    backend = keyring_backend if keyring_backend is not None else usable_keyring()
    if backend is None:
        return FileStore(state_dir)
    return KeyringStore(backend, state_dir)
