"""The cyclic garbage collector held off for a Lambda cold start: the handler's import and first invocation.

A cold start builds objects that live as long as the container: modules, classes, botocore's service
models and clients, pydantic's validators. The collector runs a full pass each time a quarter more objects
have survived since the last one, so while they are being built it walks all of them again and again and
frees nothing: about 150 ms of CPU of a cold recall (``bench/import_time.py``'s "cold import + first
recall" row). ``hold()`` (called first thing by a handler module) turns the collector off;
``until_first_invocation`` turns it back on once the first invocation has returned, after moving every
object then alive to the permanent generation (``gc.freeze()``), so later passes never walk them.

Only inside Lambda (``AWS_EXECUTION_ENV`` names a Lambda runtime): a process that loads handlers among
other work (tests, the local stack) keeps its collector as it was. The price: reference cycles that
became garbage before the release are frozen with the rest and never freed, a one-off bounded by what one
cold start discards (a full collection before freezing would free them, at the first request's expense).
"""

from __future__ import annotations

import functools
import gc
import os
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

_held = False


def in_lambda() -> bool:
    return os.environ.get("AWS_EXECUTION_ENV", "").startswith("AWS_Lambda_")


def hold() -> bool:
    """Turn the collector off for the cold start (inside Lambda, when it is on); True when it did."""
    global _held
    if in_lambda() and gc.isenabled():
        gc.disable()
        _held = True
    return _held


def release() -> None:
    """Freeze what the cold start built and turn the collector back on, if ``hold()`` turned it off."""
    global _held
    if _held:
        _held = False
        gc.freeze()
        gc.enable()


def until_first_invocation(handler: F) -> F:
    """``handler``, releasing the collector once its first invocation has returned or raised."""

    @functools.wraps(handler)
    def invoke(*args: Any, **kwargs: Any) -> Any:
        try:
            return handler(*args, **kwargs)
        finally:
            release()

    return invoke  # type: ignore[return-value]
