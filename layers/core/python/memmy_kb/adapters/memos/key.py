"""Where the MemOS API keys come from: Secrets Manager (cached by Powertools Parameters) or a fixed value.

The secret holds either one key (bare, or ``{"api_key": ...}``: one backend, ``default``, at the
configured base URL) or the list of MemOS backends (``[{...}]`` or ``{"backends": [{...}]}``, each with
``id``, ``base_url``, ``api_key``, ``max_kbs`` and optionally ``max_qps`` and ``draining``), which
``SecretBackendsProvider`` reads. The key providers fit ``MemosClient``'s ``api_key_provider``: called with ``force_refresh=True`` after MemOS
rejected the key, so a rotated secret is picked up at once. The key never appears in logs, reprs or errors;
an unusable secret raises the domain's ``MemosApiKeyError``.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

from memmy_kb.domain.engine import DEFAULT_BACKEND, MemosApiKeyError

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.parameters import SecretsProvider

__all__ = ["MemosBackendConfig", "SecretApiKeyProvider", "SecretBackendsProvider", "StaticApiKeyProvider"]

_JSON_KEY_FIELD: Final = "api_key"
# The most KBs one backend may be given: its counter item lists their ids (``kb_`` and 24 hex digits), and
# 10,000 of them stay well under DynamoDB's 400 KB item (MemOS plans cap a project at 100).
MAX_BACKEND_KBS: Final = 10_000
# Hosts a backend may reach over plain http (the local emulator); any other needs https.
_LOOPBACK_HOSTS: Final = frozenset({"127.0.0.1", "localhost", "::1"})


class SecretApiKeyProvider:
    """The MemOS API key from a Secrets Manager secret holding the bare key or ``{"api_key": "..."}``.

    Powertools Parameters caches the secret for ``max_age`` seconds across calls in the same execution
    environment; ``force_refresh`` bypasses the cache (and refills it). ``client_factory`` gives the Secrets
    Manager client: one from the function's default boto3 session costs about 10 ms on the first call, where
    Parameters' own session would load botocore's data files again (about 100 ms of the cold start).
    """

    def __init__(
        self, secret_id: str, *, max_age: int = 300, client_factory: Callable[[], Any] | None = None
    ) -> None:
        self._secret_id = secret_id
        self._max_age = max_age
        self._client_factory = client_factory
        self._provider: SecretsProvider | None = None
        # Recall's searches run on threads: one of them fetches the secret, the others wait for its cache.
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"SecretApiKeyProvider(secret_id={self._secret_id!r}, max_age={self._max_age})"

    def __call__(self, force_refresh: bool = False) -> str:
        """Return the API key, fetching the secret again when ``force_refresh`` is set."""
        return _extract_api_key(self._raw(force_refresh), self._secret_id)

    def _raw(self, force_refresh: bool) -> str | bytes:
        with self._lock:
            raw = self._secrets().get(self._secret_id, max_age=self._max_age, force_fetch=force_refresh)
        if not isinstance(raw, str | bytes):  # no transform is asked for, so Parameters gives text or bytes
            raise MemosApiKeyError(f"secret {self._secret_id} holds no text")
        return raw

    def _secrets(self) -> SecretsProvider:
        if self._provider is None:
            # Imported here: Parameters pulls in boto3, which the recall path should pay for only when needed.
            from aws_lambda_powertools.utilities.parameters import SecretsProvider

            client = self._client_factory() if self._client_factory is not None else None
            self._provider = SecretsProvider(boto3_client=client)
        return self._provider


@dataclass(frozen=True)
class MemosBackendConfig:
    """One MemOS backend as the secret lists it (the key never in a repr)."""

    id: str
    base_url: str
    api_key: str = field(repr=False)
    max_kbs: int
    max_qps: float | None = None
    draining: bool = False


class SecretBackendsProvider(SecretApiKeyProvider):
    """The MemOS backends of the secret: its list, or its one key as the backend ``default`` at
    ``default_base_url`` holding at most ``default_max_kbs`` KBs. Cached as the key is (``max_age``):
    a backend added to the secret is seen within that time, with no deploy."""

    def __init__(
        self,
        secret_id: str,
        *,
        default_base_url: str,
        default_max_kbs: int,
        max_age: int = 300,
        client_factory: Callable[[], Any] | None = None,
    ) -> None:
        super().__init__(secret_id, max_age=max_age, client_factory=client_factory)
        self._default_base_url = default_base_url
        self._default_max_kbs = default_max_kbs
        # The last secret text and its backends: every MemOS call asks for its key, and Parameters hands
        # back the same cached text until it fetches again, so it is parsed once per fetch.
        self._parsed: tuple[str | bytes, list[MemosBackendConfig]] | None = None

    def __repr__(self) -> str:
        return f"SecretBackendsProvider(secret_id={self._secret_id!r}, max_age={self._max_age})"

    def backends(self, force_refresh: bool = False) -> list[MemosBackendConfig]:
        """The backends, fetching the secret again when ``force_refresh`` is set."""
        raw = self._raw(force_refresh)
        parsed = self._parsed
        if parsed is not None and parsed[0] == raw:
            return parsed[1]
        backends = parse_backends(
            raw, self._secret_id, default_base_url=self._default_base_url, default_max_kbs=self._default_max_kbs
        )
        self._parsed = (raw, backends)
        return backends


def parse_backends(
    raw: str | bytes, secret_id: str, *, default_base_url: str, default_max_kbs: int
) -> list[MemosBackendConfig]:
    """The backends a secret's text describes; ``MemosApiKeyError`` (naming no value) when it is unusable."""
    text = _text(raw, secret_id)
    document: Any = None
    if text.startswith(("[", "{")):
        try:
            document = json.loads(text)
        except ValueError:
            raise MemosApiKeyError(f"secret {secret_id} is neither a bare key nor valid JSON") from None
    entries = document.get("backends") if isinstance(document, dict) else document
    if not isinstance(entries, list):
        key = _extract_api_key(raw, secret_id)
        return [MemosBackendConfig(DEFAULT_BACKEND, default_base_url, key, default_max_kbs)]
    backends = [_backend(entry, i, secret_id, default_base_url) for i, entry in enumerate(entries)]
    if not backends:
        raise MemosApiKeyError(f"secret {secret_id} lists no MemOS backend")
    if len({b.id for b in backends}) != len(backends):
        raise MemosApiKeyError(f"secret {secret_id} lists a MemOS backend id twice")
    # One project under two ids would be given twice its plan's cap: a key names one project (whatever
    # spelling of its URL the entries use).
    if len({b.api_key for b in backends}) != len(backends):
        raise MemosApiKeyError(f'secret {secret_id} lists one MemOS project (the same "api_key") twice')
    return backends


