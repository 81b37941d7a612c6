"""Schemathesis hooks for the fuzz of the local stack (loaded through ``SCHEMATHESIS_HOOKS``).

Media types are case-insensitive, so a JSON body is sent under each spelling of its type in turn
(``JSON_SPELLINGS``), not only the lower-case one schemathesis writes: every operation that takes a body
must answer them all alike, never with a 5xx. ``tests.support.fuzzing.media_types_sent`` reads back
which spellings went out.
"""

from __future__ import annotations

import itertools
from typing import Any, Final

import schemathesis
from schemathesis.core import NotSet

JSON_SPELLINGS: Final = (
    "application/json",
    "Application/JSON",
    "APPLICATION/JSON; Charset=UTF-8",
    'application/Json;charset="utf8"',
)
_spellings = itertools.cycle(JSON_SPELLINGS)


@schemathesis.hook
def before_call(context: schemathesis.HookContext, case: schemathesis.Case[Any], kwargs: dict[str, Any]) -> None:
    if case.media_type == "application/json" and not isinstance(case.body, NotSet):
        case.headers["Content-Type"] = next(_spellings)
