"""The error every call of the service's API raises for a non-2xx answer (the SDK's, a storage POST's)."""

from __future__ import annotations

from typing import Any


class MemmyApiError(Exception):
    """A non-2xx answer, carrying the service's error code and message, and its ``details`` if any (for
    409 ``name_taken``: the sibling's ``kind``, ``id`` and ``name``)."""

    def __init__(self, status: int, code: str, message: str, details: Any = None) -> None:
        super().__init__(f"{message} ({status} {code})")
        self.status = status
        self.code = code
        self.message = message
        self.details = details
