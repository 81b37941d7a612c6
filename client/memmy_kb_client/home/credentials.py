"""The secrets the local service holds, the cloud login and the control token with where the service
listens: in the OS keychain through ``keyring``, else 0600 files in the private directory; the hooks
never import it (docs/desktop.md, "Credentials")."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import time
from dataclasses import asdict, dataclass, replace
from typing import Any, Final, Protocol

from memmy_kb_client.home import paths

KEYRING_SERVICE: Final = "memmy-kb-desktop"
LOGIN_ENTRY: Final = "cloud-login"
CONTROL_ENTRY: Final = "control"
# What an older version called the control token's entry (the bare token); removed when the service starts.
LEGACY_CONTROL_ENTRY: Final = "control-token"
# The file each entry becomes in the private directory when there is no keychain.
_FILES: Final = {
    LOGIN_ENTRY: paths.LOGIN_FILE,
    CONTROL_ENTRY: paths.CONTROL_FILE,
    LEGACY_CONTROL_ENTRY: paths.CONTROL_TOKEN_FILE,
}
# A token is refreshed when it expires within min(this, half its lifetime).
REFRESH_MARGIN_SECONDS: Final = 60.0


def jwt_claims(token: str) -> dict[str, Any]:
    """A JWT's claims, read without verifying; {} when it is no JWT."""
    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (IndexError, ValueError):
        return {}
    return claims if isinstance(claims, dict) else {}


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class CloudLogin:
    """A cloud login and the cloud it is for (it is never sent to any other): its tokens with what
    refreshing them needs, one entry, so a rotation replaces all of it in one write.

    ``bearer`` says which token the cloud takes: the access token, or the ID token when the cloud's
    login configuration says ``"bearer_token": "id_token"``. A pasted token (``desktop login --token``)
    is an access token with nothing to refresh it.
    """

    cloud: str
    access_token: str
    refresh_token: str = ""
    id_token: str = ""
    bearer: str = "access_token"
    obtained_at: float | None = None
    expires_at_hint: float | None = None  # from the token response's expires_in
    issuer: str = ""
    client_id: str = ""
    token_endpoint: str = ""
    revocation_endpoint: str = ""
    jwks_uri: str = ""

    @property
    def token(self) -> str:
        """The bearer token sent to the cloud."""
        return self.id_token if self.bearer == "id_token" and self.id_token else self.access_token

    def claims(self) -> dict[str, Any]:
        """The bearer token's claims, read without verifying (the cloud verifies)."""
        return jwt_claims(self.token)

    def profile(self) -> dict[str, Any]:
        """Who signed in: the ID token's claims (verified when it was received), else the bearer's."""
        return jwt_claims(self.id_token) if self.id_token else self.claims()

    def expires_at(self) -> float | None:
        return _number(self.claims().get("exp")) or self.expires_at_hint

    def expired(self, now: float | None = None) -> bool:
        expires = self.expires_at()
        return expires is not None and expires <= (time.time() if now is None else now)

    def refreshable(self) -> bool:
        return bool(self.refresh_token and self.token_endpoint)

    def refresh_due(self, now: float) -> bool:
        """Does the bearer expire within min(60 s, half its lifetime)?"""
        expires = self.expires_at()
        if expires is None:
            return False
        issued = self.obtained_at or _number(self.claims().get("iat"))
        lifetime = expires - issued if issued is not None else 2 * REFRESH_MARGIN_SECONDS
        return expires - now <= min(REFRESH_MARGIN_SECONDS, max(lifetime, 0.0) / 2)

    def rotated(self, **changes: Any) -> CloudLogin:
        return replace(self, **changes)

    def to_json(self) -> str:
        values = asdict(self)
        return json.dumps({key: value for key, value in values.items() if value not in ("", None)})

    @classmethod
    def from_json(cls, raw: str) -> CloudLogin | None:
        try:
            value = json.loads(raw)
        except ValueError:
            return None
        if not isinstance(value, dict):
            return None
        if "token" in value and "access_token" not in value:  # an older login: one pasted token
            value = {"cloud": value.get("cloud"), "access_token": value.get("token")}
        cloud, access = value.get("cloud"), value.get("access_token")
        if not (isinstance(cloud, str) and isinstance(access, str) and cloud and access):
            return None
        kept: dict[str, Any] = {}
        for name in cls.__dataclass_fields__:
            item = value.get(name)
            if name in ("obtained_at", "expires_at_hint"):
                kept[name] = _number(item)
            elif isinstance(item, str):
                kept[name] = item
        return cls(**kept)


class SecretStore(Protocol):
    """Where the secrets are kept. ``kind`` is ``keychain`` or ``file``; ``description`` is shown by
    ``desktop status``."""

    @property
    def kind(self) -> str: ...

    @property
    def description(self) -> str: ...

    def get(self, name: str) -> str | None: ...

    def put(self, name: str, value: str) -> None: ...

    def delete(self, name: str) -> None: ...


class _LoginEntry:
    """The cloud login, kept alike by every store: one entry, ``LOGIN_ENTRY``, holding its JSON."""

    def get(self, name: str) -> str | None: ...  # pragma: no cover - each store defines it

    def put(self, name: str, value: str) -> None: ...  # pragma: no cover

    def delete(self, name: str) -> None: ...  # pragma: no cover

    def load(self) -> CloudLogin | None:
        raw = self.get(LOGIN_ENTRY)
        return CloudLogin.from_json(raw) if raw is not None else None

    def save(self, login: CloudLogin) -> None:
        self.put(LOGIN_ENTRY, login.to_json())

    def clear(self) -> None:
        self.delete(LOGIN_ENTRY)