def _backend(entry: Any, index: int, secret_id: str, default_base_url: str) -> MemosBackendConfig:
    where = f"secret {secret_id}, backend #{index}"
    if not isinstance(entry, dict):
        raise MemosApiKeyError(f"{where} is not an object")
    backend_id, key, base_url = entry.get("id"), entry.get("api_key"), entry.get("base_url", default_base_url)
    max_kbs, max_qps, draining = entry.get("max_kbs"), entry.get("max_qps"), entry.get("draining", False)
    if not isinstance(backend_id, str) or not backend_id.strip() or "#" in backend_id:
        raise MemosApiKeyError(f'{where} needs a string "id" (without "#")')
    if not isinstance(key, str) or not key.strip():
        raise MemosApiKeyError(f'{where} has no string "api_key"')
    if not isinstance(base_url, str) or not _usable_url(base_url):
        # The URL is not quoted: it may carry a credential.
        raise MemosApiKeyError(
            f'{where} needs a "base_url" of https (http only to a loopback host), with no credentials, query or fragment'
        )
    if not isinstance(max_kbs, int) or isinstance(max_kbs, bool) or not 0 <= max_kbs <= MAX_BACKEND_KBS:
        raise MemosApiKeyError(f'{where} needs "max_kbs", a whole number from 0 to {MAX_BACKEND_KBS}')
    if max_qps is not None and (
        not isinstance(max_qps, int | float) or isinstance(max_qps, bool) or not 0 < max_qps < math.inf
    ):
        raise MemosApiKeyError(f'{where} has a "max_qps" that is not a positive number')
    if not isinstance(draining, bool):
        raise MemosApiKeyError(f'{where} has a "draining" that is not true or false')
    return MemosBackendConfig(
        backend_id.strip(), base_url, key.strip(), max_kbs, None if max_qps is None else float(max_qps), draining
    )


def _usable_url(url: str) -> bool:
    """An absolute http(s) URL with a host and no user info, query or fragment; http only to loopback."""
    try:
        parts = urlsplit(url)
        host, _ = parts.hostname, parts.port  # ``port`` raises ValueError when out of range
    except ValueError:
        return False
    if not host or parts.username is not None or parts.query or parts.fragment or "?" in url or "#" in url:
        return False
    return parts.scheme == "https" or (parts.scheme == "http" and host in _LOOPBACK_HOSTS)


class StaticApiKeyProvider:
    """A fixed API key, for local runs and tests."""

    def __init__(self, api_key: str) -> None:
        if not api_key.strip():
            raise MemosApiKeyError("the MemOS API key is empty")
        self._api_key = api_key.strip()

    def __repr__(self) -> str:
        return "StaticApiKeyProvider(api_key=***)"

    def __call__(self, force_refresh: bool = False) -> str:
        """Return the key; there is nothing to refresh."""
        return self._api_key


def _text(raw: str | bytes, secret_id: str) -> str:
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise MemosApiKeyError(f"secret {secret_id} is not UTF-8 text") from None
    return raw.strip()


def _extract_api_key(raw: str | bytes, secret_id: str) -> str:
    text = _text(raw, secret_id)
    if text.startswith("["):
        # A list of backends (``SecretBackendsProvider``): its text, every key in it, is no one key.
        raise MemosApiKeyError(f"secret {secret_id} lists MemOS backends, not one key")
    if text.startswith("{"):
        try:
            document = json.loads(text)
        except ValueError:
            # ``from None``: the decode error would quote the secret.
            raise MemosApiKeyError(f"secret {secret_id} is neither a bare key nor valid JSON") from None
        value = document.get(_JSON_KEY_FIELD) if isinstance(document, dict) else None
        if not isinstance(value, str):
            raise MemosApiKeyError(f'secret {secret_id} has no string "{_JSON_KEY_FIELD}" field')
        text = value.strip()
    if not text:
        raise MemosApiKeyError(f"secret {secret_id} holds an empty API key")
    return text
