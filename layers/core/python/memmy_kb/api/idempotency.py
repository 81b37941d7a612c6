"""``Idempotency-Key`` support for POSTs that create things.

Records live in the main table (``PK = IDEMPOTENCY#<operation>``, ``SK = <hash>``) and expire through the
table's TTL attribute. The key is scoped to the caller, so two users can never see each other's results,
and a key reused with a different body is refused rather than answered with the first result.

Uploads use Powertools idempotency (``run_idempotently``: its own put before and update after). Creating
a KB claims and completes its record inside the create's own two transactions instead
(``request_record`` here, ``memmy_kb.domain.knowledge_bases.manage``), so the key costs no round trip of its own.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import time
from collections.abc import Callable
from typing import Any

from memmy_kb.composition import get_idempotency_persistence
from memmy_kb.errors import InvalidInput, idempotency_key_reused, request_in_progress
from memmy_kb.records import RequestRecord
from memmy_kb.settings import get_settings

_KEY = re.compile(r"^[\x21-\x7e]{1,128}$")


def _check_key(key: str) -> None:
    if not _KEY.match(key):
        raise InvalidInput(
            "Idempotency-Key must be 1 to 128 visible ASCII characters.", code="invalid_idempotency_key"
        )


# Without a Lambda context: how long a claimed key stays in progress before another request may take over.
_DEFAULT_IN_PROGRESS_SECONDS = 60


def request_record(
    operation: str,
    *,
    key: str | None,
    user_id: str,
    payload: dict[str, Any],
    lambda_context: Any = None,
    ttl_seconds: int | None = None,
) -> RequestRecord | None:
    """The in-progress record a request with ``Idempotency-Key: key`` claims (None without a key): scoped
    to the caller, with a hash of the body, held for the invocation's remaining time and remembered for
    ``ttl_seconds`` (the idempotency TTL by default)."""
    if key is None:
        return None
    _check_key(key)
    now = int(time.time())
    remaining = (
        lambda_context.get_remaining_time_in_millis() / 1000
        if lambda_context is not None and hasattr(lambda_context, "get_remaining_time_in_millis")
        else _DEFAULT_IN_PROGRESS_SECONDS
    )
    return RequestRecord(
        operation=operation,
        key_hash=_digest([user_id, key]),
        payload_hash=_digest(payload),
        attempt="",
        in_progress_until=now + math.ceil(remaining),
        expires_at=now + (ttl_seconds or get_settings().idempotency_ttl_seconds),
    )


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def run_idempotently(
    operation: str,
    *,
    key: str | None,
    user_id: str,
    payload: dict[str, Any],
    compute: Callable[[], dict[str, Any]],
    lambda_context: Any = None,
    ttl_seconds: int | None = None,
) -> dict[str, Any]:
    """Run ``compute`` once per (caller, key); repeats within the TTL get the first result back.

    ``ttl_seconds`` shortens the memory for results that go stale (a presigned POST outlives its use).
    """
    if key is None:
        return compute()
    _check_key(key)
    from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig, idempotent_function
    from aws_lambda_powertools.utilities.idempotency.exceptions import (
        IdempotencyAlreadyInProgressError,
        IdempotencyValidationError,
    )

    config = IdempotencyConfig(
        event_key_jmespath="[user_id, key]",
        payload_validation_jmespath="payload",
        raise_on_no_idempotency_key=True,
        expires_after_seconds=ttl_seconds or get_settings().idempotency_ttl_seconds,
    )
    if lambda_context is not None:
        config.register_lambda_context(lambda_context)

    @idempotent_function(  # type: ignore[untyped-decorator]
        data_keyword_argument="request",
        persistence_store=get_idempotency_persistence(operation),
        config=config,
        key_prefix=operation,
    )
    def _run(request: dict[str, Any]) -> dict[str, Any]:
        return compute()

    try:
        result: dict[str, Any] = _run(request={"user_id": user_id, "key": key, "payload": payload})
        return result
    except IdempotencyValidationError as err:
        raise idempotency_key_reused() from err
    except IdempotencyAlreadyInProgressError as err:
        raise request_in_progress() from err
