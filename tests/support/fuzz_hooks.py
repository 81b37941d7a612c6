"""Schemathesis hooks for the fuzz of the local stack (loaded through ``SCHEMATHESIS_HOOKS``).

Media types are case-insensitive, so a JSON body is sent under each spelling of its type in turn
(``JSON_SPELLINGS``), not only the lower-case one schemathesis writes: every operation that takes a body
must answer them all alike, never with a 5xx. ``tests.support.fuzzing.media_types_sent`` reads back
which spellings went out.

The seeded KBs the other operations need (``KEEP_ENV``: their ids, comma-separated) are never deleted:
the configuration binds the KB delete to disposable KBs, but schemathesis's coverage phase may still
draw the shared ``kb_id`` dictionary, and a deleted main KB leaves every later operation a 404.
"""

from __future__ import annotations

import itertools
import os
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
KEEP_ENV: Final = "MEMMY_FUZZ_KEEP_KB_IDS"
_KEPT: Final = frozenset(filter(None, os.environ.get(KEEP_ENV, "").split(",")))
# An id shaped like a KB's that names none: the delete is still sent, and answered 404.
NO_SUCH_KB: Final = "kb_000000000000000000000000"


@schemathesis.hook
def before_call(context: schemathesis.HookContext, case: schemathesis.Case[Any], kwargs: dict[str, Any]) -> None:
    if (
        case.method.upper() == "DELETE"
        and case.path == "/knowledge-bases/{kb_id}"
        and (case.path_parameters or {}).get("kb_id") in _KEPT
    ):
        case.path_parameters = {**(case.path_parameters or {}), "kb_id": NO_SUCH_KB}
    if case.media_type == "application/json" and not isinstance(case.body, NotSet):
        case.headers["Content-Type"] = next(_spellings)
