"""How long the current Lambda invocation may still run: its deadline, set as the invocation starts.

The resolver and the ingest, cleanup and reconcile handlers bind it from the Lambda context
(``bounded_by``). Whatever must end within the invocation reads ``seconds_left``: the MemOS client before
every attempt (each attempt's timeout is shortened to fit, no retry starts that could not finish, nothing
is sent once the time is gone), the cleanup and the reconciler before each round of work.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from typing import Any, Final

# Time kept back from the invocation's end for answering (or recording) after the last bounded call, and
# the least an attempt is worth starting with.
DEADLINE_MARGIN_SECONDS: Final = 0.5
MIN_ATTEMPT_SECONDS: Final = 0.25
# When the current invocation must have answered (time.monotonic()); None outside an invocation.
_invocation_deadline: ContextVar[float | None] = ContextVar("invocation_deadline", default=None)


def set_invocation_deadline(seconds_left: float | None) -> Token[float | None]:
    """Bound this invocation's calls by its remaining time (``reset_invocation_deadline`` undoes).

    Called with the Lambda context's remaining time as an invocation starts, so that attempts, their
    timeouts and the backoff between them all end before Lambda would cut the function off: a slow MemOS
    then gives the documented 503, never a Lambda timeout (a bare 500 from API Gateway).
    """
    deadline = None if seconds_left is None else time.monotonic() + seconds_left
    return _invocation_deadline.set(deadline)


def reset_invocation_deadline(token: Token[float | None]) -> None:
    _invocation_deadline.reset(token)


def seconds_left() -> float | None:
    """What this invocation may still spend, in seconds; None outside a bounded invocation."""
    deadline = _invocation_deadline.get()
    return None if deadline is None else deadline - time.monotonic() - DEADLINE_MARGIN_SECONDS


@contextmanager
def bounded_by(lambda_context: Any) -> Iterator[None]:
    """Calls made inside end within the invocation ``lambda_context`` describes (unbounded without one)."""
    remaining = getattr(lambda_context, "get_remaining_time_in_millis", None)
    token = set_invocation_deadline(remaining() / 1000 if callable(remaining) else None)
    try:
        yield
    finally:
        reset_invocation_deadline(token)
