"""Which of the engine's error family (``memmy_kb.domain.engine``) a MemOS failure is: by the envelope
code, else by the HTTP status, never by the message text; and a reply's ``data``, or the error it is.
"""

from __future__ import annotations

from typing import Any, Final

import httpx

from memmy_kb.adapters.memos.models import lenient_float, lenient_int
from memmy_kb.domain.engine import (
    MemosAuthError,
    MemosError,
    MemosFileTooLarge,
    MemosNotFound,
    MemosQuotaExceeded,
    MemosRateLimited,
    MemosRejectedInput,
    MemosUnavailable,
    MemosUnsupportedFile,
)

_SUCCESS_CODES: Final = frozenset({0, 200})
_CODE_FAMILIES: Final[dict[int, type[MemosError]]] = {
    **dict.fromkeys((40001, 50120, 50123), MemosNotFound),
    **dict.fromkeys((40300, 40304), MemosQuotaExceeded),
    40309: MemosRateLimited,
    **dict.fromkeys((50000, 50002, 50004, 50005), MemosUnavailable),
    **dict.fromkeys((40000, 40002, 40003, 40008, 40009, 40012, 50103), MemosRejectedInput),
    **dict.fromkeys((40007, 50107), MemosUnsupportedFile),
    **dict.fromkeys((50104, 50105), MemosFileTooLarge),
    **dict.fromkeys((40100, 40130, 40103, 40132), MemosAuthError),
}


def family_for_http_status(status: int) -> type[MemosError]:
    """The family of an HTTP failure that carried no MemOS code."""
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
    """The family of a MemOS envelope code."""
    if code in _CODE_FAMILIES:
        return _CODE_FAMILIES[code]
    if 40000 <= code <= 49999:
        return MemosRejectedInput
    if 50000 <= code <= 59999:
        return MemosUnavailable
    if 100 <= code <= 599:  # a code that mirrors an HTTP status
        return family_for_http_status(code)
    return MemosError


def unwrap(response: httpx.Response, endpoint: str) -> Any:
    """The envelope's ``data``, or the typed error the reply stands for."""
    status = response.status_code
    try:
        payload = response.json()
    except ValueError:  # JSONDecodeError and UnicodeDecodeError
        payload = None
    envelope = payload if isinstance(payload, dict) else {}
    raw_code = envelope.get("code")
    code = None if isinstance(raw_code, bool) else lenient_int(raw_code)
    message = envelope.get("message") or envelope.get("msg") or ""
    message = message if isinstance(message, str) else str(message)
    ok_http = 200 <= status < 300
    if ok_http and code in _SUCCESS_CODES:
        return envelope.get("data")
    if code is not None and code not in _SUCCESS_CODES:
        family = family_for_code(code)
    elif not ok_http:
        family = family_for_http_status(status)
    else:
        family, message = MemosUnavailable, "unreadable reply (no JSON envelope)"
    raise family(
        message or response.reason_phrase or "error",
        endpoint=endpoint,
        code=code if code not in _SUCCESS_CODES else None,
        http_status=status,
        retry_after=_retry_after(response),
    )


def _retry_after(response: httpx.Response) -> float | None:
    value = lenient_float(response.headers.get("retry-after"))
    return value if value is not None and value >= 0 else None
