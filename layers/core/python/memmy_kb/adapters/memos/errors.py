"""Which of the engine's error family (``memmy_kb.domain.engine``) a MemOS failure is: by the envelope
code, else by the HTTP status, never by the message text.
"""

from __future__ import annotations

from typing import Final

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
