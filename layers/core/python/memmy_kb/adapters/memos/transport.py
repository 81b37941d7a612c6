"""How a MemOS call travels: the authenticated JSON ``POST``, its retries and its time budget, under
``memmy_kb.adapters.memos.client.MemosClient`` (whose docstring states the auth and retry policy each
endpoint gets). A reply's envelope and HTTP status become the engine's errors in
``memmy_kb.adapters.memos.errors``; transport failures become ``MemosUnavailable`` here, saying whether
the request was sent.

This module sits on the recall path: keep its imports light (no boto3, no Powertools utilities).
"""

from __future__ import annotations

import random
import ssl
import time
from collections.abc import Callable
from typing import Any, Final

import httpx
from aws_lambda_powertools import Logger

from memmy_kb.adapters.memos.errors import unwrap
from memmy_kb.domain.engine import MemosAuthError, MemosError, MemosRateLimited, MemosUnavailable
from memmy_kb.invocation_deadline import MIN_ATTEMPT_SECONDS, seconds_left

# A child logger shares the handler (and correlation id) of the function's Logger without configuring it.
logger = Logger(child=True)

DEFAULT_TIMEOUT: Final = httpx.Timeout(connect=2.0, read=10.0, write=10.0, pool=2.0)

# Nothing was sent when these happen, so even non-idempotent calls may be repeated.
_NOT_SENT_ERRORS: Final = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


class MemosTransport:
    """One MemOS base URL over an httpx client: ``_call`` posts a body with the key, the auth refresh and
    the retries ``MemosClient`` documents, each attempt within what is left of the invocation."""

    def __init__(
        self,
        base_url: str,
        api_key_provider: Callable[[bool], str],
        *,
        http: httpx.Client | None = None,
        timeout: httpx.Timeout = DEFAULT_TIMEOUT,
        limits: httpx.Limits | None = None,
        max_attempts: int = 3,
        backoff_base: float = 0.2,
        backoff_cap: float = 2.0,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
        time_left: Callable[[], float | None] = seconds_left,
        verify: ssl.SSLContext | bool = True,
    ) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if backoff_base < 0 or backoff_cap < 0:
            raise ValueError("backoff_base and backoff_cap must not be negative")
        self._base_url = base_url.rstrip("/")
        self._api_key_provider = api_key_provider
        self._owns_http = http is None
        # ``limits``: the connection pool (httpx's default when None); the client is shared by threads.
        # ``verify``: a TLS context shared by the clients (its CA bundle loaded once), or httpx's default.
        if http is None:
            http = (
                httpx.Client(timeout=timeout, verify=verify)
                if limits is None
                else httpx.Client(timeout=timeout, limits=limits, verify=verify)
            )
        self._http = http
        self._timeout = timeout
        self._max_attempts = max_attempts
        self._backoff_base = backoff_base
        self._backoff_cap = backoff_cap
        self._sleep = sleep
        # Seconds this invocation may still spend on MemOS (None: unbounded), read before every attempt.
        self._time_left = time_left
        # Jitter only spreads retries. The kernel's generator: no state of its own that a SnapStart snapshot
        # would hand to every environment restored from it (memmy_kb.api.snapstart).
        self._rng = rng if rng is not None else random.SystemRandom()

    def _call(self, endpoint: str, body: dict[str, Any], *, idempotent: bool) -> Any:
        """POST ``body`` to ``endpoint`` with auth refresh and retries; return the envelope's ``data``.

        Once an attempt's outcome is unknown (sent, no reply), so is the call's: the error finally raised
        says so (``did_nothing`` False) whatever the later attempts answered."""
        unknown: list[MemosError] = []
        try:
            return self._attempts(endpoint, body, idempotent, unknown)
        except MemosError as exc:
            exc.after_unknown_attempt = any(earlier is not exc for earlier in unknown)
            raise

    def _attempts(self, endpoint: str, body: dict[str, Any], idempotent: bool, unknown: list[MemosError]) -> Any:
        api_key = self._api_key_provider(False)
        refreshed = False
        attempt = 1
        while True:
            try:
                return self._send(endpoint, body, api_key)
            except MemosAuthError:
                if refreshed:
                    raise
                refreshed = True
                logger.warning("MemOS rejected the API key; fetching it again", extra={"endpoint": endpoint})
                api_key = self._api_key_provider(True)
            except (MemosUnavailable, MemosRateLimited) as exc:
                if not exc.did_nothing:
                    unknown.append(exc)
                if attempt >= self._max_attempts or not (idempotent or not exc.request_sent):
                    raise
                delay = self._backoff_delay(attempt, exc.retry_after)
                left = self._time_left()
                if left is not None and left - delay < MIN_ATTEMPT_SECONDS:
                    logger.warning(
                        "MemOS call failed; no time left in this invocation to retry",
                        extra={"endpoint": endpoint, "attempt": attempt, "seconds_left": round(left, 3)},
                    )
                    raise
                logger.warning(
                    "MemOS call failed; retrying",
                    extra={
                        "endpoint": endpoint,
                        "attempt": attempt,
                        "memos_code": exc.code,
                        "http_status": exc.http_status,
                        "error_type": type(exc).__name__,
                        "retry_in_s": round(delay, 3),
                    },
                )
                self._sleep(delay)
                attempt += 1

    def _backoff_delay(self, attempt: int, retry_after: float | None) -> float:
        ceiling = min(self._backoff_cap, self._backoff_base * 2 ** (attempt - 1))
        delay: float = self._rng.random() * ceiling
        if retry_after is not None:
            delay = max(delay, min(retry_after, self._backoff_cap))
        return delay

    def _attempt_timeout(self, endpoint: str) -> httpx.Timeout:
        """The configured timeout, shortened to what is left of the invocation; refuse when nothing is."""
        left = self._time_left()
        if left is None:
            return self._timeout
        if left < MIN_ATTEMPT_SECONDS:
            logger.warning(
                "MemOS call not attempted: no time left in this invocation",
                extra={"endpoint": endpoint, "seconds_left": round(left, 3)},
            )
            raise MemosUnavailable("no time left in this invocation", endpoint=endpoint, request_sent=False)
        parts = (self._timeout.connect, self._timeout.read, self._timeout.write, self._timeout.pool)
        connect, read, write, pool = (left if part is None else min(part, left) for part in parts)
        return httpx.Timeout(connect=connect, read=read, write=write, pool=pool)

    def _send(self, endpoint: str, body: dict[str, Any], api_key: str) -> Any:
        headers = {"Authorization": f"Token {api_key}", "Accept": "application/json"}
        timeout = self._attempt_timeout(endpoint)
        try:
            response = self._http.post(f"{self._base_url}{endpoint}", json=body, headers=headers, timeout=timeout)
        except _NOT_SENT_ERRORS as exc:
            raise MemosUnavailable(
                f"could not connect ({type(exc).__name__})", endpoint=endpoint, request_sent=False
            ) from exc
        except httpx.HTTPError as exc:
            raise MemosUnavailable(f"transport failure ({type(exc).__name__})", endpoint=endpoint) from exc
        return unwrap(response, endpoint)