class FileStore(_LoginEntry):
    """0600 files in the private directory (0700), apart from what the hooks read."""

    kind = "file"

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.path = os.path.join(directory, paths.LOGIN_FILE)

    @property
    def description(self) -> str:
        return f"file in {self.directory} (0600, apart from the hooks' directory; no OS keychain)"

    def file(self, name: str) -> str:
        return os.path.join(self.directory, _FILES[name])

    def get(self, name: str) -> str | None:
        try:
            with open(self.file(name), encoding="utf-8") as handle:
                return handle.read(64 * 1024)
        except (OSError, ValueError):
            return None

    def put(self, name: str, value: str) -> None:
        paths.ensure_private_dir(self.directory)
        paths.write_private(self.file(name), value.encode("utf-8"))

    def delete(self, name: str) -> None:
        paths.remove(self.file(name))


class KeyringStore(_LoginEntry):
    """Entries in the OS keychain, named after the state directory (two homes never share one)."""

    kind = "keychain"

    def __init__(self, backend: Any, state_dir: str) -> None:
        self.backend = backend
        self.state_dir = os.path.abspath(state_dir)
        self.username = self.entry(LOGIN_ENTRY)

    def entry(self, name: str) -> str:
        return f"{name}:{self.state_dir}"

    @property
    def description(self) -> str:
        return f"OS keychain ({type(self.backend).__module__}.{type(self.backend).__name__})"

    def get(self, name: str) -> str | None:
        raw = self.backend.get_password(KEYRING_SERVICE, self.entry(name))
        return raw if isinstance(raw, str) else None

    def put(self, name: str, value: str) -> None:
        self.backend.set_password(KEYRING_SERVICE, self.entry(name), value)

    def delete(self, name: str) -> None:
        try:
            self.backend.delete_password(KEYRING_SERVICE, self.entry(name))
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


def open_store(state_dir: str, keyring_backend: Any | None = None) -> FileStore | KeyringStore:
    """The keychain store when a keyring backend is usable (or given), else the files in the private
    directory beside ``state_dir``."""
    backend = keyring_backend if keyring_backend is not None else usable_keyring()
    if backend is None:
        return FileStore(paths.private_dir(state_dir))
    return KeyringStore(backend, state_dir)


@dataclass(frozen=True)
class ServiceRecord:
    """The running service's control token and where it listens, kept together (``CONTROL_ENTRY``): the
    commands learn where the service is from the same place as the token, never from ``service.json``."""

    token: str
    port: int
    pid: int = 0
    url: str = ""

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, raw: str | None) -> ServiceRecord | None:
        try:
            value = json.loads(raw or "")
        except ValueError:
            return None
        if not isinstance(value, dict):
            return None
        token, port, pid, url = value.get("token"), value.get("port"), value.get("pid"), value.get("url")
        if not (isinstance(token, str) and paths.is_token(token)):
            return None
        if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
            return None
        return cls(token, port, pid if isinstance(pid, int) else 0, url if isinstance(url, str) else "")


def put_control_record(
    store: FileStore | KeyringStore, private_dir: str, record: ServiceRecord
) -> tuple[str, str]:
    """Keep the control token and where the service listens: ``("keychain" | "file", note)``. The other
    store loses any record of ours (a service killed earlier leaves one), and an older version's entry
    goes."""
    private = FileStore(private_dir)
    private.delete(LEGACY_CONTROL_ENTRY)
    note = ""
    if isinstance(store, KeyringStore):
        with contextlib.suppress(Exception):  # a keychain that will not say: the entry stays, unread
            store.delete(LEGACY_CONTROL_ENTRY)
        try:
            store.put(CONTROL_ENTRY, record.to_json())
        except Exception as err:  # a keychain that refuses: the private file
            note = f"the OS keychain refused the control token ({type(err).__name__}); using a file"
        else:
            private.delete(CONTROL_ENTRY)
            return "keychain", ""
        with contextlib.suppress(Exception):
            store.delete(CONTROL_ENTRY)
    private.put(CONTROL_ENTRY, record.to_json())
    return "file", note


def forget_control_record(store: FileStore | KeyringStore, private_dir: str, token: str) -> None:
    """On stop: remove the record holding ``token`` (one another service wrote stays)."""
    for where in (store, FileStore(private_dir)):
        with contextlib.suppress(Exception):  # a keychain gone away keeps a token nothing accepts
            kept = ServiceRecord.from_json(where.get(CONTROL_ENTRY))
            if kept is not None and kept.token == token:
                where.delete(CONTROL_ENTRY)


def read_service_record(state_dir: str, keyring_backend: Any | None = None) -> ServiceRecord | None:
    """The running service's record, from the private file, else the keychain.

    The file first: a service that writes the keychain removes the file, so a file that is there is the
    newest record (and no keychain is asked, nor made to prompt, when the service uses the files)."""
    found = ServiceRecord.from_json(FileStore(paths.private_dir(state_dir)).get(CONTROL_ENTRY))
    if found is not None:
        return found
    backend = keyring_backend if keyring_backend is not None else usable_keyring()
    if backend is None:
        return None
    try:
        return ServiceRecord.from_json(KeyringStore(backend, state_dir).get(CONTROL_ENTRY))
    except Exception:  # a keychain that will not answer: no record
        return None
