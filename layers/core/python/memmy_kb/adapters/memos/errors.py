"""The MemOS client's errors: one family per kind of failure, chosen by the envelope code, never by text.

The domain translates them (``memmy_kb.errors``); ``request_sent`` tells "MemOS certainly did nothing"
from "the outcome is unknown", which decides whether a create or an add may be repeated.
"""

from __future__ import annotations

from typing import Final

_MESSAGE_LIMIT: Final = 300


class MemosError(Exception):
    """A MemOS call failed. ``code`` is the envelope code (None when there was none).

    ``request_sent`` is False only when the request certainly never reached MemOS (connection refused or
    not established in time); for every other failure MemOS may have acted on it.
    """

    def __init__(
        self,
        message: str,
        *,
        endpoint: str,
        code: int | None = None,
        http_status: int | None = None,
        request_sent: bool = True,
        retry_after: float | None = None,
    ) -> None:
        self.message = message[:_MESSAGE_LIMIT]
        self.endpoint = endpoint
        self.code = code
        self.http_status = http_status
        self.request_sent = request_sent
        self.retry_after = retry_after
        super().__init__(f"MemOS {endpoint} failed (code={code}, http_status={http_status}): {self.message}")


class MemosNotFound(MemosError):
    """The knowledge base or file does not exist (or is not linked to our project)."""


class MemosQuotaExceeded(MemosError):
    """The account's call or knowledge-base quota is used up."""


class MemosRateLimited(MemosError):
    """MemOS (or a service behind it) asked us to slow down."""


class MemosUnavailable(MemosError):
    """MemOS failed, timed out, could not be reached, or answered something unreadable."""


class MemosRejectedInput(MemosError):
    """MemOS refused the request's content (bad parameter, file type, size, count...)."""


class MemosAuthError(MemosError):
    """The API key is missing, invalid or expired."""


_CODE_FAMILIES: Final[dict[int, type[MemosError]]] = {
    **dict.fromkeys((40001, 50120, 50123), MemosNotFound),
    **dict.fromkeys((40300, 40304), MemosQuotaExceeded),
    40309: MemosRateLimited,
    **dict.fromkeys((50000, 50002, 50004, 50005), MemosUnavailable),
    **dict.fromkeys(
        (40000, 40002, 40003, 40007, 40008, 40009, 40012, 50103, 50104, 50105, 50107), MemosRejectedInput
    ),
    **dict.fromkeys((40100, 40130, 40103, 40132), MemosAuthError),
}


def family_for_http_status(status: int) -> type[MemosError]:
    if status in (401, 403):
        return MemosAuthError
    if status == 429:
        return MemosRateLimited
    if status in (400, 413, 422):
        return MemosRejectedInput
    if status == 408 or status >= 500:
        return MemosUnavailable
    # 404 and the like without a MemOS code mean a wrong URL, not a missing KB: never "done".
    return MemosError


def family_for_code(code: int) -> type[MemosError]:
    if code in _CODE_FAMILIES:
        return _CODE_FAMILIES[code]
    if 40000 <= code <= 49999:
        return MemosRejectedInput
    if 50000 <= code <= 59999:
        return MemosUnavailable
    if 100 <= code <= 599:  # a code that mirrors an HTTP status
        return family_for_http_status(code)
    return MemosError
