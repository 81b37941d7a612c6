"""The service's rules for names, applied by a pass before it sends anything: a local path as the KB
would name it, the paths it would name alike (twins), and the names and depths it would refuse
(docs/sync.md, "What one pass does")."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from typing import Final

from memmy_kb_client.sync.remote import normal_name


def kb_path(path: str) -> str | None:
    """A local path as the KB names it (the service stores each name trimmed and in Unicode NFC); None when
    a part is blank."""
    parts = [normal_name(part) for part in path.split("/")]
    return None if any(not part for part in parts) else "/".join(parts)


def twin_names(paths: Iterable[str]) -> dict[str, str]:
    """The local paths the KB would name alike (``" lead.md"`` and ``"lead.md"``, ``café.md`` in NFD and in
    NFC), each mapped to the one that is synced instead: the first of its twins whose path is already in
    the KB's form, else the first by code point, so every desktop picks the same one."""
    by_kb_path: dict[str, list[str]] = {}
    for path in paths:
        by_kb_path.setdefault(kb_path(path) or path, []).append(path)
    twins: dict[str, str] = {}
    for kb_name, alike in by_kb_path.items():
        if len(alike) > 1:
            first, *others = sorted(alike, key=lambda p: (p != kb_name, p))
            twins.update(dict.fromkeys(others, first))
    return twins


# The service's rules for names (its API's ``Name`` for a folder, ``Filename`` for a file): trimmed, at most
# 100 and 255 characters, no control, format (bidi, zero-width), surrogate, private-use or unassigned
# character nor line or paragraph separator, at most 3 combining marks in a row, no backslash in a file's.
# A path it would refuse is skipped with why: sent, its folder would be refused again at every pass.
_NAME_LIMITS: Final = {"folder": 100, "file": 255}
_HIDDEN_CATEGORIES: Final = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
_MAX_COMBINING_MARKS: Final = 3
# The service's ``MAX_FOLDER_DEPTH`` (the client is installed without the service's code).
MAX_FOLDER_DEPTH: Final = 20


def name_refused(path: str) -> str | None:
    """Why the service would refuse a name along ``path``, or its folders nest deeper than a KB's
    (None: it takes them all)."""
    parts = [normal_name(part) for part in path.split("/")]
    if len(parts) - 1 > MAX_FOLDER_DEPTH:
        return (
            f"in {len(parts) - 1} levels of folders; a knowledge base's folders nest at most"
            f" {MAX_FOLDER_DEPTH} deep"
        )
    for depth, part in enumerate(parts):
        what = "file" if depth == len(parts) - 1 else "folder"
        if not part:
            return f"a {what} name is blank"
        if len(part) > _NAME_LIMITS[what]:
            return f"a {what} name is over {_NAME_LIMITS[what]} characters, the service's limit"
        if _hidden(part):
            return (
                f"a {what} name holds a control, invisible or unassigned character, which the service refuses"
            )
        if what == "file" and "\\" in part:
            return "a file name holds a backslash, which the service refuses"
    return None


def _hidden(name: str) -> bool:
    marks = 0
    for ch in name:
        category = unicodedata.category(ch)
        marks = marks + 1 if category in ("Mn", "Me") else 0
        if category in _HIDDEN_CATEGORIES or marks > _MAX_COMBINING_MARKS:
            return True
    return False
