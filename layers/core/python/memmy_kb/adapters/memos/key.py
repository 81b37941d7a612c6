"""Where the MemOS API key comes from: Secrets Manager (cached by Powertools Parameters) or a fixed value.

Both providers fit ``MemosClient``'s ``api_key_provider``: called with ``force_refresh=True`` after MemOS
rejected the key, so a rotated secret is picked up at once. The key never appears in logs, reprs or errors;
an unusable secret raises the domain's ``MemosApiKeyError``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from memmy_kb.domain.engine import MemosApiKeyError

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.parameters import SecretsProvider

__all__ = ["SecretApiKeyProvider", "StaticApiKeyProvider"]

_JSON_KEY_FIELD: Final = "api_key"


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
        with self._lock:
            raw = self._secrets().get(self._secret_id, max_age=self._max_age, force_fetch=force_refresh)
        if not isinstance(raw, str | bytes):  # no transform is asked for, so Parameters gives text or bytes
            raise MemosApiKeyError(f"secret {self._secret_id} holds no text")
        return _extract_api_key(raw, self._secret_id)

    def _secrets(self) -> SecretsProvider:
        if self._provider is None:
            # Imported here: Parameters pulls in boto3, which the recall path should pay for only when needed.
            from aws_lambda_powertools.utilities.parameters import SecretsProvider

            client = self._client_factory() if self._client_factory is not None else None
            self._provider = SecretsProvider(boto3_client=client)
        return self._provider


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


def _extract_api_key(raw: str | bytes, secret_id: str) -> str:
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise MemosApiKeyError(f"secret {secret_id} is not UTF-8 text") from None
    text = raw.strip()
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
